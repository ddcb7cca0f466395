#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "messages/status.pb.h"

namespace lifeboat {

/// The bounded in-memory history behind GET /rates, /timeline and
/// /checkpoints, without actors or clocks: the caller feeds samples of the
/// workers' steps and the decision events workers published, and asks for
/// the views. Not thread-safe: one owner (the job history actor, or a
/// worker's endpoint for one request).
class job_history_state {
 public:
  /// About five minutes of samples at one a second.
  static constexpr std::size_t max_rate_samples = 300;
  /// Events are kept for this many generations (restarts), the newest.
  static constexpr std::size_t max_generations = 8;
  static constexpr std::size_t max_checkpoints = 64;
  /// A rank's rate is taken over up to this many samples: its step moves
  /// once a heartbeat, about as often as the samples come, so the rate of
  /// one interval alone swings between 0 and twice the true one.
  static constexpr std::size_t rate_window = 5;

  /// The workers' steps (WorkerInfo.rank, .step, .state) at `unix_ms`: each
  /// rank's steps per second over its last rate_window samples; 0 for a rank
  /// that is not alive, has reported no step yet (0), whose step went back (a
  /// restart restored an earlier one) or that has no previous sample.
  void on_steps(double unix_ms, const std::vector<wire::WorkerInfo>& workers);

  /// Adds events not seen yet (by generation, rank and sequence number).
  void on_events(const std::vector<wire::DecisionEvent>& events);

  /// Values of the coordination service's decision_event_key_prefix keys.
  void on_published(const std::map<std::string, std::string>& kv);

  wire::StepRates rates() const;

  /// The newest generation in which some worker saw a notice, one lane per
  /// rank with its events from its first after a notice; ms counted from
  /// the earliest notice (or the earliest event, if no notice came through).
  wire::Timeline timeline() const;

  /// Shards grouped by generation and step, oldest first, at most max_checkpoints.
  wire::CheckpointList checkpoints() const;

 private:
  using event_key = std::tuple<uint32_t, int32_t, uint32_t>;  // generation, rank, seq

  struct sample {
    double unix_ms = 0;
    std::map<int32_t, double> rates;
  };

  std::deque<sample> samples_;
  // rank -> its last samples (unix_ms, step), at most rate_window + 1
  std::map<int32_t, std::deque<std::pair<double, int64_t>>> recent_;
  std::map<event_key, wire::DecisionEvent> events_;
};

}  // namespace lifeboat
