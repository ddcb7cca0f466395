#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actors/preemption/exit_controller.hpp"
#include "actors/preemption/interfaces.hpp"
#include "actors/preemption/step_resolver.hpp"
#include "actors/status/status_endpoint.hpp"
#include "checkpoint/async_saver.hpp"
#include "checkpoint/barrier.hpp"

namespace lifeboat {

class coordination_client;
class notice_source;
class system_config;

/// What worker_actors::spawn starts the worker's actors with.
struct worker_actors_config {
  int rank = 0;
  int world_size = 1;
  step_resolver_state::config resolver;
  exit_controller_config exit;
  /// Each source gets a poller thread of the poll watcher's.
  std::vector<std::unique_ptr<notice_source>> sources;
  std::chrono::milliseconds poll_interval{1000};
  /// A reading end from signal_pipe::open_reader, which the signal watcher
  /// owns from then on; -1: no signals are watched.
  int signal_reader = -1;
  std::vector<int> signals;  // the signal pipe's, whose handler the watcher checks
  /// Whether the training loop ended (the handler is closing), called on the
  /// signal watcher's thread (spawn_signal_watcher).
  std::function<bool()> training_over;
  int64_t grace_period_ms = 0;
  /// What this worker restored at start, for the status (empty: fresh start).
  wire::CheckpointInfo restored;
  /// The checkpoint directory holds the restored checkpoint committed too.
  bool restored_in_directory = false;
};

/// Where and how the status endpoint serves.
struct worker_status_config {
  uint16_t port = 0;
  std::string host;
};

/// The actor system of one worker and every actor in it: the coordination
/// service where this worker hosts it, the coordination client, the step
/// resolver, the checkpoint writer, the exit controller, the three watchers,
/// the status endpoint, and the checkpoint saver whose ready barrier uses the
/// client. It starts them and stops them itself, in an order it owns.
///
/// Lifetime: the actors share what they use with this group and the runtime
/// (the step gate, the client, the published phase; see step_resolver_links),
/// so no actor's memory safety depends on the order of shutdown. stop() (the
/// destructor calls it) stops the status endpoint and the saver, has the
/// client leave, tells every actor to exit and waits (bounded) for each,
/// then releases the client and the actor system; the actor system's
/// destructor waits for an actor that was late. The checkpoint store given
/// to start_saver must outlive this group. The functions that the agent and
/// the exit controller were configured with run on actor threads until
/// stop() returns: what they capture must outlive the group.
///
/// Thread-safety: not thread-safe; one thread (the training thread, which
/// constructs the runtime) calls every member. The actor handles it returns
/// may be used from any thread.
class worker_actors {
 public:
  /// Starts the actor system; its threads start with every signal a process
  /// is sent blocked (background_threads_block_signals), so that none of
  /// them ever takes a notice.
  worker_actors();
  ~worker_actors();

  worker_actors(const worker_actors&) = delete;
  worker_actors& operator=(const worker_actors&) = delete;

  caf::actor_system& system() { return *system_; }

  /// The coordination service this worker hosts: the group stops it last.
  void adopt_service(caf::actor service) { service_ = std::move(service); }
  /// The client the start-up agreement joined with; shared with the actors.
  void adopt_client(std::shared_ptr<coordination_client> client) { client_ = std::move(client); }

  /// Spawns the resolver, the writer, the exit controller and the three
  /// watchers, and subscribes the cluster watcher to the client. Requires
  /// adopt_client. Throws config_error when an actor does not start.
  void spawn(worker_actors_config cfg, std::shared_ptr<step_gate> gate,
             std::shared_ptr<published_phase> phase);

  /// The saver of a worker that writes its own checkpoints to `st`, with
  /// `ready` as its checkpoint-ready barrier (null: one worker), and to
  /// the `tiers` before the directory (their memory tier must outlive this group too).
  checkpoint::async_saver& start_saver(checkpoint::store& st,
                                       std::unique_ptr<checkpoint::barrier> ready,
                                       checkpoint::saver_tiers tiers);

  /// Serves the status of every actor; a failure to bind is logged, not fatal.
  void start_status_endpoint(int rank, int world_size, const worker_status_config& cfg);

  const caf::actor& service() const { return service_; }
  const std::shared_ptr<coordination_client>& client() const { return client_; }
  const checkpoint_writer_actor& writer() const { return writer_; }
  const poll_watcher_actor& poll_watcher() const { return poll_watcher_; }
  const exit_controller_actor& exit_controller() const { return exit_controller_; }

  /// After the final commit: lets the notice sources tell the platform that
  /// this worker is done (bounded), before it leaves.
  void acknowledge_notices();
  /// On the worker hosting the service: waits (bounded) until every other
  /// worker left or was lost.
  void wait_for_peers_to_leave();
  /// Asks the exit controller, the owner of the process's end, to end it now
  /// (`failed`: with the failure code whatever it saw); never returns.
  [[noreturn]] void request_exit(bool failed);

  /// Stops everything in the order above; idempotent.
  void stop();

 private:
  int world_size_ = 1;
  std::unique_ptr<system_config> system_config_;
  std::unique_ptr<caf::actor_system> system_;
  caf::actor service_;
  std::shared_ptr<coordination_client> client_;
  std::unique_ptr<checkpoint::barrier> ready_barrier_;
  // Declared after the barrier it uses: it goes first.
  std::unique_ptr<checkpoint::async_saver> saver_;
  caf::actor resolver_;
  checkpoint_writer_actor writer_;
  exit_controller_actor exit_controller_;
  caf::actor cluster_watcher_;
  caf::actor signal_watcher_;
  poll_watcher_actor poll_watcher_;
  status_endpoint_actor status_endpoint_;
};

}  // namespace lifeboat
