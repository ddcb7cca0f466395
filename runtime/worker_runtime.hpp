#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actors/preemption/phase.hpp"
#include "actors/preemption/step_gate.hpp"
#include "checkpoint/async_saver.hpp"
#include "checkpoint/barrier.hpp"
#include "checkpoint/store.hpp"
#include "lifeboat/checkpoint_state.hpp"
#include "lifeboat/termination_config.hpp"
#include "messages/errors.hpp"
#include "platform/cluster_discovery.hpp"
#include "runtime/stack_dump.hpp"
#include "runtime/startup_guard.hpp"

namespace lifeboat {

class coordination_client;
class system_config;
class signal_pipe;

/// Everything behind preemption_checkpoint_handler: the cluster, the actor
/// system with the six worker actors (and the coordination service when this
/// worker hosts it), the checkpoint store, and the training thread's slow path.
class worker_runtime {
 public:
  /// Reads the cluster and the platform, joins, restores. Throws config_error.
  worker_runtime(checkpoint_state& state, std::string checkpoint_dir, termination_config config,
                 std::atomic<int64_t>& completed_step, std::atomic<int64_t>& action_step);
  ~worker_runtime();

  int rank() const { return cluster_.rank; }
  int world_size() const { return cluster_.world_size; }

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
  /// failed() is true.
  void report_error(std::exception_ptr error);
  void barrier(const std::string& name, std::chrono::milliseconds timeout);

  /// Whether a worker failed (this one included); the failure as peer_error.
  bool failed() const;
  [[noreturn]] void exit_after_failure();

 private:
  void start_cluster();
  void restore();
  std::pair<int64_t, int64_t> restore_steps_published(int round, int64_t my_step);
  void prepare_staging();
  void spawn_actors();
  // The checkpoint-ready barrier of a cluster (none for one worker).
  std::unique_ptr<checkpoint::barrier> make_ready_barrier();
  // Every rank publishes `mine` under `prefix` and meets the others; returns
  // what each said, keyed by prefix + rank. A failed meeting throws
  // peer_error("what: why").
  std::vector<std::pair<std::string, std::string>> exchange(const std::string& prefix,
                                                            const std::string& mine,
                                                            const std::string& what);
  // True when every rank said it can; else logs the first that cannot.
  bool every_rank_can(const std::string& prefix,
                      const std::vector<std::pair<std::string, std::string>>& said);
  void save(int64_t step, bool final_save);
  [[noreturn]] void wait_and_exit(int64_t step);
  // After the final commit: lets the notice sources tell the platform that
  // this worker is done (bounded), before it leaves.
  void acknowledge_notices();
  // On the worker hosting the service: waits (bounded) until every other
  // worker left or was lost.
  void wait_for_peers_to_leave();
  [[noreturn]] void throw_failure();
  void shutdown();
  // Stops every actor this runtime started, then the actor system.
  void stop_actors();

  checkpoint_state& state_;
  std::string checkpoint_dir_;
  termination_config config_;
  cluster_spec cluster_;
  int restart_code_ = default_restart_code;
  std::chrono::milliseconds grace_period_{0};
  std::optional<uint16_t> status_port_;    // LIFEBOAT_STATUS_PORT; none: no status endpoint
  std::string status_host_ = "127.0.0.1";  // LIFEBOAT_STATUS_HOST
  std::vector<int> signals_;
  std::vector<std::string> notice_sources_;
  step_gate gate_;
  published_phase phase_;  // the step resolver's, for the heartbeats
  std::atomic<int64_t>& completed_step_;
  int64_t restored_step_ = 0;
  bool failure_reported_ = false;
  int64_t hang_timeout_ms_ = 0;  // for the service: -1 adaptive, 0 off
  // Time the training thread spent in barrier(), for the service's step times.
  std::atomic<int64_t> blocked_ms_{0};
  std::unique_ptr<stack_dumper> stack_dumper_;

  std::optional<checkpoint::store> store_;
  std::unique_ptr<system_config> system_config_;
  std::unique_ptr<caf::actor_system> system_;
  caf::actor service_;
  std::unique_ptr<coordination_client> client_;
  std::unique_ptr<checkpoint::barrier> ready_barrier_;
  std::unique_ptr<checkpoint::async_saver> saver_;
  caf::actor resolver_;
  caf::actor writer_;
  caf::actor exit_controller_;
  caf::actor cluster_watcher_;
  caf::actor signal_watcher_;
  caf::actor poll_watcher_;
  caf::actor status_endpoint_;
  // Last, so it goes first: the previous signal handlers are back before the
  // actors that act on signals are gone.
  std::unique_ptr<signal_pipe> signal_pipe_;
  // Declared after the signal pipe, whose reader it watches: it goes first.
  std::unique_ptr<startup_guard> startup_guard_;
};

}  // namespace lifeboat
