// At debug level every worker's step resolver logs each protocol step it
// takes with the wall clock ("took a query at unix_us T"); the lines of all
// workers line up into one timeline of the round, in protocol order. At the
// default level there are no such lines.

#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int workers = 3;
constexpr int signalled = workers - 1;
constexpr int64_t signal_step = 5;

// The times at which `rank` took `what`, in the order of its log.
std::vector<int64_t> taken(const worker_cluster& c, int rank, const std::string& what) {
  std::vector<int64_t> out;
  for (auto& line : c.lines_containing(rank, "took " + what + " at unix_us "))
    out.push_back(std::stoll(line.substr(line.rfind(' ') + 1)));
  return out;
}

worker_cluster preempt(const temp_dir& dir, std::vector<std::string> env) {
  auto opts = make_options(workers, dir.str(), {"--steps", "1000", "--step-ms", "10"});
  opts.extra_env = std::move(env);
  return worker_cluster{opts};
}

TEST(protocol_timeline_test, debug_lines_line_up_in_protocol_order) {
  temp_dir dir{"timeline"};
  auto c = preempt(dir, {"LIFEBOAT_LOG_LEVEL=debug"});
  ASSERT_TRUE(c.wait_step(signalled, signal_step)) << c.transcript();
  c.worker(signalled).kill(SIGTERM);
  ASSERT_TRUE(all_exited(c.finish(), restart_exit_code, workers)) << c.transcript();

  // 1. The signalled worker took its own notice, then the leader took it.
  auto own = taken(c, signalled, "a notice of its own");
  auto at_leader = taken(c, 0, "a notice");
  ASSERT_EQ(own.size(), 1u) << c.transcript();
  ASSERT_EQ(at_leader.size(), 1u) << c.transcript();
  EXPECT_LE(own[0], at_leader[0]);
  // 2-3. Every follower took the query after that, and the leader took every
  // follower's report after the first query arrived.
  std::vector<int64_t> queries;
  for (int r = 1; r < workers; ++r) {
    auto q = taken(c, r, "a query");
    ASSERT_EQ(q.size(), 1u) << "rank " << r << "\n" << c.transcript();
    EXPECT_LE(at_leader[0], q[0]) << "rank " << r;
    queries.push_back(q[0]);
  }
  auto reports = taken(c, 0, "a report");
  ASSERT_EQ(reports.size(), static_cast<size_t>(workers - 1)) << c.transcript();
  EXPECT_LE(*std::min_element(queries.begin(), queries.end()),
            *std::min_element(reports.begin(), reports.end()));
  // 4-5. Every follower took the commit after the last report.
  for (int r = 1; r < workers; ++r) {
    auto commit = taken(c, r, "a commit");
    ASSERT_EQ(commit.size(), 1u) << "rank " << r << "\n" << c.transcript();
    EXPECT_LE(*std::max_element(reports.begin(), reports.end()), commit[0]) << "rank " << r;
  }
}

TEST(protocol_timeline_test, the_default_level_logs_no_timeline) {
  temp_dir dir{"timeline-info"};
  auto c = preempt(dir, {});
  ASSERT_TRUE(c.wait_step(signalled, signal_step)) << c.transcript();
  c.worker(signalled).kill(SIGTERM);
  ASSERT_TRUE(all_exited(c.finish(), restart_exit_code, workers)) << c.transcript();
  for (int r = 0; r < workers; ++r) {
    EXPECT_EQ(c.lines_containing(r, "agreed to save at step").size(), 1u) << c.transcript();
    EXPECT_TRUE(c.lines_containing(r, " at unix_us ").empty()) << "rank " << r;
  }
}

}  // namespace
}  // namespace lifeboat::test
