#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/duration_estimate.hpp"
#include "actors/preemption/phase.hpp"
#include "actors/preemption/step_gate.hpp"
#include "messages/preemption.pb.h"

namespace lifeboat {

/// A protocol message and its destination: a rank, or every_other_rank for
/// what the leader sends to all and takes itself as it sends.
struct outgoing {
  int32_t to;
  wire::ProtocolMessage message;
};

constexpr int32_t leader_rank = 0;

/// A platform kills the process at the deadline; the final save's schedule
/// keeps at least this much between the process's end and the deadline, for
/// what no measurement foresees (a clock step, a slow kernel teardown, a
/// notice that was late itself): the larger of 1 s and 5% of the grace period.
constexpr int64_t min_exit_margin_ms = 1000;
constexpr double exit_margin_share = 0.05;

/// The step time is sampled over windows of at least this long.
constexpr int64_t step_sample_ms = 1000;

/// From the final commit to the process's end, beyond the cluster round trip
/// measured (the commit reaching every worker, their leaving): stopping the
/// actors, flushing, the process's teardown. Measured with lifeboat-demo, 2
/// workers of 4 MiB: about 70 ms from the final manifest to both processes gone.
constexpr int64_t exit_allowance_ms = 100;

/// The step resolver's logic, without actors, sockets or clocks: every input
/// carries the current time and every output is a message to send, so tests
/// drive it directly.
///
/// The protocol, in the order it runs:
///   1. A worker gets a notice and sends it to the leader (rank 0); the
///      earliest deadline known anywhere wins. Only the leader acts on a
///      notice, so only it must hear of one at once: a fan-out to every worker
///      here would be a whole hop on the way to the decision.
///   2. The leader asks every worker for its step (StepQuery); the query
///      carries the deadline. The leader answers its own query at once and
///      takes its own commit (step 4) as it sends it, so both go to every
///      other rank: a copy back would cross the leader's busiest thread in the
///      middle of the round. A notice that starts no round (one is open, or
///      the first save is decided) the leader relays to every other worker.
///   3. Every worker holds its trainer at the step it is in (completed + 1;
///      the trainer waits there) and reports that stop step with its measured
///      step and checkpoint times (StepReport).
///   4. The leader commits the furthest stop step (StepCommit): no trainer is
///      past it, so every one reaches it; it is final when there is no grace
///      period or the deadline is too close for another round.
///   5. Every worker moves its trainer's stop step to the committed one and
///      saves there.
///   6. With a grace period the first save is not final: the leader schedules
///      the final round at deadline - exit margin - safety * (round trip +
///      step time + checkpoint time + exit time), earlier if an earlier
///      deadline arrives, and runs 2-5 again with final set. Each time is a
///      robust estimate (duration_estimate), so one slow sample on a loaded
///      host does not move the final save far earlier.
/// A periodic backup save (no notice) runs 2-5 without final; a notice that
/// arrives during its round or while it is written makes it that notice's
/// first save. No round starts while a non-final save is being written.
///
/// Lifetime: owned by the step resolver's actor state (or a test); the gate
/// it is constructed with and config::publish_to must outlive it (the actor
/// state shares both and declares them before it). Thread-safety: not
/// thread-safe; the resolver calls it from its own thread only.
class step_resolver_state {
 public:
  struct config {
    int32_t rank = 0;
    int32_t world_size = 1;
    int64_t grace_period_ms = 0;
    double safety_factor = 2.0;
    // Leader only: a backup save this often (0: none).
    int64_t backup_interval_ms = 0;
    // Where every change of phase is published too (none: nowhere).
    published_phase* publish_to = nullptr;
  };

  step_resolver_state(config cfg, step_gate& gate);

  /// Step 1: a notice from this worker's own watchers.
  std::vector<outgoing> on_local_notice(wire::Notice notice, int64_t now_ms);

  /// Any protocol message from a peer (or from itself through the service).
  /// A notice raised by the process hosting the service (from
  /// service_sender) is due at its deadline (when that process stops
  /// serving; 0: none) or when this worker's grace period from now ends,
  /// whichever comes first: no later than a notice of this worker's own.
  std::vector<outgoing> on_message(const wire::ProtocolMessage& msg, int64_t now_ms);

  /// A worker failed or was lost: from now on this worker starts, answers
  /// and commits no round (no checkpoint after a failure), whatever comes.
  void on_failure() { failed_ = true; }

  /// Step 6: the leader's timer for the final save fired.
  std::vector<outgoing> on_final_save_due(int64_t now_ms);

  /// The leader's periodic check: once `backup_interval_ms` passed since the
  /// first check (or the last backup), runs 2-5 for a save that is neither a
  /// notice's nor final. Nothing while a notice is known or a round is open.
  std::vector<outgoing> on_backup_check(int64_t now_ms);

