#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/broker.hpp>

#include <caf/actor_addr.hpp>

namespace lifeboat {

using signal_atom = caf::atom_constant<caf::atom("signal")>;

/// Carries signals from a signal_pipe's thread to the signal watcher. The
/// pipe is installed first thing at start-up, long before the actors exist:
/// a signal that comes before attach() is kept and delivered on attach.
class signal_relay {
 public:
  void on_signal(int signo);
  void attach(const caf::actor& watcher);

 private:
  std::mutex mtx_;
  std::vector<int> pending_;
  caf::actor_addr watcher_;
};

/// Turns the signals the relay delivers into a termination notice with a
/// deadline (now + grace period) for the step resolver. The first signal is
/// acted on; later ones are counted and logged. Messages:
///   (signal_atom, int signo)   from the signal_relay
///   (status_atom) -> wire::ActorStatus
struct signal_watcher_state {
  static const char* name;
  caf::actor resolver;
  int64_t grace_period_ms = 0;
  int64_t received = 0;
  bool watching = false;
};

/// `watching`: whether the signal pipe is installed (for the status only).
caf::behavior signal_watcher(caf::io::stateful_broker<signal_watcher_state>* self, bool watching,
                             int64_t grace_period_ms, caf::actor resolver);

/// Spawns the signal watcher on the middleman's I/O thread, the step
/// resolver's (see spawn_step_resolver): the notice reaches the resolver
/// without waking a scheduler thread on the way.
caf::actor spawn_signal_watcher(caf::actor_system& sys, bool watching, int64_t grace_period_ms,
                                caf::actor resolver);

}  // namespace lifeboat
