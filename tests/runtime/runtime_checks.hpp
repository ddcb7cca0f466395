#pragma once

// Assertions shared by the runtime tests: what a preempted run must have left
// behind, and a restart that must finish the job exactly.

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {

/// `values` is exactly from, from + 1, ..., to (empty when to < from).
testing::AssertionResult contiguous(const std::vector<int64_t>& values, int64_t from, int64_t to);

/// Every worker of `c` saved exactly once ("saving=" lines; `key` "saved" for
/// save_fn) and all at one step, which goes to `step`.
testing::AssertionResult single_agreed_save(const worker_cluster& c, int64_t& step,
                                            const std::string& key = "saving");

/// Every worker saved exactly at `steps`, in that order.
testing::AssertionResult saves_at(const worker_cluster& c, const std::vector<int64_t>& steps,
                                  const std::string& key = "saving");

/// Every worker ran steps 1..last (after a restore at `restored`: restored+1..last),
/// each once, and never applied a step out of order.
testing::AssertionResult ran_steps(const worker_cluster& c, int64_t restored, int64_t last);

/// Every exit code is `code`.
testing::AssertionResult all_exited(const std::vector<int>& codes, int code, size_t workers);

/// Starts `opts` (a restart over the same directory), and checks that every
/// worker restored `restored`, ran the remaining steps once each and finished
/// at `target` with exit code 0.
testing::AssertionResult resumes_and_finishes(const cluster_options& opts, int64_t restored,
                                              int64_t target);

}  // namespace lifeboat::test
