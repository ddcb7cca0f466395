#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/broker.hpp>

#include <memory>

#include "actors/preemption/step_resolver_state.hpp"

namespace lifeboat {

class coordination_client;

/// Turns notices into one cluster-wide decision (see step_resolver_state for
/// the numbered protocol). Messages:
///   (notice_atom, wire::Notice)       a notice from this worker's watchers
///   (wire::ProtocolMessage)           the protocol channel, via the cluster watcher
///   (peer_failure)                    a worker failed, via the cluster watcher
///   (saving_atom, int64_t step)       the trainer began a save
///   (ckpt_time_atom, double seconds)  the writer measured a save
///   (status_atom) -> wire::ActorStatus
///
/// Lifetime: it shares the gate, the client and the published phase with the
/// runtime (step_resolver_links), so none of them goes while it runs,
/// whatever the order of shutdown. Thread-safety: an actor; its state is
/// touched only on the middleman's I/O thread.
struct step_resolver_links {
  std::shared_ptr<step_gate> gate;
  std::shared_ptr<coordination_client> client;
  /// Where every change of phase is published (for the heartbeats); may be null.
  std::shared_ptr<published_phase> phase;
};

struct step_resolver_actor_state {
  static const char* name;
  // Declared before the logic, which refers to the gate and the phase: they go after it.
  step_resolver_links links;
  std::unique_ptr<step_resolver_state> logic;
  int64_t notices = 0;
  // The final-save due time a one-shot timer is armed for (0: none).
  int64_t armed_due_ms = 0;
  // The agreements already logged.
  uint64_t logged_agreements = 0;
};

caf::behavior step_resolver(caf::io::stateful_broker<step_resolver_actor_state>* self,
                            step_resolver_state::config cfg, step_resolver_links links);

/// Spawns the step resolver as a broker without connections: it runs on the
/// middleman's I/O thread, the thread of the coordination agent, so a protocol
/// message goes from the socket through the cluster watcher and the resolver
/// and back to the socket without a thread switch. Every worker handles each
/// message of an agreement that way; on a loaded host a wake-up of another
/// thread per hop was most of the agreement's latency. Its handlers are short
/// and never block, as every actor on that thread must.
/// cfg.publish_to is taken from links.phase.
caf::actor spawn_step_resolver(caf::actor_system& sys, step_resolver_state::config cfg,
                               step_resolver_links links);

}  // namespace lifeboat