  /// The trainer measured a step / the writer measured a checkpoint (seconds).
  /// A step time measured over a span in which the trainer was held (by a
  /// round or a save) is no training step and is dropped.
  void record_step_seconds(double seconds);
  /// The trainer's completed step as the resolver's tick sees it: once a
  /// window of at least step_sample_ms passed and the step moved in it, its
  /// mean step time is recorded (a step longer than a window is one sample,
  /// the window then as long as the step). The
  /// first window starts only once the step has moved from the first one seen,
  /// as the start (joining, restoring) is no training step.
  void sample_completed_step(int64_t completed_step, int64_t now_ms);
  void record_checkpoint_seconds(double seconds);

  /// The trainer began saving the committed step / the save was committed.
  void on_save_started();
  void on_save_committed(bool final_save);

  /// When the leader wants on_final_save_due called (unix ms), if at all.
  std::optional<int64_t> final_save_due_ms() const { return final_due_ms_; }

  /// The terms of the schedule (step 6), as the leader knows them now: the
  /// estimates (seconds; the cluster's slowest worker for step and checkpoint),
  /// the margin kept before the deadline, and the time one more save cycle
  /// needs with the safety factor applied.
  double step_seconds() const;
  double checkpoint_seconds() const;
  double round_seconds() const { return round_seconds_.seconds(); }
  double exit_seconds() const { return round_seconds() + exit_allowance_ms / 1000.0; }
  int64_t exit_margin_ms() const;
  int64_t save_cycle_ms() const;

  lifeboat::phase phase() const { return phase_; }
  int64_t deadline_ms() const { return deadline_ms_; }
  int64_t agreed_step() const { return agreed_step_; }
  /// Whether the last agreed save is the final one.
  bool agreed_final() const { return agreed_final_; }
  /// How many commits this worker took (a new one: a new agreement to log).
  uint64_t agreements() const { return agreements_; }
  uint64_t rounds() const { return round_; }
  bool is_leader() const { return cfg_.rank == leader_rank; }
  int32_t rank() const { return cfg_.rank; }

 private:
  // Moves to `next` and publishes it (config::publish_to).
  void enter(lifeboat::phase next);
  // Takes `deadline_ms` if it is earlier than the known one; says whether it did.
  bool adopt_deadline(int64_t deadline_ms);
  std::vector<outgoing> learn_notice(const wire::Notice& notice, int64_t now_ms);
  std::vector<outgoing> act_on_notice(int64_t now_ms);
  std::vector<outgoing> start_round(bool final_save, int64_t now_ms);
  wire::StepReport answer_query(const wire::StepQuery& query);
  std::vector<outgoing> on_report(const wire::StepReport& report, int64_t now_ms);
  void on_commit(const wire::StepCommit& commit, int64_t now_ms);

  // Whether the deadline leaves no room for another save cycle after now.
  bool too_close(int64_t now_ms) const;
  void schedule_final_save(int64_t now_ms);
  // A new step or checkpoint time during the countdown: the due time again.
  void reschedule_final_save();

  config cfg_;
  step_gate& gate_;
  bool failed_ = false;
  lifeboat::phase phase_ = phase::training;
  int64_t deadline_ms_ = 0;  // earliest known deadline; 0: no notice
  duration_estimate step_seconds_;
  duration_estimate checkpoint_seconds_;
  // Set when a round or a save holds the trainer: the step time sampled
  // across it is dropped.
  bool trainer_held_ = false;
  // The step sampling window: the first step seen (-1: none yet), and where
  // the current window started (0: not yet).
  int64_t first_seen_step_ = -1;
  int64_t sampled_step_ = 0;
  int64_t sampled_at_ms_ = 0;
  int64_t agreed_step_ = -1;
  bool agreed_final_ = false;
  uint64_t agreements_ = 0;

  // Leader only.
  uint64_t round_ = 0;
  bool round_open_ = false;
  bool round_final_ = false;
  bool first_save_decided_ = false;
  bool final_save_decided_ = false;
  std::map<int32_t, wire::StepReport> reports_;
  // The slowest worker's estimates in the latest round's reports.
  double cluster_step_seconds_ = 0;
  double cluster_checkpoint_seconds_ = 0;
  // From a query's start to its last report: the cluster's message latency.
  int64_t round_started_ms_ = 0;
  duration_estimate round_seconds_;
  std::optional<int64_t> final_due_ms_;
  int64_t last_backup_ms_ = 0;  // 0: the backup clock has not started
  // From a non-final commit until its SaveCommitted: no new round starts, as
  // its query would move the trainers' stop step before the committed one.
  bool save_in_flight_ = false;
};

}  // namespace lifeboat
