#include "apps/worker_group.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "platform/signal_pipe.hpp"
#include "tests/apps/worker_exits.hpp"

namespace lifeboat::apps {
namespace {

using namespace std::chrono_literals;

using test::exited;
using test::killed;

// As execvpe finds a program: by its path, or by its name in PATH.
TEST(worker_group, unrunnable_says_why_a_command_cannot_run) {
  EXPECT_EQ(worker_group::unrunnable("/bin/sh"), std::nullopt);
  EXPECT_EQ(worker_group::unrunnable("sh"), std::nullopt);
  EXPECT_EQ(worker_group::unrunnable("no-such-program-of-lifeboat"),
            std::optional<std::string>{"No such file or directory"});
  EXPECT_EQ(worker_group::unrunnable("/no/such/dir/sh"),
            std::optional<std::string>{"No such file or directory"});
  EXPECT_EQ(worker_group::unrunnable(""), std::optional<std::string>{"No such file or directory"});
  EXPECT_EQ(worker_group::unrunnable("/tmp"), std::optional<std::string>{"Permission denied"});
  char text[] = "/tmp/lifeboat-unrunnable-XXXXXX";
  int fd = ::mkstemp(text);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_EQ(worker_group::unrunnable(text), std::optional<std::string>{"Permission denied"});
  ASSERT_EQ(::chmod(text, 0700), 0);
  EXPECT_EQ(worker_group::unrunnable(text), std::nullopt);
  std::remove(text);
}

std::vector<int> ranks(const std::vector<worker_exit>& exits) {
  std::vector<int> out;
  for (const auto& e : exits) out.push_back(e.rank);
  return out;
}

TEST(worker_group, failures_are_ordered_by_cause_not_by_exit) {
  std::vector<worker_exit> exits{exited(0, 3), killed(1, SIGKILL, true),
                                 exited(2, 3), killed(3, SIGSEGV),
                                 exited(4, 1), killed(5, SIGKILL)};
  order_by_cause(exits);
  EXPECT_EQ(ranks(exits), (std::vector<int>{3, 5, 4, 0, 2, 1}));
}

// The launcher asks the coordination service where a failure began only when
// the likeliest cause is a worker that merely followed it.
TEST(worker_group, only_exit_3_and_a_kill_at_the_deadline_followed_a_failure) {
  EXPECT_TRUE(followed_a_failure(exited(0, 3)));
  EXPECT_TRUE(followed_a_failure(killed(1, SIGKILL, true)));
  EXPECT_FALSE(followed_a_failure(exited(2, 1)));
  EXPECT_FALSE(followed_a_failure(exited(3, 0)));
  EXPECT_FALSE(followed_a_failure(killed(4, SIGKILL)));
  EXPECT_FALSE(followed_a_failure(killed(5, SIGTERM)));
}

// A forwarded SIGTERM that killed workers before they could save ended the
// generation only when it is the likeliest cause and the rest followed.
TEST(worker_group, a_generation_ended_by_a_signal_has_it_as_cause_and_nothing_else) {
  std::vector<worker_exit> sigterm_and_followers{killed(1, SIGTERM), killed(2, SIGTERM),
                                                 exited(0, 3), killed(3, SIGKILL, true)};
  EXPECT_TRUE(ended_by_signal(sigterm_and_followers, SIGTERM));
  EXPECT_FALSE(ended_by_signal(sigterm_and_followers, SIGINT));
  std::vector<worker_exit> with_another_signal{killed(1, SIGTERM), killed(2, SIGSEGV)};
  EXPECT_FALSE(ended_by_signal(with_another_signal, SIGTERM));
  std::vector<worker_exit> with_an_exit_code_of_its_own{killed(1, SIGTERM), exited(2, 1)};
  EXPECT_FALSE(ended_by_signal(with_an_exit_code_of_its_own, SIGTERM));
  std::vector<worker_exit> only_followers{exited(0, 3), exited(1, 3)};
  EXPECT_FALSE(ended_by_signal(only_followers, SIGTERM));
  EXPECT_FALSE(ended_by_signal({}, SIGTERM));
}

// Workers that outlive wait_all's deadline are killed and say so: they were
// slow to follow, which order_by_cause puts last.
TEST(worker_group, workers_past_the_deadline_are_killed_and_say_so) {
  auto chld = signal_set({SIGCHLD});
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &chld, nullptr), 0);
  worker_group group{{"/bin/sh", "-c", "[ \"$LIFEBOAT_RANK\" = 0 ] && exit 3; exec sleep 60"}, {}};
  ASSERT_FALSE(group.start(2, 0));
  auto first = group.wait_any(std::chrono::steady_clock::now() + 30s);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->rank, 0);
  EXPECT_EQ(first->code, 3);
  auto rest = group.wait_all(std::chrono::steady_clock::now() + 100ms);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].rank, 1);
  EXPECT_TRUE(rest[0].killed_at_deadline);
  EXPECT_EQ(rest[0].signal, SIGKILL);
  EXPECT_EQ(rest[0].describe(),
            "rank 1 (pid " + std::to_string(rest[0].pid) + ") did not exit in time and was killed");
  EXPECT_TRUE(group.empty());
  ASSERT_EQ(::pthread_sigmask(SIG_UNBLOCK, &chld, nullptr), 0);
}

