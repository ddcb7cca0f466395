#pragma once

// coordination_bench's handle on its kv worker processes: starting them,
// sending every one a command line and reading every one's answer.
// Used by one thread; the workers live as long as the group.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/coordination/settings.hpp"
#include "tests/support/child_process.hpp"

namespace lifeboat::bench::coordination_bench {

// N kv workers, joined; every one is killed and reaped when this goes away.
class worker_group {
 public:
  // Throws bench_error if a worker cannot start or does not join in time.
  worker_group(const std::string& self, uint16_t port, int n);

  worker_group(const worker_group&) = delete;
  worker_group& operator=(const worker_group&) = delete;

  // A clean exit first, unless a failure is unwinding; child_process's
  // destructor kills and reaps whoever is left.
  ~worker_group();

  size_t size() const { return workers_.size(); }

  void send_all(const std::string& line);

  // One line from every worker, each starting with `word`; the rest of each.
  std::vector<std::string> expect_all(const std::string& word,
                                      std::chrono::milliseconds timeout = worker_line_timeout);

 private:
  std::vector<std::unique_ptr<lifeboat::test::child_process>> workers_;
};

}  // namespace lifeboat::bench::coordination_bench
