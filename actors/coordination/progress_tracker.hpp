#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace lifeboat {

/// Follows each rank's completed step as its heartbeats report it, without
/// clocks or sockets (every input carries the time), and says which rank is
/// hung and which is a straggler. Heartbeats come from a worker's I/O thread,
/// so a worker whose training thread is stuck still looks alive; its step does
/// not. Lifetime: owned by the coordination service's state, a plain value.
/// Thread-safety: not thread-safe.
///
/// Hung: a rank whose own heartbeat says its step has not moved for the hang
/// timeout (the step's age, which the worker samples every 50 ms and sends
/// with each heartbeat, and at once when it passes the timeout), while a peer
/// is past it (in a synchronous job its peers wait for it, one step ahead, in
/// a collective or at a barrier). Only a heartbeat's word counts: the service's
/// view of a rank is up to a heartbeat interval old, and a rank it has not
/// heard from for a while is not stuck for that (a silent one is lost, by the
/// heartbeat timeout). Time a rank spends saving is not counted.
/// Hung together: no rank's step has moved for the configured hang timeout,
/// every rank advanced since its start (a first step may compile for long),
/// all are at the same step, and at least one is inside its next step (so
/// waiting in a collective: ranks all between steps are in the user's own
/// pause, an evaluation say). The ranks between steps are the ones the
/// others wait for; with none, every rank is in its step and none can be
/// told from the others (one stuck before a collective holds the rest in
/// it). A rank whose training loop ended (finished) counts as between steps,
/// and is named first: it runs no step more. Under the adaptive timeout only
/// where a rank's loop ended (ranks that run uneven numbers of steps): a long
/// step of every rank alone (a recompilation) is no sign of a hang.
///
/// The hang timeout is the configured one, or, unset, the larger of
/// adaptive_hang_factor times the cluster's median step time and
/// adaptive_hang_floor_ms. Zero turns detection off.
///
/// Step time: each advance seen by a heartbeat gives one sample (the time
/// since the previous advance, less the time the worker was blocked in
/// lifeboat's own barriers meanwhile, over the steps it covers; a worker that
/// waits for a slow peer at a barrier is not slow itself); the first
/// warmup_steps steps (start-up, compilation) and advances across a save
/// give none. A rank's median over its last window_samples samples above
/// straggler_factor times the cluster's median makes it a straggler.
class progress_tracker {
 public:
  static constexpr int64_t adaptive_hang_timeout = -1;
  static constexpr int64_t adaptive_hang_factor = 10;
  static constexpr int64_t adaptive_hang_floor_ms = 30'000;
  static constexpr int64_t warmup_steps = 3;
  static constexpr size_t window_samples = 64;
  static constexpr double straggler_factor = 1.5;

  /// `hang_timeout_ms`: adaptive_hang_timeout, 0 (off) or a bound in ms.
  progress_tracker(int32_t world_size, int64_t hang_timeout_ms);

  void set_hang_timeout_ms(int64_t hang_timeout_ms) { configured_timeout_ms_ = hang_timeout_ms; }

  /// A heartbeat of `rank` said it completed `step` `step_age_ms` ago and
  /// was blocked in barriers for `blocked_ms` in all; `saving` when it said
  /// it is paused (Heartbeat.paused: in a save), whose time is no step time
  /// and no hang; `in_step` when it is inside its next step (Heartbeat.in_step),
  /// `finished` when its training loop ended (Heartbeat.finished).
  void on_heartbeat(int32_t rank, int64_t step, int64_t blocked_ms, bool saving, int64_t now_ms,
                    int64_t step_age_ms = 0, bool in_step = false, bool finished = false);

  /// `rank` is no longer followed (it left, was lost or failed).
  void forget(int32_t rank);

  /// A rank starts afresh (a new generation).
  void reset();

  struct hang {
    int32_t rank = -1;
    int64_t step = 0;        // its last completed step
    int64_t stuck_ms = 0;    // since that step was completed, as its heartbeat said
    int64_t peers_step = 0;  // the furthest step of a peer
  };
  /// Whether `rank`, after its latest heartbeat, is hung.
  std::optional<hang> find_hang(int32_t rank) const;

  struct job_hang {
    int64_t step = 0;               // every rank's last completed step
    int64_t stuck_ms = 0;           // the youngest rank's step age
    std::vector<int32_t> outside;   // the ranks between steps (none: all in one)
    std::vector<int32_t> finished;  // of those, the ones whose training loop ended
  };
  /// Whether the ranks, after `rank`'s latest heartbeat, are hung together.
  /// A pass over every rank, once `rank`'s own step is old enough.
  std::optional<job_hang> find_job_hang(int32_t rank) const;

  /// The hang timeout in force (0: off).
  int64_t hang_timeout_ms() const;

  struct step_stats {
    double median_seconds = 0;  // 0: no sample yet
    double p99_seconds = 0;
    bool straggler = false;
  };
  /// `rank`'s step times, held against `cluster_median_ms` (computed once
  /// for all ranks: it costs a pass over every rank's samples).
  step_stats stats(int32_t rank, double cluster_median_ms) const;

  /// The median of the ranks' median step times (ms); of an even count the
  /// lower middle one, so one slow rank of two does not raise its own
  /// reference. 0 before any sample.
  double cluster_median_ms() const;

  /// Ranks that became stragglers since the last call (each once per episode:
  /// a rank must stop being one before it is reported again).
  std::vector<int32_t> take_new_stragglers();

 private:
  struct rank_progress {
    bool followed = false;
    int64_t step = -1;
    int64_t advanced_ms = 0;         // when `step` was completed, as the worker saw it
    int64_t blocked_ms = 0;          // the worker's blocked time then
    int64_t step_age_ms = 0;         // how long `step` had not moved, by the latest heartbeat
    int64_t age_at_save_end_ms = 0;  // of this step: its age when a save ended
    bool saving = false;
    bool sample_from_here = false;  // the last advance may start a sample
    std::deque<double> samples_ms;
    bool straggler_reported = false;
    int64_t first_step = -1;  // its step when it was first followed
    bool in_step = false;
    bool finished = false;
  };

  double median_ms(const rank_progress& p) const;

  int64_t configured_timeout_ms_;
  std::vector<rank_progress> ranks_;
};

}  // namespace lifeboat
