#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "actors/coordination/connection_limits.hpp"
#include "actors/coordination/coordination_atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/coordination/tls_config.hpp"

namespace lifeboat {

namespace wire {
class ActorStatus;
}  // namespace wire

class coordination_state;

/// Completes the service's status answer with a protocol's reading of what
/// the service holds but does not interpret (each rank's reported_status,
/// the key-value store): the preemption protocol sets the phases there
/// (annotate_preemption_status). Called on the service's thread at each
/// (status_atom), with the state it must not keep.
using status_annotator = std::function<void(const coordination_state&, wire::ActorStatus&)>;

/// Where and for whom the coordination service listens.
struct service_config {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  int world_size = 1;
  std::string token;
  std::chrono::milliseconds heartbeat_timeout{10000};
  /// A connection not joined within this is closed (connection_limits).
  std::chrono::milliseconds join_bound{unjoined_connection_bound_ms};
  /// Empty: the status answer carries no phase.
  status_annotator annotate_status;
  /// TLS 1.3 on every connection when enabled (tls_context: certificates,
  /// else a key derived from `token`); agents must agree.
  tls_config tls;
};

/// Starts the job's coordination service: a broker listening on
/// cfg.host:cfg.port for agents (framed protobuf, see messages/coordination.proto)
/// whose logic is coordination_state. Returns the actor and the bound port.
/// Its bounds: those of coordination_state, and frames of at most
/// max_frame_bytes (a larger one closes the connection, with a log line).
/// With cfg.tls enabled, a connection whose handshake or any later record
/// fails TLS's checks is closed like one that closed (a joined rank is lost).
/// errc::invalid_config when cfg.tls cannot be set up (tls_context::make).
///
/// Local interface (messages from actors in the hosting process):
///   (workers_atom) -> std::vector<wire::WorkerInfo>     one row per rank
///   (snapshot_atom, std::string prefix) -> std::map<std::string, std::string>
///   (subscribe_atom, caf::actor) -> void                 the subscriber then
///        receives every membership_event (joined, left, lost, error), first
///        those of the ranks already here (coordination_state::present_workers)
///   (exited_atom, int32_t rank, uint32_t generation, std::string how) -> void
///        a launcher reaped that rank's process; one that never joined is lost
///        (coordination_state::on_process_exit)
///   (peer_send_atom, int32_t to_rank, channel, payload) -> void  a message
///        to a rank, every_rank or every_other_rank, from service_sender
///        (coordination_events.hpp): the hosting process speaks to the workers
///   (reset_atom) -> void                                 drops all state, closes
///        every connection (a new generation)
///   (status_atom) -> wire::ActorStatus                   name "coordination_service",
///        `workers` and the furthest step they reported filled, then
///        cfg.annotate_status applied, then `workers` trimmed (every rank, or
///        beyond status_workers_listed_max those that need a look, with counts
///        per state: worker_listing.hpp)
/// An exit message closes the listening socket and every connection.
caf::expected<std::pair<caf::actor, uint16_t>> spawn_coordination_service(caf::actor_system& sys,
                                                                          service_config cfg);

}  // namespace lifeboat
