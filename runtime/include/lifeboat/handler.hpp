#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "lifeboat/checkpoint_state.hpp"
#include "lifeboat/errors.hpp"
#include "lifeboat/termination_config.hpp"

namespace lifeboat {

class worker_runtime;

/// The signal lifeboat sends the training thread of a hung rank to write its
/// stack to stderr (SIGRTMIN + 8). A Python trainer's module registers
/// faulthandler on it, so the Python stacks come first.
int stack_dump_signal();

/// The training thread's view of a preemption-aware worker. Construction
/// reads the cluster from the environment (LIFEBOAT_*, TF_CONFIG, torchrun,
/// SLURM; alone otherwise), joins it, and restores the latest complete
/// checkpoint into `state`. From then on, a termination notice anywhere in
/// the cluster makes every worker save at one agreed step and exit with the
/// restart code; an error on any worker makes `run` raise `peer_error` on all.
class preemption_checkpoint_handler {
 public:
  /// Throws config_error on bad configuration or environment, and peer_error
  /// when a peer fails or is lost while the workers agree on the checkpoint
  /// to restore. A relative `checkpoint_dir` is taken against the working
  /// directory now: a later chdir of the trainer does not move it.
  preemption_checkpoint_handler(checkpoint_state& state, std::string checkpoint_dir,
                                termination_config config = {});
  ~preemption_checkpoint_handler();

  preemption_checkpoint_handler(const preemption_checkpoint_handler&) = delete;
  preemption_checkpoint_handler& operator=(const preemption_checkpoint_handler&) = delete;

  /// Runs one training step `fn(xs...)` and returns its result. An exception
  /// from `fn` is reported to every worker and rethrown, unless a peer's
  /// failure came first (known already, or the coordination service says so
  /// in answer to the report): then the exception was its echo (a collective
  /// failing as the peer's process ends), and `run` throws that failure as
  /// peer_error instead; the service broadcasts only a generation's first.
  /// A step_exit passes unreported.
  template <class F, class... Ts>
  decltype(auto) run(F&& fn, Ts&&... xs) {
    check_alert();
    in_step guard{in_step_};
    try {
      if constexpr (std::is_void_v<std::invoke_result_t<F, Ts...>>) {
        std::forward<F>(fn)(std::forward<Ts>(xs)...);
        step_completed(total_run_calls() + 1);
      } else {
        decltype(auto) result = std::forward<F>(fn)(std::forward<Ts>(xs)...);
        step_completed(total_run_calls() + 1);
        return result;
      }
    } catch (const peer_error&) {
      throw;
    } catch (const step_exit&) {
      throw;
    } catch (...) {
      on_step_failed(std::current_exception());
      throw;
    }
  }

  /// For loops that call their steps themselves: counts one completed step
  /// and, if it is the agreed step of a save, saves (and exits if final).
  void save_checkpoint_if_preempted() { step_completed(total_run_calls() + 1); }

  /// Lowest level: `step` has completed. Costs one atomic store and two
  /// loads while no notice is active. Steps never go back: one below the
  /// last completed step (after a restore, the restored one) throws
  /// config_error, since a checkpoint saved under it would be older by its
  /// number than the one restored, and the next restart would take that.
  void step_completed(int64_t step) {
    if (step < completed_step_.load(std::memory_order_relaxed)) refuse_step(step);
    completed_step_.store(step, std::memory_order_seq_cst);
    if (step >= action_step_.load(std::memory_order_seq_cst)) on_action_step(step);
  }

  /// Number of completed steps, restored across restarts.
  int64_t total_run_calls() const { return completed_step_.load(std::memory_order_relaxed); }

  /// RAII guard: when it is left by an exception caused by a peer's failure
  /// or by this worker's preemption, the process exits with the matching code.
  class scope {
   public:
    explicit scope(preemption_checkpoint_handler& h)
        : handler_(h), exceptions_(std::uncaught_exceptions()) {}
    ~scope();
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    preemption_checkpoint_handler& handler_;
    int exceptions_;
  };
  scope watch_preemption_scope() { return scope{*this}; }

  int rank() const;
  int world_size() const;

  /// Whether this worker has failed: a step raised, report_error or
  /// report_left_by_exception told its error, or a peer failed or was lost.
  /// A watch_preemption_scope left by an exception then ends the process
  /// with the failure exit code (3).
  bool failed() const;

  /// A cluster-wide barrier through the coordination service, for trainers
  /// without collectives of their own (lifeboat-demo keeps lock-step with it).
  /// Throws peer_error when a worker failed or was lost while waiting, and
  /// config_error for a name that is not UTF-8.
  void barrier(const std::string& name, std::chrono::milliseconds timeout);

  /// Reports `error` to every worker (as `run` does for a throwing step);
  /// nothing once the job failed (the error is likely that failure's echo).
  void report_error(std::exception_ptr error);

  /// Reports to every worker that the trainer left its loop by an exception
  /// raised outside `run` (`what`: the exception, as "TypeName: message"),
  /// as report_error does: the others stop instead of waiting for this rank
  /// at their next save or step. The destructor does it by itself when the
  /// handler is destroyed by an exception unwinding past it.
  void report_left_by_exception(const std::string& what);

 private:
  void check_alert() {
    if (completed_step_.load(std::memory_order_relaxed) >=
        action_step_.load(std::memory_order_seq_cst))
      on_action_step(completed_step_.load(std::memory_order_relaxed));
  }
  void on_action_step(int64_t step);
  [[noreturn]] void refuse_step(int64_t step) const;

  // Marks the training thread inside run() for its lifetime: the heartbeats
  // say so, and the coordination service tells a rank stuck between steps
  // from the ranks that wait for it inside theirs (in a collective).
  class in_step {
   public:
    explicit in_step(std::atomic<bool>& flag) : flag_(flag) {
      flag_.store(true, std::memory_order_relaxed);
    }
    ~in_step() { flag_.store(false, std::memory_order_relaxed); }
    in_step(const in_step&) = delete;
    in_step& operator=(const in_step&) = delete;

   private:
    std::atomic<bool>& flag_;
  };
  // Throws peer_error for a peer's failure, else reports `error` and returns.
  void on_step_failed(std::exception_ptr error);

  // The hot path: the step resolver sets action_step_ to the agreed step (or
  // to 0 on a peer error); the training thread compares after every step.
  // Both sides store and then load with seq_cst, so either the trainer sees
  // the new target or the resolver sees that the trainer already passed it.
  alignas(64) std::atomic<int64_t> completed_step_{0};
  alignas(64) std::atomic<int64_t> action_step_{std::numeric_limits<int64_t>::max()};
  // Written by the training thread only, read by the heartbeats.
  std::atomic<bool> in_step_{false};
  // Exceptions in flight at the construction: more at the destruction mean
  // that one is unwinding past the handler.
  int exceptions_at_construction_ = std::uncaught_exceptions();
  std::unique_ptr<worker_runtime> runtime_;
};

}  // namespace lifeboat
