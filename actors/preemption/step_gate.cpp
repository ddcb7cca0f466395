#include "actors/preemption/step_gate.hpp"

#include <algorithm>

namespace lifeboat {

step_gate::step_gate(std::atomic<int64_t>& completed_step, std::atomic<int64_t>& action_step)
    : completed_(completed_step), action_(action_step) {}

void step_gate::rearm_locked() {
  if (failure_.failed) {
    action_.store(0, std::memory_order_seq_cst);
    return;
  }
  auto next = target_;
  if (backup_every_ > 0) {
    auto done = std::max(completed_.load(std::memory_order_seq_cst), last_saved_);
    next = std::min(next, (done / backup_every_ + 1) * backup_every_);
  }
  action_.store(next, std::memory_order_seq_cst);
}

// Every change wakes the trainer after the lock is released: woken while it
// is held, the trainer would block on it at once and need a second wake-up,
// on the way of every worker's agreement.
step_gate::probe step_gate::propose(int64_t step) {
  probe result{};
  {
    std::lock_guard<std::mutex> guard{mtx_};
    target_ = step;
    committed_step_ = -1;
    rearm_locked();
    result.completed = completed_.load(std::memory_order_seq_cst);
    result.accepted = result.completed < step || (result.completed == step && stopped_at_ == step);
  }
  cv_.notify_all();
  return result;
}

// The trainer may complete a step between the read and the proposal; then
// the proposal is refused and the next step is tried. It wins within a step.
int64_t step_gate::hold_next_step() {
  for (;;) {
    auto step = completed_step() + 1;
    if (propose(step).accepted) return step;
  }
}

void step_gate::commit(int64_t step, bool final_save, int64_t deadline_unix_ms) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    target_ = step;
    committed_step_ = step;
    committed_final_ = final_save;
    committed_deadline_ms_ = deadline_unix_ms;
    rearm_locked();
  }
  cv_.notify_all();
}

void step_gate::fail(int32_t origin_rank, std::string message, bool lost) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_.failed) return;
    failure_ = failure_info{true, origin_rank, std::move(message), lost};
    rearm_locked();
  }
  cv_.notify_all();
}

void step_gate::allow_exit(int code) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    exit_allowed_ = true;
    exit_code_ = code;
  }
  cv_.notify_all();
}

void step_gate::set_backup_interval(int64_t n) {
  std::lock_guard<std::mutex> guard{mtx_};
  backup_every_ = n;
  rearm_locked();
}

step_gate::action step_gate::at_boundary(int64_t step) {
  std::unique_lock<std::mutex> lock{mtx_};
  stopped_at_ = step;
  for (;;) {
    if (failure_.failed) {
      stopped_at_ = -1;
      return {action_kind::fail, step, false};
    }
    if (committed_step_ == step && last_saved_ < step) {
      last_saved_ = step;
      stopped_at_ = -1;
      bool final_save = committed_final_;
      if (!final_save) target_ = no_step;
      rearm_locked();
      return {action_kind::save, step, final_save, final_save ? committed_deadline_ms_ : 0};
    }
    // A backup step that is also the pending decision's step waits for it:
    // saved now, the trainer would go on past the step the cluster may commit.
    if (committed_step_ != step && backup_every_ > 0 && step % backup_every_ == 0 &&
        last_saved_ < step && target_ > step) {
      last_saved_ = step;
      stopped_at_ = -1;
      rearm_locked();
      return {action_kind::save, step, false};
    }
    // Resume when no decision is pending at this step: the target is later
    // (a re-proposal, or none at all) or this step was already saved.
    if (target_ > step || (target_ == step && last_saved_ >= step) || target_ == no_step) {
      stopped_at_ = -1;
      rearm_locked();
      return {action_kind::resume, step, false};
    }
    cv_.wait(lock);
  }
}

step_gate::exit_decision step_gate::await_exit(std::chrono::milliseconds bound) {
  std::unique_lock<std::mutex> lock{mtx_};
  cv_.wait_for(lock, bound, [&] { return exit_allowed_ || failure_.failed; });
  if (exit_allowed_) return {true, exit_code_};
  return {false, 0};
}

int64_t step_gate::waiting_at() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return stopped_at_;
}

step_gate::failure_info step_gate::failure() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return failure_;
}

}  // namespace lifeboat
