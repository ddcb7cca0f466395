#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/preemption/interfaces.hpp"
#include "actors/preemption/step_gate.hpp"
#include "messages/errors.hpp"

namespace lifeboat {

/// The one owner of this process's end: it alone picks the exit code and
/// the moment, and is the only caller of exit_process once the worker runs
/// (before that, the start-up guard's). The training thread only asks.
///   - after the final save is committed cluster-wide it lets the trainer
///     leave (the trainer runs `exit_fn` if configured, then asks to exit)
///     and ends the process with the restart code when asked;
///   - on a peer's error or a lost peer it makes `run` raise on this worker,
///     naming the peer ("rank N"), and ends it with code 3 when asked;
///   - if the trainer does not ask in time (stuck in a collective with a
///     dead peer), it ends the process itself after a bounded wait.
/// It never ends it with the restart code before the commit. Its interface
/// is exit_controller_actor (interfaces.hpp):
///   (peer_failure)                               from the cluster watcher
///   (committed_atom, wire::SaveCommitted)        from the cluster watcher
///   (exit_now_atom, bool failed)                 from the training thread
///   (watchdog_atom, int code)                    from itself
///   (status_atom) -> wire::ActorStatus
///
/// Lifetime: it shares the gate with the runtime. Thread-safety: an actor.
struct exit_controller_state {
  static const char* name;
  std::shared_ptr<step_gate> gate;
  int restart_code = 42;
  std::string reason;  // why the process is ending, empty while it is not
  bool failed = false;
  bool committed = false;       // the final save is committed and no failure came before
  bool stacks_written = false;  // the training thread's stack, for a hang
};

struct exit_controller_config {
  int restart_code = 42;
  /// This worker's rank: a hang the service names it with is its own.
  int32_t rank = -1;
  /// Writes the stack of the training thread (bounded), on the controller's
  /// thread: for a hung rank before the step gate fails, and for a trainer
  /// that has not exited when a watchdog below ends the process.
  std::function<void()> dump_stacks;
  /// A hung rank exits this long after its stacks are written: the service's
  /// broadcast of the hang reaches the peers first even where this rank hosts it.
  std::chrono::milliseconds hung_exit_delay{100};
  /// How long the trainer may take to raise after a failure before the
  /// process is ended for it.
  std::chrono::milliseconds failure_exit_bound{10000};
  /// How long the trainer may take to exit after the final commit.
  std::chrono::milliseconds commit_exit_bound{30000};
};

exit_controller_actor::behavior_type exit_controller(
    exit_controller_actor::stateful_pointer<exit_controller_state> self, exit_controller_config cfg,
    std::shared_ptr<step_gate> gate);

/// Ends this process's children (end_child_processes), flushes stdio and
/// ends the process at once with `code`: everything that must be durable was
/// fsync'd before anyone calls this.
[[noreturn]] void exit_process(int code);

}  // namespace lifeboat
