#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace lifeboat {

/// A change in the cluster's membership, for subscribers inside the process
/// hosting the service (launcher, coordinator, preemption watcher, status).
/// `generation` is the service's generation when it happened (the workers'
/// incarnation, LIFEBOAT_RESTART_COUNT), so that a subscriber that outlives
/// a restart can tell one generation's failures from the next one's.
struct membership_event {
  enum kind_t : int32_t { joined, left, lost, error };
  int32_t rank = -1;
  int32_t kind = joined;
  int32_t code = 0;  // errc of an error report or of the loss
  std::string message;
  uint32_t generation = 0;
  /// A loss for silence (no heartbeat for the timeout), not a closed
  /// connection: the process may live on, stopped, frozen or cut off.
  bool silent = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, membership_event& x) {
  return f(caf::meta::type_name("membership_event"), x.rank, x.kind, x.code, x.message,
           x.generation, x.silent);
}

/// Where a rank-to-rank message goes when not to one rank: every worker
/// (the sender too), or every worker but the sender, for a sender that takes
/// its own copy as it sends (the leader's query and commit).
constexpr int32_t every_rank = -1;
constexpr int32_t every_other_rank = -2;

/// The sender of a message that the process hosting the service sends to
/// workers (coordination_service's local peer_send_atom): no rank.
constexpr int32_t service_sender = -1;

/// Whether a message that `sender` addressed to `to` (a rank, every_rank or
/// every_other_rank) is delivered to `rank`.
constexpr bool addressed_to(int32_t to, int32_t rank, int32_t sender) {
  return to == rank || to == every_rank || (to == every_other_rank && rank != sender);
}

/// A rank-to-rank message, delivered to an agent's subscribers.
struct peer_message {
  int32_t from_rank = -1;
  std::string channel;
  std::string payload;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_message& x) {
  return f(caf::meta::type_name("peer_message"), x.from_rank, x.channel, x.payload);
}

/// A worker reported an error (lost = false) or was lost (lost = true), this
/// worker included; rank -1 with lost = true: the coordination service itself
/// is gone. Delivered to an agent's subscribers.
struct peer_failure {
  int32_t rank = -1;
  int32_t code = 0;
  std::string message;
  bool lost = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_failure& x) {
  return f(caf::meta::type_name("peer_failure"), x.rank, x.code, x.message, x.lost);
}

}  // namespace lifeboat
