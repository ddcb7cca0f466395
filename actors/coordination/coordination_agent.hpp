#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actors/coordination/coordination_atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/coordination/tls_config.hpp"

namespace lifeboat {

/// How a worker reaches and joins the coordination service.
struct agent_config {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int rank = 0;
  int world_size = 1;
  uint32_t incarnation = 0;
  std::string token;
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds join_timeout{60000};
  /// A peer that accepts the connection but does not greet within this bound,
  /// or sends what is no frame of the protocol before the join, is no
  /// coordination service (another job's server on the port): the join fails
  /// at once with errc::refused instead of waiting out join_timeout.
  std::chrono::milliseconds handshake_timeout{5000};
  /// Once a service greeted, a connection that then closes before the join
  /// means it is gone (its host died during start-up): retry this long at
  /// most, not until join_timeout, then fail the join with errc::peer_lost.
  std::chrono::milliseconds rejoin_bound{10000};
  /// Once joined, a service from which nothing arrived for this long (it
  /// answers every heartbeat) is lost, reported as a closed connection is: a
  /// network partition closes no connection, it only falls silent.
  std::chrono::milliseconds service_silence_bound{10000};
  /// Read at each heartbeat, in the agent's thread; must be thread-safe.
  std::function<int64_t()> step_source;
  /// The heartbeat's opaque status (Heartbeat.status: bytes the service keeps
  /// unread for the protocol built on it), read and sent like the step.
  std::function<std::string()> status_source;
  /// Whether the worker is in work that is no training step (a save), read
  /// and sent like the step: the service neither times nor hangs it then.
  std::function<bool()> paused_source;
  /// Whether the worker is inside a training step (Heartbeat.in_step), read
  /// and sent like the step.
  std::function<bool()> in_step_source;
  /// Whether the worker's training loop has ended (Heartbeat.finished), read
  /// and sent like the step.
  std::function<bool()> finished_source;
  /// Milliseconds the worker spent blocked in lifeboat's barriers so far,
  /// read and sent like the step (the service's step times leave it out).
  std::function<int64_t()> blocked_source;
  /// The hang timeout the service should apply: -1 adaptive, 0 off, else ms.
  int64_t hang_timeout_ms = 0;
  /// The rank whose process hosts the service (rank 0 without an external
  /// coordinator), -1 when no worker's does. The service goes with that
  /// process, so its loss is that rank's: the failure names it as a lost
  /// peer, as the contract's "rank N" asks, not a service no rank owns.
  int service_rank = -1;
  /// Bound on requests that do not carry their own timeout (insert, try-get, ...).
  std::chrono::milliseconds request_timeout{30000};
  /// Set to true when the agent has ended, before any actor monitoring it
  /// hears so. CAF 0.17 never answers a message sent to a broker that has
  /// ended (a broker's mailbox stays open), so a request to it waits out its
  /// whole timeout; a caller that checks this first fails at once instead.
  std::shared_ptr<std::atomic<bool>> ended;
  /// TLS 1.3 on the connection when enabled, as the service has it; with
  /// certificates, the service's must name `host`. A failed handshake fails
  /// the join at once with errc::refused (a retry would meet the same peer).
  tls_config tls;
};

/// The longest error message an agent reports: a step's exception may carry
/// megabytes (a tensor's repr, a log), and its report must reach the service
/// in one frame and every peer's log in a readable line. The rest is cut,
/// and the message says how many bytes.
constexpr size_t max_error_message_bytes = 64 * 1024;

/// `message` as UTF-8 (to_utf8: the report is a protobuf string, which the
/// service cannot parse otherwise), cut after max_error_message_bytes with
/// " ... (N more bytes)".
std::string bounded_error_message(const std::string& message);

/// Spawns a worker's agent: a broker that connects to the service (retrying
/// with backoff until cfg.join_timeout), answers the challenge, joins, sends
/// heartbeats and relays requests. A lost connection after the join is
/// reported to subscribers as peer_failure{-1, unavailable,
/// "coordination service lost: <why>", lost = true}, or, where another
/// rank's process hosts the service (cfg.service_rank), as peer_failure{
/// service_rank, peer_lost, "its coordination service is gone: <why>",
/// lost = true}; requests then fail at once.
///
/// Message interface (every reply error is a lifeboat errc):
///   (join_wait_atom) -> void                 once joined, or the join's error
///   (insert_atom, key, value) -> void        errc::already_exists if present
///   (get_start_atom, key, int64_t timeout_ms) -> uint64_t handle
///        starts a blocking get; collect it exactly once with
///   (get_wait_atom, uint64_t handle) -> std::string   errc::timeout / cancelled
///   (cancel_atom, uint64_t handle)           completes that get with errc::cancelled
///   (try_get_atom, key) -> (bool found, std::string value)
///   (get_prefix_atom, prefix) -> std::map<std::string, std::string>
///   (erase_prefix_atom, prefix) -> void
///   (barrier_atom, name, int64_t timeout_ms, std::vector<int32_t> participants,
///    bool absent_hung) -> void
///        participants empty: every rank; errc::peer_error / peer_lost when a
///        participant fails, errc::timeout, errc::cancelled; absent_hung: see
///        BarrierRequest
///   (peer_send_atom, int32_t to_rank, channel, payload)   to_rank -1: everyone
///        (one that does not fit in a frame is dropped with a log line)
///   (report_atom, int32_t code, message)     broadcast as a peer_failure, the
///        message cut to max_error_message_bytes
/// A request that does not fit in a frame (max_frame_bytes) fails with
/// errc::invalid_argument and is not sent: the service would close the
/// connection, and the worker be lost.
///   (subscribe_atom, caf::actor)             the actor receives peer_message
///        and peer_failure
///   (leave_atom) -> void                     clean leave; idempotent
caf::actor spawn_coordination_agent(caf::actor_system& sys, agent_config cfg);

}  // namespace lifeboat
