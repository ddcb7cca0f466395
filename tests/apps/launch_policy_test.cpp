// launch_policy: how the launcher reads a generation's exits (finished,
// preempted, failed, and the likeliest cause first) and what it does next
// (DESIGN "lifeboat-launch": restart after a save, count failures against
// --max-restarts, end on a forwarded signal). The end-to-end tests see the
// same through real workers; these name each case.
#include "apps/launch_policy.hpp"

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/worker_exits.hpp"

namespace lifeboat::apps {
namespace {

constexpr int restart_code = 42;
constexpr int failed_code = 3;
constexpr int world = 4;

using test::exited;
using test::killed;
using test::killed_unheeded;

// A failure_origin that must not be asked.
std::string not_asked() {
  ADD_FAILURE() << "the coordination service's word was asked for";
  return {};
}

std::string save_message() { return "saved at step 7"; }

TEST(launch_policy, every_worker_that_exits_zero_finishes_the_job) {
  auto result = classify_generation({exited(0, 0), exited(1, 0)}, restart_code, not_asked);
  EXPECT_EQ(result.result, outcome::finished);
  EXPECT_TRUE(result.failures.empty());
  restart_counts counts;
  auto next = decide(result, 0, counts, 2, restart_code, world, save_message);
  EXPECT_EQ(next.exit_code, 0);
  EXPECT_EQ(next.lines, std::vector<std::string>{"all 4 workers finished"});
}

TEST(launch_policy, a_save_restarts_the_job_unless_a_signal_asked_for_the_end) {
  auto result =
      classify_generation({exited(0, restart_code), exited(1, 0)}, restart_code, not_asked);
  EXPECT_EQ(result.result, outcome::preempted);
  restart_counts counts;
  auto next = decide(result, 0, counts, 0, restart_code, world, save_message);
  EXPECT_FALSE(next.exit_code);
  EXPECT_EQ(next.lines, std::vector<std::string>{"workers saved a checkpoint and exited with the "
                                                 "restart code (saved at step 7)"});
  EXPECT_EQ(counts.failures, 0);
  EXPECT_EQ(decide(result, SIGTERM, counts, 0, restart_code, world, save_message).exit_code,
            restart_code);
}

// Restart-code exits that no notice explains (a command that exits with the
// code at once) are restarted at once a few times, then ever more slowly:
// they do not count against --max-restarts, and would otherwise loop.
TEST(launch_policy, restarts_without_a_notice_back_off_after_a_few) {
  auto result = classify_generation({exited(0, restart_code)}, restart_code, not_asked);
  auto no_notice = [] { return std::string{}; };
  restart_counts counts;
  std::vector<std::chrono::milliseconds> delays;
  for (int i = 0; i < free_unnoticed_restarts + 3; ++i) {
    auto next = decide(result, 0, counts, 0, restart_code, world, no_notice);
    EXPECT_FALSE(next.exit_code);
    EXPECT_EQ(next.lines.front(),
              "workers exited with the restart code, but none recorded a notice: the latest "
              "complete checkpoint stands");
    delays.push_back(next.delay);
  }
  using std::chrono::milliseconds;
  std::vector<milliseconds> expected(free_unnoticed_restarts, milliseconds{0});
  expected.insert(expected.end(),
                  {first_restart_backoff, 2 * first_restart_backoff, 4 * first_restart_backoff});
  EXPECT_EQ(delays, expected);
  EXPECT_EQ(counts.failures, 0);
  EXPECT_EQ(counts.unnoticed_restarts, free_unnoticed_restarts + 3);
  auto waiting = decide(result, 0, counts, 0, restart_code, world, no_notice);
  ASSERT_EQ(waiting.lines.size(), 2u);
  EXPECT_EQ(waiting.lines.back(),
            "waiting 8 s before the next start: " + std::to_string(free_unnoticed_restarts + 4) +
                " generations in a row exited with the restart code "
                "without a notice");
  // A save for a notice ends the run: the next unexplained exit is free again.
  EXPECT_EQ(decide(result, 0, counts, 0, restart_code, world, save_message).delay.count(), 0);
  EXPECT_EQ(counts.unnoticed_restarts, 0);
  EXPECT_EQ(decide(result, 0, counts, 0, restart_code, world, no_notice).delay.count(), 0);
}

TEST(launch_policy, a_failure_ends_a_run_of_unexplained_restarts_and_the_wait_is_bounded) {
  restart_counts counts;
  counts.unnoticed_restarts = 10;
  auto failed = classify_generation({exited(1, 1)}, restart_code, not_asked);
  EXPECT_EQ(decide(failed, 0, counts, 5, restart_code, world, save_message).delay.count(), 0);
  EXPECT_EQ(counts.unnoticed_restarts, 0);
  EXPECT_EQ(restart_backoff(free_unnoticed_restarts), std::chrono::milliseconds{0});
  EXPECT_EQ(restart_backoff(free_unnoticed_restarts + 1), first_restart_backoff);
  EXPECT_EQ(restart_backoff(1000), max_restart_backoff);
  // A signal during such a run still ends the job with the restart code.
  auto result = classify_generation({exited(0, restart_code)}, restart_code, not_asked);
  counts.unnoticed_restarts = 10;
  EXPECT_EQ(decide(result, SIGTERM, counts, 0, restart_code, world, [] { return std::string{}; })
                .exit_code,
            restart_code);
}

TEST(launch_policy, a_failure_beside_a_save_fails_the_generation) {
  auto result =
      classify_generation({exited(0, restart_code), exited(1, 1)}, restart_code, not_asked);
  EXPECT_EQ(result.result, outcome::failed);
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_EQ(result.cause, "rank 1 (pid 101) exited with code 1");
}

// Peers that learnt of a failure exit 3, maybe before the worker where it
// began: that one is the cause, wherever it was reaped.
TEST(launch_policy, the_worker_where_a_failure_began_is_the_cause_not_its_followers) {
  auto result = classify_generation({exited(0, failed_code), killed(2, SIGKILL), exited(1, 3)},
                                    restart_code, not_asked);
  EXPECT_EQ(result.result, outcome::failed);
  ASSERT_EQ(result.failures.size(), 3u);
  EXPECT_EQ(result.failures.front().rank, 2);
  EXPECT_EQ(result.cause, "rank 2 (pid 102) was killed by SIGKILL");
}

TEST(launch_policy, where_only_followers_exited_the_services_word_names_the_cause) {
  auto origin = [] { return std::string{"rank 3 reported error: injected failure"}; };
  auto result =
      classify_generation({exited(0, failed_code), exited(1, failed_code)}, restart_code, origin);
  EXPECT_EQ(result.cause, "rank 3 reported error: injected failure");
  // Without it, the first follower is all there is to name.
  auto silent =
      classify_generation({exited(0, failed_code)}, restart_code, [] { return std::string{}; });
  EXPECT_EQ(silent.cause, "rank 0 (pid 100) exited with code 3");
}

// A worker that the launcher killed because the service declared it lost is
// the cause, and the service's word says why (its silence), not the kill.
TEST(launch_policy, a_worker_killed_as_lost_is_the_cause_in_the_services_words) {
  auto origin = [] { return std::string{"rank 1 was lost: no heartbeat for 10000 ms"}; };
  auto result =
      classify_generation({exited(0, failed_code), test::killed_as_lost(1), exited(2, failed_code)},
                          restart_code, origin);
  ASSERT_EQ(result.failures.size(), 3u);
  EXPECT_EQ(result.failures.front().rank, 1);
  EXPECT_EQ(result.failures.front().describe(), "rank 1 (pid 101) was lost and killed");
  EXPECT_EQ(result.cause, "rank 1 was lost: no heartbeat for 10000 ms");
}

TEST(launch_policy, failures_restart_the_job_until_max_restarts_then_it_gives_up) {
  auto result = classify_generation({exited(1, 1)}, restart_code, not_asked);
  restart_counts counts;
  auto first = decide(result, 0, counts, 1, restart_code, world, save_message);
  EXPECT_FALSE(first.exit_code);
  EXPECT_EQ(counts.failures, 1);
  EXPECT_EQ(first.lines.back(),
            "restarting after failure 1 of at most 1: rank 1 (pid 101) exited with code 1");
  auto second = decide(result, 0, counts, 1, restart_code, world, save_message);
  EXPECT_EQ(second.exit_code, failed_code);
  EXPECT_EQ(counts.failures, 2);
  EXPECT_EQ(second.lines.front(), "rank 1 (pid 101) exited with code 1");
  EXPECT_EQ(second.lines.back(),
            "giving up: rank 1 (pid 101) exited with code 1 (2 failure(s), --max-restarts 1)");
}

// Workers that exit 2 found a configuration that cannot work (a checkpoint
// of another world size, say), the others only followed: the launcher gives
// up at once with 2, whatever --max-restarts allows. Before, it ran every
// restart again and exited 3. Beside another failure, 2 is one like any.
TEST(launch_policy, a_configuration_that_cannot_work_gives_up_at_once_with_2) {
  auto result = classify_generation({exited(0, 2), exited(1, failed_code), exited(2, 2)},
                                    restart_code, not_asked);
  restart_counts counts;
  auto next = decide(result, 0, counts, 5, restart_code, world, save_message);
  EXPECT_EQ(next.exit_code, 2);
  EXPECT_EQ(next.lines.back(),
            "giving up: rank 0 (pid 100) exited with code 2: a configuration that cannot work, "
            "which no restart changes");
  auto mixed = classify_generation({exited(0, 2), exited(1, 1)}, restart_code, not_asked);
  EXPECT_FALSE(decide(mixed, 0, counts, 5, restart_code, world, save_message).exit_code);
}

// A forwarded SIGTERM that ended workers before they could save is the
// notice taking effect: the latest checkpoint stands and the job restarts.
TEST(launch_policy, workers_a_forwarded_sigterm_ended_before_a_save_exit_with_the_restart_code) {
  auto result =
      classify_generation({killed(0, SIGTERM), exited(1, failed_code)}, restart_code, not_asked);
  restart_counts counts;
  auto next = decide(result, SIGTERM, counts, 5, restart_code, world, save_message);
  EXPECT_EQ(next.exit_code, restart_code);
  EXPECT_NE(next.lines.back().find("stopped by SIGTERM before the workers could save"),
            std::string::npos)
      << next.lines.back();
}

TEST(launch_policy, workers_ended_by_another_forwarded_signal_are_not_restarted) {
  auto result = classify_generation({killed(0, SIGINT)}, restart_code, not_asked);
  restart_counts counts;
  auto next = decide(result, SIGINT, counts, 5, restart_code, world, save_message);
  EXPECT_EQ(next.exit_code, failed_code);
  EXPECT_EQ(next.lines.back(), "stopped by SIGINT: rank 0 (pid 100) was killed by SIGINT");
  // A SIGTERM that a worker outlived to fail otherwise is a failure too.
  auto crashed = classify_generation({exited(0, 1)}, restart_code, not_asked);
  EXPECT_EQ(decide(crashed, SIGTERM, counts, 5, restart_code, world, save_message).exit_code,
            failed_code);
}

// Workers the launcher killed because they outlived its forwarded SIGTERM
// were ended by that SIGTERM: nothing was saved, and the latest checkpoint
// stands, as for workers the signal itself killed.
TEST(launch_policy, workers_killed_for_outliving_a_forwarded_sigterm_exit_with_the_restart_code) {
  auto result =
      classify_generation({killed_unheeded(0), killed_unheeded(1)}, restart_code, not_asked);
  restart_counts counts;
  auto next = decide(result, SIGTERM, counts, 5, restart_code, world, save_message);
  EXPECT_EQ(next.exit_code, restart_code);
  EXPECT_EQ(next.lines.back(),
            "stopped by SIGTERM before the workers could save: rank 0 (pid 100) outlived the "
            "signal it was sent and was killed; the latest complete checkpoint stands, exiting "
            "with 42");
}

// The launcher kills workers for a forwarded signal once, unheeded_signal_bound
// after it forwarded it, and only when no worker recorded a notice.
TEST(launch_policy, an_unheeded_signal_is_due_once_after_its_bound_without_a_notice) {
  auto forwarded_ns = int64_t{5'000'000'000};
  auto forwarded = std::chrono::steady_clock::time_point{std::chrono::nanoseconds{forwarded_ns}};
  int asked = 0;
  auto none = [&] {
    ++asked;
    return false;
  };
  unheeded_signal_check check;
  EXPECT_FALSE(check.due(forwarded + 1h, 0, none)) << "nothing was forwarded";
  EXPECT_FALSE(check.due(forwarded + unheeded_signal_bound - 1ms, forwarded_ns, none));
  EXPECT_EQ(asked, 0) << "the service is asked only once the bound passed";
  EXPECT_TRUE(check.due(forwarded + unheeded_signal_bound, forwarded_ns, none));
  EXPECT_FALSE(check.due(forwarded + 2 * unheeded_signal_bound, forwarded_ns, none)) << "once";
  EXPECT_EQ(asked, 1);

  unheeded_signal_check heeded;
  EXPECT_FALSE(heeded.due(forwarded + unheeded_signal_bound, forwarded_ns, [] { return true; }))
      << "a worker recorded a notice: it ends by its own deadline";
  EXPECT_FALSE(heeded.due(forwarded + 2 * unheeded_signal_bound, forwarded_ns, none))
      << "a notice once recorded is not asked for again";
}

// After a worker finished the others may have work of their own left (rank 0
// uploading the final model); after a save they are committing the same
// checkpoint; after a failure they learn of it and end.
TEST(launch_policy, the_others_get_longest_after_a_finished_worker_and_least_after_a_failure) {
  EXPECT_EQ(group_exit_bound(exited(0, 0), restart_code), finished_group_exit_bound);
  EXPECT_EQ(group_exit_bound(exited(0, restart_code), restart_code), preempted_group_exit_bound);
  EXPECT_EQ(group_exit_bound(exited(0, failed_code), restart_code), failed_group_exit_bound);
  EXPECT_EQ(group_exit_bound(killed(0, SIGTERM), restart_code), failed_group_exit_bound);
  EXPECT_GT(finished_group_exit_bound, preempted_group_exit_bound);
  EXPECT_GT(preempted_group_exit_bound, failed_group_exit_bound);
}

}  // namespace
}  // namespace lifeboat::apps
