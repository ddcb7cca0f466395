// The preemption watcher of a controller process, over a real coordination
// service with real clients on 127.0.0.1: the earliest notice any worker
// recorded, and waiting until every worker that joined has left or is lost.
#include "actors/preemption/preemption_watcher.hpp"

#include <chrono>
#include <string>
#include <vector>

#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/clock.hpp"
#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/actors/preemption/raised_notice.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

using namespace std::chrono_literals;
using watcher_test = service_fixture;

// Long enough for any loaded machine; a wait that runs into it fails the test.
constexpr auto exit_bound = 10s;
// How long a wait that must not return true is given.
constexpr auto still_waiting = 100ms;

// What the step resolver records for the preemption watcher.
caf::error record_notice(coordination_client& client, int rank, const std::string& source,
                         int64_t deadline_in_ms) {
  wire::Notice notice;
  notice.set_rank(rank);
  notice.set_source(source);
  notice.set_reason(source + " received");
  auto now = unix_now_ms();
  notice.set_received_unix_ms(now);
  notice.set_deadline_unix_ms(now + deadline_in_ms);
  return client.insert(notice_key_prefix + std::to_string(rank), notice.SerializeAsString());
}

TEST_F(watcher_test, the_message_names_the_earliest_notice_and_is_empty_before_any) {
  preemption_watcher watcher{sys, service};
  auto a = join(1);
  auto b = join(2);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(watcher.preemption_message(), "");
  ASSERT_FALSE(record_notice(*a, 1, "signal:SIGTERM", 600'000));
  EXPECT_EQ(watcher.preemption_message().rfind("rank 1: signal:SIGTERM received (source "
                                               "signal:SIGTERM, deadline in ",
                                               0),
            0u)
      << watcher.preemption_message();
  // A later notice with an earlier deadline is the one that matters.
  ASSERT_FALSE(record_notice(*b, 2, "aws:spot-interruption", 120'000));
  auto message = watcher.preemption_message();
  EXPECT_EQ(message.rfind("rank 2: aws:spot-interruption received (source aws:spot-interruption, "
                          "deadline in ",
                          0),
            0u)
      << message;
  // 120 s minus the moments this test took.
  EXPECT_TRUE(message.find("deadline in 119 s)") != std::string::npos ||
              message.find("deadline in 120 s)") != std::string::npos)
      << message;
}

// Read after the workers exited, a notice without a grace period is past
// its deadline: said so, not as a negative count of seconds.
TEST_F(watcher_test, a_deadline_already_passed_is_said_to_have_passed) {
  preemption_watcher watcher{sys, service};
  auto a = join(0);
  ASSERT_TRUE(a);
  ASSERT_FALSE(record_notice(*a, 0, "signal:SIGTERM", -1500));
  EXPECT_EQ(watcher.preemption_message(),
            "rank 0: signal:SIGTERM received (source signal:SIGTERM, deadline passed)");
}

// A notice due as it came (a SIGTERM without a grace period) missed
// nothing. Seen: every generic SIGTERM's launcher line ended 'deadline passed'.
TEST_F(watcher_test, a_notice_without_a_grace_period_says_so_not_that_its_deadline_passed) {
  preemption_watcher watcher{sys, service};
  auto a = join(0);
  ASSERT_TRUE(a);
  ASSERT_FALSE(record_notice(*a, 0, "signal:SIGTERM", 0));
  EXPECT_EQ(watcher.preemption_message(),
            "rank 0: signal:SIGTERM received (source signal:SIGTERM, deadline at once: no grace "
            "period)");
}

TEST_F(watcher_test, a_garbled_record_is_skipped) {
  preemption_watcher watcher{sys, service};
  auto a = join(0);
  ASSERT_TRUE(a);
  ASSERT_FALSE(a->insert(notice_key_prefix + std::string{"0"}, "\xff\xff\xff\xff garbage"));
  EXPECT_EQ(watcher.preemption_message(), "");
}

TEST_F(watcher_test, block_until_worker_exit_returns_once_every_joined_worker_left) {
  preemption_watcher watcher{sys, service};
  auto a = join(0);
  auto b = join(3);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(watcher.block_until_worker_exit(still_waiting));
  ASSERT_FALSE(a->leave());
  EXPECT_FALSE(watcher.block_until_worker_exit(still_waiting));
  ASSERT_FALSE(b->leave());
  EXPECT_TRUE(watcher.block_until_worker_exit(exit_bound));
  EXPECT_EQ(watcher.workers_present(), 0);
}

TEST_F(watcher_test, a_watcher_started_late_still_waits_for_every_worker) {
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  preemption_watcher watcher{sys, service};
  ASSERT_FALSE(a->leave());
  EXPECT_FALSE(watcher.block_until_worker_exit(still_waiting));
  ASSERT_FALSE(b->leave());
  EXPECT_TRUE(watcher.block_until_worker_exit(exit_bound));
}

TEST_F(watcher_test, a_lost_worker_counts_as_gone) {
  preemption_watcher watcher{sys, service};
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  ASSERT_FALSE(a->leave());
  // Gone without a leave: its agent ends, and with it the connection.
  caf::anon_send_exit(b->agent(), caf::exit_reason::kill);
  EXPECT_TRUE(watcher.block_until_worker_exit(exit_bound));
}

// The launcher kills the process of a worker lost for its silence (it may
// be stopped or frozen): the ranks of a generation that fell silent, not
// those whose connection closed, that left or that joined again since.
TEST_F(watcher_test, silent_ranks_are_those_lost_for_their_silence_in_that_generation) {
  preemption_watcher watcher{sys, service};
  auto lost = [](int32_t rank, uint32_t generation, bool silent) {
    membership_event e{rank, membership_event::lost, static_cast<int32_t>(errc::peer_lost), "gone",
                       generation};
    e.silent = silent;
    return e;
  };
  caf::anon_send(watcher.actor(), lost(1, 0, true));
  caf::anon_send(watcher.actor(), lost(2, 0, false));
  caf::anon_send(watcher.actor(), lost(3, 0, true));
  caf::anon_send(watcher.actor(), membership_event{3, membership_event::joined, 0, {}, 1});
  caf::anon_send(watcher.actor(), lost(0, 1, true));
  // The watcher's events are handled in order: once the last one named the
  // first failure of generation 1, every one before it was handled.
  ASSERT_EQ(watcher.failure_message(1, exit_bound), "rank 0 was lost: gone");
  EXPECT_EQ(watcher.silent_ranks(0), std::vector<int32_t>{1});
  EXPECT_EQ(watcher.silent_ranks(1), std::vector<int32_t>{0});
  EXPECT_EQ(watcher.silent_ranks(2), std::vector<int32_t>{});
}

// The launcher names where a failure began: the workers that learnt of it
// exit 3 too, in any order, and its first exit says nothing.
TEST_F(watcher_test, the_failure_message_names_where_each_generations_failure_began) {
  preemption_watcher watcher{sys, service};
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(watcher.failure_message(0, still_waiting), "");
  a->report_error(static_cast<int32_t>(errc::peer_error), "boom at step 7");
  EXPECT_EQ(watcher.failure_message(0, exit_bound), "rank 0 failed: boom at step 7");
  // What follows the first failure is its consequence, not its cause. Once
  // both are gone, the watcher has seen every event before.
  b->report_error(static_cast<int32_t>(errc::peer_error), "rank 0 failed");
  caf::anon_send_exit(b->agent(), caf::exit_reason::kill);
  ASSERT_FALSE(a->leave());
  ASSERT_TRUE(watcher.block_until_worker_exit(exit_bound));
  EXPECT_EQ(watcher.failure_message(0, still_waiting), "rank 0 failed: boom at step 7");
  // The next generation starts with no failure, then has its own.
  EXPECT_EQ(watcher.failure_message(1, still_waiting), "");
  auto c = join(2, 1);
  ASSERT_TRUE(c);
  EXPECT_EQ(watcher.failure_message(1, still_waiting), "");
  caf::anon_send_exit(c->agent(), caf::exit_reason::kill);
  EXPECT_EQ(watcher.failure_message(1, exit_bound),
            "rank 2 was lost: connection closed without leave");
}

// The watcher's row on the coordinator's status page.
wire::ActorStatus row_of(caf::actor_system& sys, const preemption_watcher& watcher) {
  wire::ActorStatus out;
  caf::scoped_actor self{sys};
  self->request(watcher.actor(), exit_bound, status_atom::value)
      .receive([&](wire::ActorStatus& st) { out = std::move(st); },
               [&](caf::error& err) { ADD_FAILURE() << to_string(err); });
  return out;
}

TEST_F(watcher_test, its_status_row_follows_the_notice_and_the_exits) {
  preemption_watcher watcher{sys, service};
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  auto row = row_of(sys, watcher);
  EXPECT_EQ(row.name(), preemption_watcher_name);
  EXPECT_EQ(row.state(), preemption_state::no_notice);
  EXPECT_EQ(row.preemption().notice_rank(), -1);
  EXPECT_EQ(row.preemption().message(), "");

  ASSERT_FALSE(record_notice(*b, 1, "signal:SIGTERM", 600'000));
  row = row_of(sys, watcher);
  EXPECT_EQ(row.state(), "notice from rank 1");
  EXPECT_EQ(row.preemption().state(), preemption_state::notice);
  EXPECT_EQ(row.preemption().notice_rank(), 1);
  EXPECT_EQ(row.preemption().source(), "signal:SIGTERM");
  EXPECT_GT(row.preemption().deadline_unix_ms(), static_cast<double>(unix_now_ms()));
  // The message counts the seconds left, so the two reads may differ by the
  // second that passed between them: compare what comes before the count.
  auto before_count = [](const std::string& m) { return m.substr(0, m.find("deadline in")); };
  EXPECT_EQ(before_count(row.preemption().message()),
            "rank 1: signal:SIGTERM received (source signal:SIGTERM, ");
  EXPECT_EQ(before_count(watcher.preemption_message()), before_count(row.preemption().message()));
  EXPECT_EQ(row.metrics().at("workers_present"), 2);

  // The membership event reaches the watcher alongside the leave's reply:
  // asked until it tells, within the bound.
  ASSERT_FALSE(a->leave());
  auto until = std::chrono::steady_clock::now() + exit_bound;
  do {
    row = row_of(sys, watcher);
  } while (row.state() != preemption_state::waiting && std::chrono::steady_clock::now() < until);
  EXPECT_EQ(row.state(), preemption_state::waiting);
  EXPECT_EQ(row.metrics().at("workers_present"), 1);
  ASSERT_FALSE(b->leave());
  ASSERT_TRUE(watcher.block_until_worker_exit(exit_bound));
  EXPECT_EQ(row_of(sys, watcher).state(), preemption_state::exited);
}

// A notice the watcher's process raises reaches every worker on the
// protocol's channel and is shown as the coordinator's until a worker
// records one of its own.
TEST_F(watcher_test, a_raised_notice_reaches_every_worker_and_shows_until_one_of_theirs) {
  preemption_watcher watcher{sys, service};
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  caf::scoped_actor subscriber{sys};
  a->subscribe(subscriber);
  b->subscribe(subscriber);
  auto deadline = unix_now_ms() + 600'000;
  watcher.raise_notice("signal:SIGTERM", "the coordinator is going away", deadline);
  for (int copy = 0; copy < 2; ++copy)
    subscriber->receive(
        [&](const peer_message& msg) {
          EXPECT_EQ(expect_raised_notice(msg, "signal:SIGTERM"), deadline);
        },
        caf::after(exit_bound) >> [&] { ADD_FAILURE() << "copy " << copy << " never came"; });
  EXPECT_EQ(watcher.preemption_message().rfind(
                "the coordinator: the coordinator is going away (source signal:SIGTERM, deadline "
                "in ",
                0),
            0u)
      << watcher.preemption_message();
  EXPECT_EQ(row_of(sys, watcher).state(), "notice from the coordinator");
  ASSERT_FALSE(record_notice(*b, 1, "signal:SIGTERM", 600'000));
  EXPECT_EQ(watcher.preemption_message().rfind("rank 1: ", 0), 0u) << watcher.preemption_message();
}

TEST_F(watcher_test, without_any_worker_it_waits_for_one) {
  preemption_watcher watcher{sys, service};
  EXPECT_FALSE(watcher.block_until_worker_exit(still_waiting));
}

}  // namespace
