#pragma once

#include <memory>
#include <vector>

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "platform/signal_pipe.hpp"

namespace lifeboat {

/// Turns the configured signals into a termination notice with a deadline
/// (now + grace period) for the step resolver. The first signal is acted on;
/// later ones are counted and logged. Messages:
///   (signal_atom, int signo)   from its signal_pipe's thread
///   (status_atom) -> wire::ActorStatus
struct signal_watcher_state {
  static const char* name;
  caf::actor resolver;
  int64_t grace_period_ms = 0;
  int64_t received = 0;
  std::unique_ptr<signal_pipe> pipe;
};

using signal_atom = caf::atom_constant<caf::atom("signal")>;

caf::behavior signal_watcher(caf::stateful_actor<signal_watcher_state>* self,
                             std::vector<int> signals, int64_t grace_period_ms,
                             caf::actor resolver);

}  // namespace lifeboat
