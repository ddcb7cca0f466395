// coordination_bench's worker_group: starts the kv workers, sends them
// commands and checks their answers.

#include "bench/coordination/worker_group.hpp"

#include <exception>
#include <utility>

#include "bench/proc_stats.hpp"

namespace lifeboat::bench::coordination_bench {

using lifeboat::test::child_process;

worker_group::worker_group(const std::string& self, uint16_t port, int n) {
  for (int i = 0; i < n; ++i) {
    auto child = std::make_unique<child_process>(
        std::vector<std::string>{self, "--worker", "kv", std::to_string(port),
                                 std::to_string(i + 1), std::to_string(n + 1)});
    if (!child->started()) throw bench_error("cannot start worker " + std::to_string(i + 1));
    workers_.push_back(std::move(child));
  }
  expect_all("joined", worker_ready_timeout);
}

worker_group::~worker_group() {
  if (std::uncaught_exceptions() > 0) return;
  for (auto& w : workers_) w->send_line("exit");
  auto deadline = clock_type::now() + worker_exit_timeout;
  for (auto& w : workers_) w->wait_exit(std::chrono::milliseconds(remaining_ms(deadline)));
}

void worker_group::send_all(const std::string& line) {
  for (size_t i = 0; i < workers_.size(); ++i)
    if (!workers_[i]->send_line(line))
      throw bench_error("worker " + std::to_string(i + 1) + " is gone (sending '" + line + "')");
}

std::vector<std::string> worker_group::expect_all(const std::string& word,
                                                  std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  std::vector<std::string> rest;
  for (size_t i = 0; i < workers_.size(); ++i) {
    auto who = "worker " + std::to_string(i + 1) + " of " + std::to_string(workers_.size());
    auto line = workers_[i]->read_line(std::chrono::milliseconds(remaining_ms(deadline)));
    if (!line)
      throw bench_error(who + (workers_[i]->at_eof() ? " exited" : " did not answer in time") +
                        " (expected '" + word + "')");
    auto after = answer_after(*line, word);
    if (!after) throw bench_error(who + " said '" + *line + "' (expected '" + word + "')");
    rest.push_back(std::move(*after));
  }
  return rest;
}

}  // namespace lifeboat::bench::coordination_bench
