#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <caf/expected.hpp>

#include "checkpoint/memory_tier.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/tiered_restore.hpp"
#include "runtime/peer_link.hpp"

namespace lifeboat {

namespace wire {
class ReplicaRequest;
}  // namespace wire

/// Tier 1 of checkpoints (DESIGN "Checkpoint tiers"): every rank sends its
/// shard, once it is committed in its memory tier, to one other rank, its
/// holder, which keeps it in its own host's memory; a rank whose memory tier
/// lost the shard (a replaced host) fetches it back from there.

/// The rank that holds `rank`'s replica, given the host of every rank: the
/// next rank (cyclically) on another host, so that the copy outlives this
/// host; on one host, the next rank. Ranks whose host is empty have no peer
/// tier and are passed over. None when no other rank has one (or `rank`
/// has none).
std::optional<int> replica_holder(const std::vector<std::string>& hosts, int rank);

/// The local address this host reaches `host`:`port` from (a UDP socket's
/// route; nothing is sent), which peers on that network can reach back.
caf::expected<std::string> local_address_toward(const std::string& host, uint16_t port);

/// A worker's listener of the peer tier: keeps the replicas pushed by the
/// ranks it holds for, and sends one back on request. Each connection runs
/// on a thread of its own (at most max_connections at once; more are closed
/// at once), and a connection's requests on one rank's replicas take that
/// rank's turn, so a push and a fetch of the same rank never interleave.
///
/// Lifetime: the destructor stops accepting, cuts the open connections and
/// joins their threads. Thread-safety: the members may be called from any
/// thread.
class replica_server {
 public:
  static constexpr int max_connections = 8;

  struct config {
    std::string host;   // a numeric address to listen on (port: any free one)
    std::string token;  // LIFEBOAT_CLUSTER_TOKEN
    std::string dir;    // where replicas are kept (see checkpoint::peer_tier_dir_name)
    int world_size = 1;
    // Whether this worker holds `rank`'s replica: others are refused.
    std::function<bool(int rank)> holds;
    // A server context: TLS on every connection; null: clear text.
    std::shared_ptr<tls_context> tls;
  };

  static caf::expected<std::unique_ptr<replica_server>> start(config cfg);
  ~replica_server();

  replica_server(const replica_server&) = delete;
  replica_server& operator=(const replica_server&) = delete;

  uint16_t port() const { return port_; }

  /// Removes every replica this worker holds (at a clean end of training).
  caf::error remove_replicas();

 private:
  replica_server(config cfg, int listener, uint16_t port);

  void accept_loop();
  // Joins the threads of the connections that ended.
  void reap();
  void serve(int fd);
  // One request on `link`, from the connector's proof to the last reply.
  caf::error answer(peer_link& link);
  caf::error take_push(peer_link& link, const wire::ReplicaRequest& request,
                       checkpoint::memory_tier& replicas);
  caf::error answer_fetch(peer_link& link, const wire::ReplicaRequest& request,
                          const checkpoint::memory_tier& replicas);
  caf::error prepare_spare(peer_link& link, const wire::ReplicaRequest& request,
                           checkpoint::memory_tier& replicas);
  // The replicas of `rank`, opened on first use.
  caf::expected<checkpoint::memory_tier*> replicas_of(int rank);
  // The lock a request on `rank`'s replicas holds throughout (mtx_ held).
  std::mutex& turn_of(int rank);

  config cfg_;
  int listener_;
  uint16_t port_;
  int wake_[2] = {-1, -1};  // a pipe: the destructor's byte ends accept_loop
  std::mutex mtx_;
  std::map<int, checkpoint::memory_tier> replicas_;
  std::map<int, std::unique_ptr<std::mutex>> turns_;  // by rank: turn_of
  struct connection {
    int fd;  // to cut it at the end
    std::thread thread;
  };
  std::map<int, connection> connections_;  // by id, until reaped
  std::vector<int> ended_;                 // ids whose thread is at its end
  int next_id_ = 0;
  std::thread acceptor_;
};

/// One rank's side of the peer tier: pushes its shards to its holder and
/// fetches them back. Thread-safety: one call at a time (the saver thread
/// pushes; the training thread fetches, at start, before any save).
class replica_client {
 public:
  /// `tls`: a client context, or null for clear text.
  replica_client(std::string holder_host, uint16_t holder_port, std::string token, int rank,
                 int world_size, std::shared_ptr<tls_context> tls = nullptr);

  /// Sends `own`'s committed shard of `step` to the holder, which commits it
  /// in its memory before it answers; the seconds it took. `data`: the data
  /// file's bytes in memory, sent instead of the file's when it has the
  /// file's size; empty: the file's.
  caf::expected<double> push(const checkpoint::memory_tier& own, int64_t step,
                             int64_t total_run_calls, std::string_view data = {});

  /// Asks the holder to allocate, now, the file of this rank's next replica
  /// of `data_bytes` (memory_tier::prepare_spare), so that the push of a
  /// preemption's save writes into allocated pages. Errors: the
  /// connection's, errc::unavailable (the holder has no room for it, or
  /// refused).
  caf::error prepare_spare(uint64_t data_bytes);

  /// Restores the holder's newest copy not after `max_step` and not before
  /// `min_step` into `registry`, streamed straight into the registered
  /// buffers and verified chunk by chunk as it arrives (no file between);
  /// none when the holder has none. `progress` says how far it got. Errors:
  /// the connection's, errc::unavailable (the holder refused),
  /// errc::invalid_argument (a step or sizes not asked for), errc::corrupt
  /// (an index or a chunk that does not verify: named as the holder's file),
  /// errc::invalid_config (a shard that does not fit the registry).
  caf::expected<std::optional<checkpoint::checkpoint_info>> fetch(
      checkpoint::state_registry& registry, checkpoint::staging_pool& pool,
      std::optional<int64_t> max_step, int64_t min_step, checkpoint::peer_fetch_progress& progress);

  /// "host:port" of the holder.
  std::string holder() const;

 private:
  // Connects to the holder and sends `request` as this rank's, with the proof.
  caf::expected<peer_link> send_request(wire::ReplicaRequest& request);
  // The holder's reply: an error unless it consents (found).
  caf::error receive_consent(peer_link& link);

  std::string host_;
  uint16_t port_;
  std::string token_;
  int rank_;
  int world_size_;
  std::shared_ptr<tls_context> tls_;
};

}  // namespace lifeboat
