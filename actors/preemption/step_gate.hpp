#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>

namespace lifeboat {

/// The rendezvous between the training thread and the actors. The trainer
/// publishes each completed step and stops at `action_step` (a save, or a
/// failure); the step resolver moves `action_step` and decides there.
///
/// Why a proposal can be refused: the resolver stores the target and then
/// reads the completed step, the trainer stores the completed step and then
/// reads the target (both seq_cst). If the resolver reads a completed step
/// below the target, the trainer is guaranteed to stop at the target. If it
/// reads exactly the target, the trainer stopped there only if it says so
/// (`stopped_at_`); otherwise it has gone past, and `hold_next_step` tries
/// the step after.
///
/// Thread-safety: thread-safe; the training thread calls the trainer's side,
/// the actors (resolver, exit controller) the actors' side, the runtime both
/// from the training thread. Lifetime: the runtime creates it and shares it
/// with the actors (std::shared_ptr); the two atomics it is constructed with
/// (the handler's) must outlive it, which they do since the handler stops
/// the actors before they go.
class step_gate {
 public:
  static constexpr int64_t no_step = std::numeric_limits<int64_t>::max();

  step_gate(std::atomic<int64_t>& completed_step, std::atomic<int64_t>& action_step);

  // -- the actors' side ------------------------------------------------------

  struct probe {
    int64_t completed;
    bool accepted;  // the trainer will stop at the proposed step
  };

  /// Asks the trainer to stop at `step` for a decision; says whether it will.
  probe propose(int64_t step);

  /// Stops the trainer at the first step it has not completed (the one it
  /// is in) and returns that step; it waits there for a commit.
  int64_t hold_next_step();

  /// The cluster agreed: save at `step` (and exit afterwards if `final_save`),
  /// with the notice's deadline (0: none) for the final save's choice of tiers.
  void commit(int64_t step, bool final_save, int64_t deadline_unix_ms = 0);

  /// A worker failed: the trainer raises at its next step boundary.
  void fail(int32_t origin_rank, std::string message, bool lost);

  /// The final save is committed: the trainer may exit with `code`.
  void allow_exit(int code);

  int64_t completed_step() const { return completed_.load(std::memory_order_seq_cst); }

  /// Saves every `n` steps without a notice (0: never), counted from `from`.
  void set_backup_interval(int64_t n);

  // -- the training thread's side ---------------------------------------------

  enum class action_kind { resume, save, fail };

  struct action {
    action_kind kind = action_kind::resume;
    int64_t step = 0;
    bool final_save = false;
    int64_t deadline_unix_ms = 0;  // of a final save after a notice; else 0
  };

  /// Called when the trainer completed `step` and `step >= action_step`:
  /// blocks until the trainer may go on, must save at `step`, or must fail.
  action at_boundary(int64_t step);

  struct exit_decision {
    bool allowed = false;  // false: failed (see failure()) or timed out
    int code = 0;
  };

  /// After handing the final save over: waits until it is committed.
  exit_decision await_exit(std::chrono::milliseconds bound);

  /// The step the trainer waits at for a decision, or -1.
  int64_t waiting_at() const;

  struct failure_info {
    bool failed = false;
    int32_t origin_rank = -1;
    std::string message;
    bool lost = false;
  };
  failure_info failure() const;

 private:
  // Recomputes action_step_ from the pending target, the next backup save and
  // the failure flag. Requires mtx_.
  void rearm_locked();

  std::atomic<int64_t>& completed_;
  std::atomic<int64_t>& action_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  int64_t target_ = no_step;     // proposed or committed step of the current decision
  int64_t committed_step_ = -1;  // the agreed step, once committed
  bool committed_final_ = false;
  int64_t committed_deadline_ms_ = 0;
  int64_t stopped_at_ = -1;  // the step the trainer waits at, if it waits
  int64_t last_saved_ = -1;  // never save the same step twice
  int64_t backup_every_ = 0;
  failure_info failure_;
  bool exit_allowed_ = false;
  int exit_code_ = 0;
};

}  // namespace lifeboat