// A worker the service declared lost may be stopped or frozen: kill_lost
// kills it at once and its exit says so; the other workers are left alone.
TEST(worker_group, kill_lost_kills_only_the_lost_ranks_and_they_say_so) {
  auto chld = signal_set({SIGCHLD});
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &chld, nullptr), 0);
  worker_group group{{"/bin/sh", "-c", "trap '' INT TERM; exec sleep 60"}, {}};
  ASSERT_FALSE(group.start(3, 0));
  group.kill_lost({1, 7});
  auto lost = group.wait_any(std::chrono::steady_clock::now() + 30s);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->rank, 1);
  EXPECT_TRUE(lost->killed_as_lost);
  EXPECT_FALSE(lost->killed_at_deadline);
  EXPECT_EQ(lost->describe(), "rank 1 (pid " + std::to_string(lost->pid) + ") was lost and killed");
  // The others are still running: only the deadline ends them.
  auto rest = group.wait_all(std::chrono::steady_clock::now() + 100ms);
  auto rest_ranks = ranks(rest);  // reaped in whatever order they ended
  std::sort(rest_ranks.begin(), rest_ranks.end());
  EXPECT_EQ(rest_ranks, (std::vector<int>{0, 2}));
  for (auto& e : rest) {
    EXPECT_TRUE(e.killed_at_deadline) << e.describe();
    EXPECT_FALSE(e.killed_as_lost) << e.describe();
  }
  ASSERT_EQ(::pthread_sigmask(SIG_UNBLOCK, &chld, nullptr), 0);
}

// Workers that outlived a forwarded signal: killed, they say so, and the
// generation counts as ended by that signal.
TEST(worker_group, kill_unheeded_kills_every_worker_and_they_count_as_ended_by_the_signal) {
  auto chld = signal_set({SIGCHLD});
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &chld, nullptr), 0);
  worker_group group{{"/bin/sh", "-c", "trap '' INT TERM; exec sleep 60"}, {}};
  ASSERT_FALSE(group.start(2, 0));
  group.kill_unheeded();
  auto exits = group.wait_all(std::chrono::steady_clock::now() + 30s);
  ASSERT_EQ(exits.size(), 2u);
  for (auto& e : exits) {
    EXPECT_TRUE(e.killed_unheeded) << e.describe();
    EXPECT_FALSE(e.killed_at_deadline) << e.describe();
    EXPECT_EQ(e.how(), "outlived the signal it was sent and was killed");
  }
  order_by_cause(exits);
  EXPECT_TRUE(ended_by_signal(exits, SIGTERM));
  ASSERT_EQ(::pthread_sigmask(SIG_UNBLOCK, &chld, nullptr), 0);
}

// A second SIGINT to the launcher while it starts a generation: the workers
// started after it are killed as well, or the launcher waits for them forever.
TEST(worker_group, workers_started_after_kill_all_are_killed_at_once) {
  auto chld = signal_set({SIGCHLD});
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &chld, nullptr), 0);
  worker_group group{{"/bin/sh", "-c", "trap '' INT TERM; exec sleep 60"}, {}};
  group.kill_all();
  ASSERT_FALSE(group.start(2, 0));
  auto exits = group.wait_all(std::chrono::steady_clock::now() + 30s);
  ASSERT_EQ(exits.size(), 2u);
  for (auto& e : exits) {
    EXPECT_EQ(e.signal, SIGKILL) << e.describe();
    EXPECT_FALSE(e.killed_at_deadline) << e.describe();
  }
  ASSERT_EQ(::pthread_sigmask(SIG_UNBLOCK, &chld, nullptr), 0);
}

}  // namespace
}  // namespace lifeboat::apps
