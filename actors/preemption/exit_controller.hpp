#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/preemption/step_gate.hpp"
#include "messages/errors.hpp"

namespace lifeboat {

/// Decides how this process ends, and makes sure it does:
///   - after the final save is committed cluster-wide it lets the trainer exit
///     with the restart code (the trainer runs `exit_fn` if configured);
///   - on a peer's error or a lost peer it makes `run` raise on this worker,
///     naming the peer ("rank N"), and exits with code 3;
///   - if the trainer does not get there (stuck in a collective with a dead
///     peer), it exits the process itself after a bounded wait.
/// It never exits before the commit. Messages:
///   (peer_failure)                               from the cluster watcher
///   (committed_atom, wire::SaveCommitted)        from the cluster watcher
///   (status_atom) -> wire::ActorStatus
struct exit_controller_state {
  static const char* name;
  step_gate* gate = nullptr;
  int restart_code = 42;
  std::string reason;  // why the process is ending, empty while it is not
  bool failed = false;
};

struct exit_controller_config {
  int restart_code = 42;
  /// This worker's rank: a hang the service names it with is its own.
  int32_t rank = -1;
  /// Writes the stack of the training thread (bounded); called before a hung
  /// rank exits, on the controller's thread.
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

caf::behavior exit_controller(caf::stateful_actor<exit_controller_state>* self,
                              exit_controller_config cfg, step_gate* gate);

/// Flushes stdio and ends the process at once with `code`: everything that
/// must be durable was fsync'd before anyone calls this.
[[noreturn]] void exit_process(int code);

}  // namespace lifeboat
