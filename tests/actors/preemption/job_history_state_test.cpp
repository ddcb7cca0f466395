// The history behind /rates, /timeline and /checkpoints
// (actors/preemption/job_history_state.cpp), fed by hand.

#include "actors/preemption/job_history_state.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/preemption/decision_recorder.hpp"

namespace lifeboat {
namespace {

wire::WorkerInfo at(int32_t rank, int64_t step) {
  wire::WorkerInfo w;
  w.set_rank(rank);
  w.set_step(step);
  w.set_state("alive");
  return w;
}

wire::DecisionEvent event(uint32_t generation, int32_t rank, uint32_t seq, const char* name,
                          double unix_ms, double step = -1, bool after_notice = true) {
  wire::DecisionEvent e;
  e.set_generation(generation);
  e.set_rank(rank);
  e.set_seq(seq);
  e.set_event(name);
  e.set_unix_ms(unix_ms);
  e.set_step(step);
  e.set_after_notice(after_notice);
  return e;
}

wire::DecisionEvent shard(uint32_t generation, int32_t rank, uint32_t seq, double step,
                          double seconds, double bytes, bool after_notice) {
  auto e =
      event(generation, rank, seq, decision_event::shard_durable, 1000 + seq, step, after_notice);
  e.set_seconds(seconds);
  e.set_bytes(bytes);
  return e;
}

std::vector<double> rates_of(const wire::StepRates& r, int index) {
  return {r.ranks(index).steps_per_s().begin(), r.ranks(index).steps_per_s().end()};
}

TEST(job_history_state, rates_show_a_straggler_and_a_restart_as_zero) {
  job_history_state h;
  h.on_steps(1000, {at(0, 100), at(1, 100)});
  h.on_steps(2000, {at(0, 150), at(1, 110)});
  h.on_steps(3000, {at(0, 20), at(1, 120)});  // rank 0 restored step 20
  h.on_steps(4000, {at(0, 60), at(1, 130)});
  auto r = h.rates();
  ASSERT_EQ(r.unix_ms_size(), 4);
  ASSERT_EQ(r.ranks_size(), 2);
  EXPECT_EQ(r.ranks(0).rank(), 0);
  EXPECT_EQ(rates_of(r, 0), (std::vector<double>{0, 50, 0, 40}));
  EXPECT_EQ(rates_of(r, 1), (std::vector<double>{0, 10, 10, 10}));
}

TEST(job_history_state, a_rate_is_taken_over_the_window_not_one_heartbeat) {
  job_history_state h;
  // The step moves every other sample: 20 steps a heartbeat, 10 a second.
  for (int i = 0; i < 8; ++i) h.on_steps(1000.0 * i, {at(0, 100 + 20 * (i / 2))});
  auto rates = rates_of(h.rates(), 0);
  ASSERT_EQ(rates.size(), 8u);
  // Once the window is full (5 samples back), every rate is 8 or 12, not 0 or 20.
  for (std::size_t i = job_history_state::rate_window; i < rates.size(); ++i)
    EXPECT_TRUE(rates[i] == 8 || rates[i] == 12) << i << ": " << rates[i];
}

TEST(job_history_state, a_rank_without_a_heartbeat_after_a_restart_has_no_rate) {
  job_history_state h;
  h.on_steps(1000, {at(0, 100)});
  auto joining = at(0, 0);
  joining.set_state("joining");
  h.on_steps(2000, {joining});
  h.on_steps(3000, {at(0, 0)});  // joined, no heartbeat yet
  h.on_steps(4000, {at(0, 90)});
  h.on_steps(5000, {at(0, 120)});
  auto r = h.rates();
  EXPECT_EQ(rates_of(r, 0), (std::vector<double>{0, 0, 0, 0, 30}));
}

TEST(job_history_state, keeps_at_most_max_rate_samples) {
  job_history_state h;
  for (std::size_t i = 0; i < job_history_state::max_rate_samples + 10; ++i)
    h.on_steps(static_cast<double>(i) * 1000, {at(0, static_cast<int64_t>(i) + 1)});
  auto r = h.rates();
  EXPECT_EQ(r.unix_ms_size(), static_cast<int>(job_history_state::max_rate_samples));
  EXPECT_EQ(r.unix_ms(0), 10000);
}

TEST(job_history_state, the_timeline_is_the_newest_decision_one_lane_per_rank) {
  job_history_state h;
  // Generation 0: a decision; generation 1: a backup only, then a decision.
  h.on_events({event(0, 0, 0, "notice", 500), event(0, 0, 1, "exit", 900, 7)});
  h.on_events({event(1, 1, 0, "snapshot", 1500, 10, false), event(1, 1, 1, "notice", 2000),
               event(1, 0, 0, "notice", 2010), event(1, 1, 2, "query", 2030),
               event(1, 0, 1, "report", 2040, 12), event(1, 0, 2, "agreement", 2041, 12),
               event(1, 1, 3, "agreement", 2050, 12), event(1, 1, 4, "exit", 2400, 12)});
  auto t = h.timeline();
  EXPECT_EQ(t.generation(), 1u);
  EXPECT_EQ(t.notice_unix_ms(), 2000);
  ASSERT_EQ(t.lanes_size(), 2);
  EXPECT_EQ(t.lanes(0).rank(), 0);
  ASSERT_EQ(t.lanes(0).events_size(), 3);
  EXPECT_EQ(t.lanes(0).events(0).event(), "notice");
  EXPECT_EQ(t.lanes(0).events(0).ms(), 10);
  EXPECT_EQ(t.lanes(0).events(2).step(), 12);
  // The backup's snapshot before the notice is no part of the decision.
  ASSERT_EQ(t.lanes(1).events_size(), 4);
  EXPECT_EQ(t.lanes(1).events(0).ms(), 0);
  EXPECT_EQ(t.lanes(1).events(3).event(), "exit");
  EXPECT_EQ(t.lanes(1).events(3).ms(), 400);
}

TEST(job_history_state, no_decision_no_timeline) {
  job_history_state h;
  h.on_events({event(0, 0, 0, "snapshot", 100, 5, false)});
  EXPECT_EQ(h.timeline().lanes_size(), 0);
  EXPECT_EQ(h.timeline().notice_unix_ms(), 0);
}

TEST(job_history_state, checkpoints_group_shards_by_generation_and_step) {
  job_history_state h;
  h.on_events({shard(0, 0, 0, 10, 0.5, 2e6, false), shard(0, 1, 0, 10, 1.0, 2e6, false),
               shard(0, 0, 1, 20, 0.25, 1e6, true), shard(1, 0, 0, 30, 0.5, 1e6, false)});
  auto c = h.checkpoints();
  ASSERT_EQ(c.checkpoints_size(), 3);
  const auto& first = c.checkpoints(0);
  EXPECT_EQ(first.step(), 10);
  EXPECT_EQ(first.seconds(), 1.0);
  EXPECT_EQ(first.bytes(), 4e6);
  EXPECT_EQ(first.mb_per_s(), 4.0);
  EXPECT_EQ(first.shards(), 2);
  EXPECT_FALSE(first.after_notice());
  EXPECT_TRUE(c.checkpoints(1).after_notice());
  EXPECT_EQ(c.checkpoints(2).generation(), 1u);
}

TEST(job_history_state, events_seen_twice_count_once_and_old_generations_go) {
  job_history_state h;
  h.on_events({shard(0, 0, 0, 10, 0.5, 1, false)});
  h.on_events({shard(0, 0, 0, 10, 0.5, 1, false)});
  EXPECT_EQ(h.checkpoints().checkpoints(0).shards(), 1);
  for (uint32_t g = 1; g <= job_history_state::max_generations; ++g)
    h.on_events({shard(g, 0, 0, 10 + g, 0.5, 1, false)});
  auto c = h.checkpoints();
  ASSERT_EQ(c.checkpoints_size(), static_cast<int>(job_history_state::max_generations));
  EXPECT_EQ(c.checkpoints(0).generation(), 1u);
}

TEST(job_history_state, published_values_that_do_not_parse_are_skipped) {
  job_history_state h;
  h.on_published(
      {{"lifeboat/status/event/0/0", shard(0, 0, 0, 10, 1, 1, false).SerializeAsString()},
       {"lifeboat/status/event/0/1", "\xff\xff garbage"}});
  EXPECT_EQ(h.checkpoints().checkpoints_size(), 1);
}

}  // namespace
}  // namespace lifeboat
