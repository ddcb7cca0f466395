// A worker's record of a decision (actors/preemption/decision_recorder.cpp):
// what it keeps, which events are marked as following a notice, and which
// ones it hands to the publisher.

#include "actors/preemption/decision_recorder.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lifeboat {
namespace {

wire::ProtocolMessage query(int64_t deadline_unix_ms) {
  wire::ProtocolMessage msg;
  msg.mutable_query()->set_deadline_unix_ms(deadline_unix_ms);
  return msg;
}

class decision_recorder_test : public ::testing::Test {
 protected:
  void SetUp() override {
    rec_.configure(2, 3, [this](const wire::DecisionEvent& e) { published_.push_back(e); });
  }

  decision_recorder rec_;
  std::vector<wire::DecisionEvent> published_;
};

TEST_F(decision_recorder_test, a_backup_publishes_only_its_shard) {
  rec_.on_message(query(0));
  rec_.on_agreement(10, true);
  rec_.on_snapshot(10);
  rec_.on_shard_durable(10, 0.25, 4096);
  auto kept = rec_.events();
  ASSERT_EQ(kept.size(), 4u);
  for (const auto& e : kept) EXPECT_FALSE(e.after_notice()) << e.event();
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0].event(), decision_event::shard_durable);
  EXPECT_EQ(published_[0].rank(), 2);
  EXPECT_EQ(published_[0].generation(), 3u);
  EXPECT_EQ(published_[0].seq(), 3u);
  EXPECT_EQ(published_[0].step(), 10);
  EXPECT_EQ(published_[0].seconds(), 0.25);
  EXPECT_EQ(published_[0].bytes(), 4096);
}

TEST_F(decision_recorder_test, a_query_with_a_deadline_starts_a_decision_that_is_published) {
  rec_.on_message(query(123));
  rec_.on_agreement(20, false);
  rec_.on_snapshot(20);
  rec_.on_shard_durable(20, 0.5, 10);
  rec_.on_committed(20);
  rec_.on_exit(20);
  std::vector<std::string> names;
  for (const auto& e : published_) {
    names.push_back(e.event());
    EXPECT_TRUE(e.after_notice()) << e.event();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"query", "agreement", "snapshot", "shard durable",
                                             "commit", "exit"}));
  EXPECT_EQ(published_.back().step(), 20);
}

TEST_F(decision_recorder_test, a_commit_message_is_left_to_the_agreement_the_resolver_records) {
  wire::ProtocolMessage msg;
  msg.mutable_commit()->set_step(5);
  rec_.on_message(msg);
  EXPECT_TRUE(rec_.events().empty());
}

TEST_F(decision_recorder_test, a_save_committed_is_left_to_on_committed) {
  wire::ProtocolMessage msg;
  msg.mutable_committed()->set_step(5);
  rec_.on_message(msg);
  EXPECT_TRUE(rec_.events().empty());
}

// The leader takes a report from every worker: only the round's last is an
// event (and a key in the coordination service).
TEST_F(decision_recorder_test, of_the_reports_only_the_one_that_completes_the_round_is_recorded) {
  rec_.on_message(query(123));
  wire::ProtocolMessage msg;
  for (int64_t stop : {7, 9, 8}) {
    msg.mutable_report()->set_stop_step(stop);
    rec_.on_message(msg);
  }
  rec_.on_round_completed(msg.report());
  ASSERT_EQ(published_.size(), 2u);
  EXPECT_EQ(published_[1].event(), decision_event::report);
  EXPECT_EQ(published_[1].step(), 8);
}

TEST_F(decision_recorder_test, its_own_notice_and_the_leaders_agreement_follow_a_notice) {
  rec_.on_notice();
  rec_.on_agreement(30, false);
  ASSERT_EQ(published_.size(), 2u);
  EXPECT_EQ(published_[0].event(), decision_event::notice);
  EXPECT_EQ(published_[0].step(), -1);
  EXPECT_EQ(published_[1].event(), decision_event::agreement);
  EXPECT_EQ(published_[1].step(), 30);
  EXPECT_GE(published_[1].unix_ms(), published_[0].unix_ms());
}

TEST_F(decision_recorder_test, keeps_at_most_max_events_and_a_new_generation_starts_afresh) {
  for (std::size_t i = 0; i < decision_recorder::max_events + 5; ++i)
    rec_.on_snapshot(static_cast<int64_t>(i));
  auto kept = rec_.events();
  ASSERT_EQ(kept.size(), decision_recorder::max_events);
  EXPECT_EQ(kept.front().step(), 5);
  rec_.configure(2, 4, {});
  EXPECT_TRUE(rec_.events().empty());
  rec_.on_notice();
  ASSERT_EQ(rec_.events().size(), 1u);
  EXPECT_EQ(rec_.events()[0].seq(), 0u);
  EXPECT_EQ(rec_.events()[0].generation(), 4u);
}

}  // namespace
}  // namespace lifeboat
