#include "actors/preemption/job_history_state.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "actors/preemption/decision_recorder.hpp"

namespace lifeboat {

namespace {

constexpr double ms_per_second = 1000.0;
constexpr double bytes_per_mb = 1e6;
// The coordination service's WorkerInfo.state of a rank that trains.
constexpr const char* alive_state = "alive";

}  // namespace

void job_history_state::on_steps(double unix_ms, const std::vector<wire::WorkerInfo>& workers) {
  sample s;
  s.unix_ms = unix_ms;
  for (const auto& w : workers) {
    // A rank not training (joining, gone) or without a heartbeat yet (step
    // 0 after a restart) has no rate, and the next sample starts afresh.
    auto& recent = recent_[w.rank()];
    if (w.state() != alive_state || w.step() == 0 ||
        (!recent.empty() && w.step() < recent.back().second))
      recent.clear();
    double rate = 0;
    if (!recent.empty() && unix_ms > recent.front().first)
      rate = static_cast<double>(w.step() - recent.front().second) * ms_per_second /
             (unix_ms - recent.front().first);
    s.rates[w.rank()] = rate;
    if (w.state() == alive_state && w.step() != 0) recent.emplace_back(unix_ms, w.step());
    if (recent.size() > rate_window) recent.pop_front();
  }
  if (samples_.size() == max_rate_samples) samples_.pop_front();
  samples_.push_back(std::move(s));
}

void job_history_state::on_events(const std::vector<wire::DecisionEvent>& events) {
  for (const auto& e : events) events_.emplace(event_key{e.generation(), e.rank(), e.seq()}, e);
  // Forget whole generations, the oldest first.
  std::set<uint32_t> generations;
  for (const auto& [key, e] : events_) generations.insert(std::get<0>(key));
  while (generations.size() > max_generations) {
    auto oldest = *generations.begin();
    generations.erase(generations.begin());
    events_.erase(events_.begin(), events_.lower_bound(event_key{oldest + 1, INT32_MIN, 0}));
  }
}

void job_history_state::on_published(const std::map<std::string, std::string>& kv) {
  std::vector<wire::DecisionEvent> events;
  for (const auto& [key, value] : kv) {
    wire::DecisionEvent e;
    if (e.ParseFromString(value)) events.push_back(std::move(e));
  }
  on_events(events);
}

wire::StepRates job_history_state::rates() const {
  wire::StepRates out;
  std::set<int32_t> ranks;
  for (const auto& s : samples_)
    for (const auto& [rank, rate] : s.rates) ranks.insert(rank);
  std::map<int32_t, wire::RankRates*> lanes;
  for (auto rank : ranks) {
    lanes[rank] = out.add_ranks();
    lanes[rank]->set_rank(rank);
  }
  for (const auto& s : samples_) {
    out.add_unix_ms(s.unix_ms);
    for (auto& [rank, lane] : lanes) {
      auto i = s.rates.find(rank);
      lane->add_steps_per_s(i != s.rates.end() ? i->second : 0);
    }
  }
  return out;
}

wire::Timeline job_history_state::timeline() const {
  wire::Timeline out;
  // The newest generation with a decision in it.
  const wire::DecisionEvent* last = nullptr;
  for (const auto& [key, e] : events_)
    if (e.after_notice()) last = &e;
  if (last == nullptr) return out;
  auto generation = last->generation();
  out.set_generation(generation);
  double start = 0;
  double earliest = 0;
  std::map<int32_t, std::vector<const wire::DecisionEvent*>> lanes;
  for (const auto& [key, e] : events_) {
    if (e.generation() != generation || !e.after_notice()) continue;
    lanes[e.rank()].push_back(&e);
    if (earliest == 0 || e.unix_ms() < earliest) earliest = e.unix_ms();
    if (e.event() == decision_event::notice && (start == 0 || e.unix_ms() < start))
      start = e.unix_ms();
  }
  if (start == 0) start = earliest;
  out.set_notice_unix_ms(start);
  for (auto& [rank, events] : lanes) {
    auto* lane = out.add_lanes();
    lane->set_rank(rank);
    // Sequence numbers order a rank's events even where two share a millisecond.
    for (const auto* e : events) {
      auto* entry = lane->add_events();
      entry->set_event(e->event());
      entry->set_ms(e->unix_ms() - start);
      entry->set_step(e->step());
    }
  }
  return out;
}

wire::CheckpointList job_history_state::checkpoints() const {
  std::map<std::pair<uint32_t, double>, wire::CheckpointRecord> grouped;
  for (const auto& [key, e] : events_) {
    if (e.event() != decision_event::shard_durable) continue;
    auto& c = grouped[{e.generation(), e.step()}];
    c.set_generation(e.generation());
    c.set_step(e.step());
    c.set_seconds(std::max(c.seconds(), e.seconds()));
    c.set_bytes(c.bytes() + e.bytes());
    c.set_after_notice(c.after_notice() || e.after_notice());
    c.set_shards(c.shards() + 1);
    c.set_unix_ms(std::max(c.unix_ms(), e.unix_ms()));
  }
  wire::CheckpointList out;
  auto skip = grouped.size() > max_checkpoints ? grouped.size() - max_checkpoints : 0;
  for (auto& [key, c] : grouped) {
    if (skip > 0) {
      --skip;
      continue;
    }
    if (c.seconds() > 0) c.set_mb_per_s(c.bytes() / bytes_per_mb / c.seconds());
    *out.add_checkpoints() = c;
  }
  return out;
}

}  // namespace lifeboat
