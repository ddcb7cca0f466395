// lifeboat-demo workers against hostile peers on the coordination port, as
// real processes (DESIGN "Security"): an impostor service that accepts any
// join but cannot prove the cluster token is refused by the worker, which
// exits with a clear error within seconds; and 10,000 connections that never
// join (idle, or sending a byte a second) opened at a running 4-worker job's
// service do not change how it ends: the digests of an uninterrupted run.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "actors/coordination/coordination_frame.hpp"
#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/loopback_port.hpp"

namespace {

using namespace lifeboat;
using namespace lifeboat::test;
using clock_type = std::chrono::steady_clock;

// The bound for refusing an impostor, from its JoinReply to the exit.
constexpr auto impostor_exit_bound = 5s;
// A refused join ends lifeboat-demo as a configuration error: its token is
// not the one of the service it was pointed at.
constexpr int refused_join_exit_code = 2;
constexpr int flood_connections = 10'000;
constexpr int flood_batch = 250;
// Open at once on the test's side; the service closes most at accept.
constexpr size_t flood_max_open = 2'000;
constexpr auto slow_byte_interval = 1s;
// How long after its last connection was opened every one must be closed by
// the service: its 5 s join bound, and a margin for a loaded machine.
constexpr auto flood_drain_bound = 15s;
constexpr auto poll_interval = 100ms;
// 5 ms steps: the job trains for about 15 s, longer than the flood lasts.
constexpr int64_t flood_steps = 3'000;

void write_all(int fd, const std::vector<char>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    auto n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The next frame from `fd` within `deadline`, or nullopt.
std::optional<wire::Envelope> read_frame(int fd, frame_splitter& split,
                                         clock_type::time_point deadline) {
  wire::Envelope env;
  while (split.next(env) != frame_splitter::status::frame) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1)
      return std::nullopt;
    char buf[4096];
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return std::nullopt;
    split.append(buf, static_cast<size_t>(n));
  }
  return env;
}

TEST(hostile_peers_test, a_service_that_cannot_prove_the_token_is_refused_within_seconds) {
  held_port impostor;
  ASSERT_NE(impostor.port(), 0);
  scratch_dir dir{"impostor"};
  child_process worker{
      {lifeboat::test::built(LIFEBOAT_DEMO), "--checkpoint-dir", dir / "ckpt", "--steps", "10"},
      true,
      environment_with({{"LIFEBOAT_PLATFORM", "generic"},
                        {"LIFEBOAT_RANK", "0"},
                        {"LIFEBOAT_WORLD_SIZE", "2"},
                        {"LIFEBOAT_COORDINATOR", "127.0.0.1:" + std::to_string(impostor.port())},
                        {"LIFEBOAT_COORDINATOR_EXTERNAL", "1"},
                        {"LIFEBOAT_CLUSTER_TOKEN", "the-real-token"}})};
  output_log log{worker};
  // The impostor greets, takes the join and accepts it with no proof.
  pollfd p{impostor.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(line_deadline).count())), 1)
      << "the worker never connected";
  int conn = ::accept(impostor.fd(), nullptr, nullptr);
  ASSERT_GE(conn, 0);
  wire::Envelope hello;
  hello.mutable_hello()->set_nonce(std::string(32, 'n'));
  write_all(conn, encode_frame(hello));
  frame_splitter split;
  auto join = read_frame(conn, split, clock_type::now() + line_deadline);
  ASSERT_TRUE(join && join->has_join()) << "no JoinRequest";
  EXPECT_FALSE(join->join().nonce().empty()) << "the worker sent no challenge";
  wire::Envelope accepted;
  accepted.mutable_join_reply()->set_ok(true);
  accepted.mutable_join_reply()->set_generation(0);
  write_all(conn, encode_frame(accepted));
  auto replied = clock_type::now();
  // The connection stays open: only the missing proof can make it leave.
  EXPECT_EQ(exit_code(worker, impostor_exit_bound), refused_join_exit_code);
  EXPECT_LT(clock_type::now() - replied, impostor_exit_bound);
  log.read_all(line_deadline);
  EXPECT_TRUE(log.contains("could not prove it knows the cluster token")) << log.text();
  EXPECT_FALSE(log.contains("lifeboat-demo: rank=0 step=")) << log.text();
  ::close(conn);
}

// Raises this process's open-file limit to its hard limit: the flood holds
// up to flood_max_open sockets at once.
void raise_open_file_limit() {
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  lim.rlim_cur = lim.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  ASSERT_GE(lim.rlim_cur, flood_max_open + 256) << "the hard limit on open files is too low";
}

