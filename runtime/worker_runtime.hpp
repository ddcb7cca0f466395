#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/preemption/phase.hpp"
#include "actors/preemption/step_gate.hpp"
#include "checkpoint/async_saver.hpp"
#include "checkpoint/store.hpp"
#include "lifeboat/checkpoint_state.hpp"
#include "lifeboat/termination_config.hpp"
#include "runtime/checkpoint_tiers.hpp"
#include "runtime/stack_dump.hpp"
#include "runtime/startup_guard.hpp"
#include "runtime/worker_actors.hpp"
#include "runtime/worker_settings.hpp"

namespace lifeboat {

class signal_pipe;

/// Everything behind preemption_checkpoint_handler: the settings, the
/// checkpoint store, the worker's actors (worker_actors) and the training
/// thread's slow path. Construction resolves the settings
/// (resolve_worker_settings), joins and agrees with the peers
/// (startup_agreement), then starts the actors.
///
/// Lifetime: owned by the handler, whose atomics (completed_step,
/// action_step) must outlive it. The actor group is declared after every
/// member its actors read through the functions they were given (the
/// published phase, the blocked time, the stack dumper), so it is stopped
/// first. The exit controller owns the process's end; this runtime only asks
/// for it (worker_actors::request_exit).
/// Thread-safety: not thread-safe; the constructing thread is the training
/// thread, and only it calls the members.
class worker_runtime {
 public:
  /// Reads the cluster and the platform, joins, restores. Throws config_error.
  worker_runtime(checkpoint_state& state, std::string checkpoint_dir, termination_config config,
                 std::atomic<int64_t>& completed_step, std::atomic<int64_t>& action_step,
                 const std::atomic<bool>& in_step);
  ~worker_runtime();

  int rank() const { return settings_.cluster.rank; }
  int world_size() const { return settings_.cluster.world_size; }

  /// The restored step count (0 for a fresh start).
  int64_t restored_step() const { return restored_step_; }

  /// The training thread's slow path at a step boundary: saves, exits or
  /// throws peer_error as the cluster decided.
  void on_action_step(int64_t step);

  /// A training step raised `error`. Throws peer_error when a peer's failure
  /// is known, or when the service says one came before this worker's report
  /// (the step's error was its echo); otherwise this worker's failure stands
  /// (failed() is true) and it returns.
  void on_step_failed(std::exception_ptr error);
  /// Reports `error` to every worker as this worker's failure; from then on
  /// failed() is true. Nothing when the job failed already: the error is
  /// likely that failure's echo, and the service passes on only the first.
  void report_error(std::exception_ptr error);
  /// The trainer left its loop by an exception outside a step (`text`:
  /// what it was): reported as report_error does, so that the other workers
  /// stop instead of waiting for this rank at their next save or step.
  void report_left_by_exception(const std::string& text);
  void barrier(const std::string& name, std::chrono::milliseconds timeout);

  /// Whether a worker failed (this one included); the failure as peer_error.
  bool failed() const;
  [[noreturn]] void exit_after_failure();

  /// Whether this is a child forked from the worker without exec, which
  /// holds a copy of this object but none of its threads.
  bool forked_away() const { return ::getpid() != owner_pid_; }

 private:
  // Steps 2 to 4 of the construction: join, restore, start the actors.
  void start();
  void spawn_actors();
  void save(int64_t step, bool final_save, int64_t deadline_unix_ms);
  [[noreturn]] void wait_and_exit(int64_t step);
  [[noreturn]] void throw_failure();
  // After a barrier that failed (`err`, of `what`): the failure that broke
  // it once it arrives (throw_failure), else `what` and `err` as peer_error.
  [[noreturn]] void throw_barrier_failure(const std::string& what, const caf::error& err);
  // Reports `text` as this worker's failure (logged after `context`), once,
  // and not after the job failed.
  void report_failure(const std::string& context, const std::string& text);
  void shutdown();

  const pid_t owner_pid_ = ::getpid();
  checkpoint_state& state_;
  std::string checkpoint_dir_;
  termination_config config_;
  worker_settings settings_;
  // Shared with the actors (the resolver and the exit controller).
  std::shared_ptr<step_gate> gate_;
  // The step resolver's, for the heartbeats; shared with it.
  std::shared_ptr<published_phase> phase_ = std::make_shared<published_phase>();
  std::atomic<int64_t>& completed_step_;
  // Whether the training thread is inside run(), for the heartbeats.
  const std::atomic<bool>& in_step_;
  int64_t restored_step_ = 0;
  // What the restore read, for the status; empty for a fresh start.
  wire::CheckpointInfo restored_report_;
  // The checkpoint directory holds the restored checkpoint committed too.
  bool restored_in_directory_ = false;
  bool failure_reported_ = false;
  // Set once this worker left the cluster after its final checkpoint's
  // commit, just before exit_fn: nothing is reported after it.
  bool left_after_commit_ = false;
  // Time the training thread spent in barrier(), for the service's step times.
  std::atomic<int64_t> blocked_ms_{0};
  // Set as the handler closes: the training loop ended, for the heartbeats.
  std::atomic<bool> finished_{false};
  std::unique_ptr<stack_dumper> stack_dumper_;

  std::optional<checkpoint::store> store_;
  // Tier 0, written before the store's directory; none when off.
  std::optional<checkpoint::memory_tier> memory_;
  std::optional<checkpoint::directory_lock> checkpoint_dir_lock_;
  // Tier 1: replicas on a peer; the saver (in actors_) pushes through it.
  worker_peer_tier peer_;
  // Owned by actors_; set when this worker writes its own checkpoints.
  checkpoint::async_saver* saver_ = nullptr;
  // Declared after everything its actors read through `this`: it stops first.
  std::unique_ptr<worker_actors> actors_;
  // Last, so it goes first: the previous signal handlers are back before the
  // actors that act on signals are gone.
  std::unique_ptr<signal_pipe> signal_pipe_;
  // Declared after the signal pipe, whose reader it watches: it goes first.
  std::unique_ptr<startup_guard> startup_guard_;
};

}  // namespace lifeboat
