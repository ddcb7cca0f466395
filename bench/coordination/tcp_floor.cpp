// coordination_bench's floor: what a 64-byte round trip on 127.0.0.1 costs
// before lifeboat adds anything.

#include "bench/coordination/tcp_floor.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "bench/coordination/settings.hpp"
#include "bench/loopback.hpp"
#include "bench/proc_stats.hpp"
#include "tests/support/child_process.hpp"

namespace lifeboat::bench::coordination_bench {

std::vector<double> tcp_floor(const std::string& self) {
  uint16_t port = 0;
  auto listener = listen_loopback(1, port);
  if (listener.fd < 0)
    throw bench_error(std::string{"floor: cannot listen: "} + std::strerror(errno));
  lifeboat::test::child_process echo{{self, "--worker", "echo", std::to_string(port)}};
  if (!echo.started()) throw bench_error("floor: cannot start the echo process");
  auto conn = accept_within(listener.fd, ping_timeout);
  if (conn.fd < 0) throw bench_error("floor: the echo process did not connect in time");
  std::array<char, ping_bytes> buf{};
  std::vector<double> rtt_ms;
  for (int round = 0; round < ping_warmup_rounds + ping_rounds; ++round) {
    auto start = steady_ns();
    if (!transfer_all(conn.fd, buf.data(), buf.size(), true, ping_timeout) ||
        !transfer_all(conn.fd, buf.data(), buf.size(), false, ping_timeout))
      throw bench_error("floor: ping-pong failed or timed out");
    auto rtt = steady_ns() - start;
    if (round >= ping_warmup_rounds) rtt_ms.push_back(ms_of(rtt));
  }
  ::close(conn.fd);  // the echo process sees EOF and exits
  conn.fd = -1;
  if (!echo.wait_exit(worker_exit_timeout)) throw bench_error("floor: echo process did not exit");
  return rtt_ms;
}

}  // namespace lifeboat::bench::coordination_bench