struct flood_result {
  int opened = 0;
  int closed_by_service = 0;
  bool drained = false;  // every connection closed by the service within the bound
};

// Opens flood_connections connections to 127.0.0.1:port in batches; every
// other one sends a byte a second (never a whole frame), the rest nothing.
// Ends once the service has closed them all, or at the drain bound.
flood_result flood(uint16_t port) {
  struct conn {
    int fd;
    bool slow;
    clock_type::time_point next_byte;
  };
  flood_result result;
  std::vector<conn> open;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto drain_deadline = clock_type::time_point::max();
  for (;;) {
    if (result.opened < flood_connections && open.size() < flood_max_open) {
      for (int i = 0; i < flood_batch && result.opened < flood_connections; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) break;
        ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
        open.push_back({fd, result.opened % 2 == 1, clock_type::now()});
        ++result.opened;
      }
      if (result.opened == flood_connections)
        drain_deadline = clock_type::now() + flood_drain_bound;
    }
    if (open.empty() && result.opened == flood_connections) {
      result.drained = true;
      return result;
    }
    if (clock_type::now() > drain_deadline) break;
    std::vector<pollfd> fds;
    for (auto& c : open) fds.push_back({c.fd, POLLIN, 0});
    // The wait for the service's closes is also the pause between batches.
    ::poll(fds.data(), fds.size(),
           static_cast<int>(std::chrono::milliseconds(poll_interval).count()));
    std::vector<conn> still_open;
    for (size_t i = 0; i < open.size(); ++i) {
      auto& c = open[i];
      bool closed = false;
      if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) {
        char buf[512];
        auto n = ::recv(c.fd, buf, sizeof(buf), 0);
        closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      }
      if (!closed && c.slow && clock_type::now() >= c.next_byte) {
        // The first byte of a frame header; never the rest.
        if (::send(c.fd, "\0", 1, MSG_NOSIGNAL) == 1 || errno == EAGAIN || errno == ENOTCONN)
          c.next_byte = clock_type::now() + slow_byte_interval;
      }
      if (closed) {
        ::close(c.fd);
        ++result.closed_by_service;
      } else {
        still_open.push_back(c);
      }
    }
    open.swap(still_open);
  }
  for (auto& c : open) ::close(c.fd);
  return result;
}

std::vector<std::string> launch_demo(const std::string& ckpt) {
  return {lifeboat::test::built(LIFEBOAT_LAUNCH),
          "--nproc",
          "4",
          "--",
          lifeboat::test::built(LIFEBOAT_DEMO),
          "--checkpoint-dir",
          ckpt,
          "--steps",
          std::to_string(flood_steps),
          "--state-mb",
          "1",
          "--step-ms",
          "5"};
}

TEST(hostile_peers_test, ten_thousand_idle_and_slow_connections_leave_the_digests_unchanged) {
  raise_open_file_limit();
  scratch_dir dir{"hostile-flood"};
  const auto env = environment_with({{"LIFEBOAT_PLATFORM", "generic"}});
  child_process ref_run{launch_demo(dir / "reference"), true, env};
  output_log ref{ref_run};
  ref.read_all();
  ASSERT_EQ(exit_code(ref_run), 0) << ref.text();
  auto expected = ref.digests(flood_steps);
  ASSERT_EQ(expected.size(), 4u) << ref.text();

  child_process run{launch_demo(dir / "ckpt"), true, env};
  output_log log{run};
  auto listening = log.read_until("coordination_service: listening on port ");
  ASSERT_TRUE(listening) << log.text();
  auto port = listening_port(*listening);
  ASSERT_NE(port, 0);
  // Once the job trains: a service busy with strangers must not lose it.
  ASSERT_TRUE(log.read_until_count(" joined (generation 0)", 4)) << log.text();
  std::atomic<bool> flood_done{false};
  flood_result result;
  std::thread attacker{[&] {
    result = flood(port);
    flood_done = true;
  }};
  auto first_digest = log.read_until("lifeboat-demo: rank=");
  bool flood_ended_first = flood_done;
  log.read_all();
  attacker.join();
  EXPECT_EQ(exit_code(run), 0) << log.text();
  EXPECT_EQ(log.digests(flood_steps), expected) << log.text();
  EXPECT_TRUE(first_digest) << log.text();
  EXPECT_TRUE(flood_ended_first) << "the job ended before the flood: make it longer";
  EXPECT_EQ(result.opened, flood_connections);
  EXPECT_TRUE(result.drained) << result.closed_by_service << " of " << result.opened
                              << " connections closed by the service";
}

}  // namespace
