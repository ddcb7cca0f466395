// A worker process for the coordination tests: joins the service given on the
// command line, then runs one command per stdin line and answers each with one
// stdout line, so a test drives many real processes and waits on their output.
//
//   coordination_worker HOST PORT RANK WORLD_SIZE TOKEN INCARNATION HEARTBEAT_MS
//
// Commands: insert K V | get K MS | tryget K | barrier NAME MS | report CODE MSG
//           send TO CHANNEL PAYLOAD | failure RANK MS | message MS | leave | exit

#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/coordination/coordination_client.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"

namespace {

constexpr std::chrono::seconds join_timeout{20};

// What the subscriber saw, for the main thread to wait on.
struct inbox {
  std::mutex mtx;
  std::condition_variable cv;
  std::deque<lifeboat::peer_failure> failures;
  std::deque<lifeboat::peer_message> messages;

  template <class T, class Pred>
  std::optional<T> take(std::deque<T>& queue, std::chrono::milliseconds timeout, Pred pred) {
    std::unique_lock<std::mutex> guard{mtx};
    std::optional<T> result;
    cv.wait_for(guard, timeout, [&] {
      for (auto i = queue.begin(); i != queue.end(); ++i) {
        if (pred(*i)) {
          result = *i;
          queue.erase(i);
          return true;
        }
      }
      return false;
    });
    return result;
  }
};

caf::behavior subscriber(caf::event_based_actor*, inbox* box) {
  return {
      [box](const lifeboat::peer_failure& x) {
        std::lock_guard<std::mutex> guard{box->mtx};
        box->failures.push_back(x);
        box->cv.notify_all();
      },
      [box](const lifeboat::peer_message& x) {
        std::lock_guard<std::mutex> guard{box->mtx};
        box->messages.push_back(x);
        box->cv.notify_all();
      },
  };
}

std::string result_line(const caf::error& err) {
  return err ? "err " + lifeboat::describe(err) : "ok";
}

std::string run(lifeboat::coordination_client& client, inbox& box, const std::string& line) {
  using std::chrono::milliseconds;
  std::istringstream in{line};
  std::string cmd;
  in >> cmd;
  if (cmd == "insert") {
    std::string key, value;
    in >> key >> value;
    return result_line(client.insert(key, value));
  }
  if (cmd == "get") {
    std::string key;
    int64_t ms = 0;
    in >> key >> ms;
    auto value = client.get(key, milliseconds(ms));
    return value ? "value " + *value : result_line(value.error());
  }
  if (cmd == "tryget") {
    std::string key;
    in >> key;
    auto value = client.try_get(key);
    if (!value) return result_line(value.error());
    return *value ? "value " + **value : std::string{"absent"};
  }
  if (cmd == "barrier") {
    std::string name;
    int64_t ms = 0;
    in >> name >> ms;
    return result_line(client.barrier(name, milliseconds(ms)));
  }
  if (cmd == "report") {
    int32_t code = 0;
    std::string message;
    in >> code >> message;
    client.report_error(code, message);
    return "ok";
  }
  if (cmd == "send") {
    int32_t to = 0;
    std::string channel, payload;
    in >> to >> channel >> payload;
    client.send(to, channel, payload);
    return "ok";
  }
  if (cmd == "failure") {
    int32_t rank = 0;
    int64_t ms = 0;
    in >> rank >> ms;
    auto f = box.take(box.failures, milliseconds(ms),
                      [&](const lifeboat::peer_failure& x) { return x.rank == rank; });
    if (!f) return "err timeout";
    return "failure " + std::to_string(f->rank) + " " + std::to_string(f->code) + " " +
           (f->lost ? "1 " : "0 ") + f->message;
  }
  if (cmd == "message") {
    int64_t ms = 0;
    in >> ms;
    auto m = box.take(box.messages, milliseconds(ms), [](const auto&) { return true; });
    if (!m) return "err timeout";
    return "message " + std::to_string(m->from_rank) + " " + m->channel + " " + m->payload;
  }
  if (cmd == "leave") return result_line(client.leave());
  return "err unknown command " + cmd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::cerr << "usage: coordination_worker HOST PORT RANK WORLD_SIZE TOKEN INCARNATION "
                 "HEARTBEAT_MS\n";
    return 2;
  }
  lifeboat::agent_config cfg;
  cfg.host = argv[1];
  cfg.port = static_cast<uint16_t>(std::stoi(argv[2]));
  cfg.rank = std::stoi(argv[3]);
  cfg.world_size = std::stoi(argv[4]);
  cfg.token = argv[5];
  cfg.incarnation = static_cast<uint32_t>(std::stoul(argv[6]));
  cfg.heartbeat_interval = std::chrono::milliseconds(std::stoi(argv[7]));
  cfg.join_timeout = join_timeout;
  lifeboat::system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  inbox box;
  {
    auto client = lifeboat::coordination_client::connect(sys, cfg);
    if (!client) {
      std::cout << "join_error " << lifeboat::describe(client.error()) << std::endl;
      return 1;
    }
    auto sub = sys.spawn(subscriber, &box);
    (*client)->subscribe(sub);
    std::cout << "joined" << std::endl;
    std::string line;
    while (std::getline(std::cin, line) && line != "exit")
      std::cout << run(**client, box, line) << std::endl;
    caf::anon_send_exit(sub, caf::exit_reason::user_shutdown);
  }
  return 0;
}
