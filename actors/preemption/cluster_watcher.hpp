#pragma once

#include <cstdint>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/broker.hpp>

#include "actors/preemption/interfaces.hpp"

namespace lifeboat {

/// Follows the coordination service for this worker: protocol messages from
/// peers go to the step resolver; a committed save goes to the resolver, the
/// writer and the exit controller; peers' errors and lost peers go to the
/// resolver and the exit controller. Messages:
///   (peer_message), (peer_failure)   from the coordination agent
///   (status_atom) -> wire::ActorStatus
/// Lifetime: holds only actor handles; worker_actors spawns and stops it.
/// Thread-safety: an actor on the middleman's I/O thread.
struct cluster_watcher_state {
  static const char* name;
  caf::actor resolver;
  checkpoint_writer_actor writer;
  exit_controller_actor exit_controller;
  int64_t messages = 0;
  int64_t malformed = 0;
  int64_t failures = 0;
  int64_t last_committed_step = -1;
};

struct cluster_watcher_peers {
  caf::actor resolver;
  checkpoint_writer_actor writer;
  exit_controller_actor exit_controller;
};

caf::behavior cluster_watcher(caf::io::stateful_broker<cluster_watcher_state>* self,
                              cluster_watcher_peers peers);

/// Spawns the cluster watcher on the middleman's I/O thread (see
/// spawn_step_resolver for why).
caf::actor spawn_cluster_watcher(caf::actor_system& sys, cluster_watcher_peers peers);

}  // namespace lifeboat
