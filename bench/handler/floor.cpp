// handler_bench's exchange floors: the floor workers (raw TCP and CAF
// broker) and the bench's side of their exchanges.

#include "bench/handler/floor.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>

#include "actors/system_config.hpp"
#include "bench/handler/settings.hpp"
#include "bench/loopback.hpp"
#include "tests/support/child_process.hpp"

namespace lifeboat::bench::handler_bench {

namespace {

// A floor worker's trainer: a 1 ms step loop on its own thread, as a
// worker's trainer has, until the worker is done.
class floor_trainer {
 public:
  floor_trainer()
      : thread_{[this] {
          while (!done_.load()) std::this_thread::sleep_for(worker_step_time);
        }} {}
  floor_trainer(const floor_trainer&) = delete;
  floor_trainer& operator=(const floor_trainer&) = delete;
  ~floor_trainer() {
    done_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The CAF floor worker's side of the exchange: a broker that answers each
// query byte with a byte and each decision byte with its arrival time.
caf::behavior caf_floor_broker(caf::io::broker* self, caf::io::connection_handle hdl) {
  self->configure_read(hdl, caf::io::receive_policy::exactly(1));
  auto awaiting_decision = std::make_shared<bool>(false);
  return {
      [=](const caf::io::new_data_msg& msg) {
        if (*awaiting_decision) {
          int64_t arrived = clock_type::now().time_since_epoch().count();
          auto* bytes = reinterpret_cast<const char*>(&arrived);
          self->write(msg.handle, sizeof(arrived), bytes);
        } else {
          self->write(msg.handle, 1, msg.buf.data());
        }
        self->flush(msg.handle);
        *awaiting_decision = !*awaiting_decision;
      },
      [=](const caf::io::connection_closed_msg&) { self->quit(); },
  };
}

}  // namespace

int run_floor_worker(uint16_t port) {
  using namespace lifeboat::bench;
  floor_trainer trainer;
  auto conn = connect_loopback(port);
  char byte = 0;
  while (conn.fd >= 0 && transfer_all(conn.fd, &byte, 1, false, floor_timeout) &&
         transfer_all(conn.fd, &byte, 1, true, floor_timeout) &&
         transfer_all(conn.fd, &byte, 1, false, floor_timeout)) {
    int64_t arrived = clock_type::now().time_since_epoch().count();
    if (!transfer_all(conn.fd, reinterpret_cast<char*>(&arrived), sizeof(arrived), true,
                      floor_timeout))
      break;
  }
  return 0;
}

int run_caf_floor_worker(uint16_t port) {
  floor_trainer trainer;
  lifeboat::system_config cfg;
  caf::actor_system sys{cfg};
  auto broker =
      sys.middleman().spawn_client(caf_floor_broker, lifeboat::bench::loopback_host, port);
  if (!broker) return 1;
  broker = nullptr;
  // Returns once the bench hung up and the broker quit.
  sys.await_all_actors_done();
  return 0;
}

std::vector<double> floor_rounds(const std::string& self, const char* worker_flag, int n) {
  using namespace lifeboat::bench;
  uint16_t port = 0;
  auto listener = listen_loopback(n, port);
  if (listener.fd < 0) die("floor: cannot listen on 127.0.0.1");
  std::vector<std::unique_ptr<lifeboat::test::child_process>> workers;
  std::vector<fd_guard> conns;
  for (int i = 0; i < n; ++i)
    workers.push_back(std::make_unique<lifeboat::test::child_process>(
        std::vector<std::string>{self, worker_flag, std::to_string(port)}));
  for (int i = 0; i < n; ++i) {
    conns.push_back(accept_within(listener.fd, worker_ready_timeout));
    if (conns.back().fd < 0) die("floor: a worker did not connect");
  }
  std::vector<double> samples;
  for (int round = 0; round < floor_warmup_rounds + floor_measured_rounds; ++round) {
    char byte = 'q';
    auto exchange = [&](bool sending) {
      for (auto& c : conns)
        if (!transfer_all(c.fd, &byte, 1, sending, floor_timeout))
          die("floor: a worker went silent");
    };
    auto start = clock_type::now();
    exchange(true);   // the query to all
    exchange(false);  // every answer
    exchange(true);   // the decision to all
    int64_t last = 0;
    for (auto& c : conns) {
      int64_t arrived = 0;
      if (!transfer_all(c.fd, reinterpret_cast<char*>(&arrived), sizeof(arrived), false,
                        floor_timeout))
        die("floor: a worker did not report its time");
      last = std::max(last, arrived);
    }
    auto since = clock_type::time_point(clock_type::duration(last)) - start;
    if (round >= floor_warmup_rounds)
      samples.push_back(std::chrono::duration<double, std::milli>(since).count());
  }
  conns.clear();  // the workers see EOF and exit
  for (auto& w : workers)
    if (w->wait_exit(worker_exit_timeout) != 0) die("floor: a worker failed");
  return samples;
}

}  // namespace lifeboat::bench::handler_bench
