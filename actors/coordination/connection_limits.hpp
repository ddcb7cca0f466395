#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace lifeboat {

/// Identifies one TCP connection to the service (the broker's handle id).
using conn_id = int64_t;

/// How long a connection may stay without a successful join before the
/// service closes it. A worker sends its join as soon as it is greeted
/// (milliseconds); only a stranger or a stalled peer stays longer.
constexpr int64_t unjoined_connection_bound_ms = 5000;

/// Connections that have not joined yet, at most, at once; further ones are
/// closed at accept. The service allows the world size where that is larger:
/// a whole job's workers may start at once (1,024 simulated workers met this
/// bound). Far below what would exhaust the service's file descriptors.
constexpr size_t max_unjoined_connections = 64;

/// Blocking requests (gets and barrier waits) a joined connection may have
/// pending at once; one beyond fails with errc::invalid_argument. A worker
/// has a handful in flight; the bound only stops a peer from making the
/// service hold an unbounded number of them.
constexpr size_t max_pending_requests_per_connection = 1024;

/// Bookkeeping for connections that have not joined: admits at most
/// `max_unjoined` of them and tells which ones overstayed `join_bound_ms`.
/// Plain data, no sockets or clocks: coordination_state drives it.
class connection_limits {
 public:
  connection_limits(int64_t join_bound_ms, size_t max_unjoined);

  /// A connection was accepted at `now_ms`; false (and nothing recorded)
  /// when max_unjoined connections are already waiting to join.
  bool admit(conn_id conn, int64_t now_ms);

  /// `conn` joined, closed or was dropped: it no longer counts.
  void forget(conn_id conn);

  /// The connections whose join bound passed at `now_ms`, forgotten.
  std::vector<conn_id> take_expired(int64_t now_ms);

  /// When the next unjoined connection's bound passes, if any waits.
  std::optional<int64_t> next_deadline_ms() const;

  size_t unjoined() const { return deadlines_.size(); }
  int64_t join_bound_ms() const { return join_bound_ms_; }

 private:
  int64_t join_bound_ms_;
  size_t max_unjoined_;
  std::map<conn_id, int64_t> deadlines_;  // of each unjoined connection
};

}  // namespace lifeboat
