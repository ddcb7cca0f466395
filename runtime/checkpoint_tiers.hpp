#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/coordination/tls_config.hpp"
#include "checkpoint/directory_lock.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/tiered_restore.hpp"
#include "messages/status.pb.h"
#include "platform/cluster_discovery.hpp"
#include "runtime/peer_tier.hpp"

namespace lifeboat {

/// The memory tier a worker writes first: LIFEBOAT_LOCAL_DIR's value
/// `local_dir` (none: checkpoint::default_memory_dir of `checkpoint_dir`;
/// checkpoint::memory_tier_off: none). A tier that cannot be made is logged
/// and left out: the checkpoint directory alone still holds every checkpoint.
/// The one error, errc::already_exists: another process holds this rank's
/// tier (the job started twice on this host, memory_tier::open), and the
/// worker must not go on.
caf::expected<std::optional<checkpoint::memory_tier>> open_worker_memory_tier(
    const std::optional<std::string>& local_dir, const std::string& checkpoint_dir, int rank,
    int world_size);

/// Rank 0's lock on the checkpoint directory itself, held while its worker
/// runs: one job per checkpoint directory, also where no memory tier sees
/// the other (LIFEBOAT_LOCAL_DIR=off, or a job on another host of a shared
/// file system whose locks reach across hosts). Other ranks take none (none
/// to hold: the ranks of one job share the directory). The one error,
/// errc::already_exists: another job's rank 0 holds it. A file system that
/// refuses locks is logged and leaves the directory unlocked. A directory
/// given as a symbolic link is locked where the link leads.
caf::expected<std::optional<checkpoint::directory_lock>> lock_checkpoint_dir(
    const std::string& checkpoint_dir, int rank);

/// A worker's part of the peer tier: the listener that keeps the replicas it
/// holds, and its side of the rank that holds its own. Lifetime: the saver
/// and the restore use `client` through replicate() and fetch(): it must
/// outlive them. Thread-safety: as replica_client.
struct worker_peer_tier {
  std::unique_ptr<replica_server> server;
  std::optional<replica_client> client;  // none: no rank holds this one's shards

  /// For the saver (checkpoint::saver_tiers); null without a holder.
  checkpoint::replicate_fn replicate(const checkpoint::memory_tier& memory);
  /// For the restore (checkpoint::restore_fastest); null without a holder.
  checkpoint::peer_fetch_fn fetch();
};

/// Allocates the files of this rank's next shard ahead of it: a spare in
/// its memory tier (`memory`, null: none) and one at the rank that holds its
/// replicas (`peer`), each of the size of the registry's buffers (callback
/// state, whose size is known only when it is saved, is left to the save,
/// which grows the spare by it). One log line says what was allocated; what could not
/// be (no room on that host) is logged and left to the save, and does not
/// keep the other from being made. For the saver's thread.
void prepare_spares(checkpoint::memory_tier* memory, worker_peer_tier& peer,
                    const checkpoint::state_registry& registry);

/// Every rank publishes its listener's "host:port" ("" for none) and gets
/// every rank's, by rank (startup_agreement::publish_peer_addresses).
using peer_address_exchange = std::function<std::vector<std::string>(const std::string& mine)>;

/// Starts this worker's peer tier beside its memory tier (`memory`, null:
/// none, and then this worker only takes part in the exchange) on the
/// address this host reaches the coordinator from, with TLS when `tls` (the
/// coordination channel's settings) has it on, and finds the rank that
/// holds its replicas. Every rank must call it (the exchange is a meeting).
/// What cannot be started is logged, and the worker goes on without.
worker_peer_tier open_worker_peer_tier(const checkpoint::memory_tier* memory,
                                       const cluster_spec& cluster, const tls_config& tls,
                                       const peer_address_exchange& exchange);

/// What the status shows of a checkpoint (`last_checkpoint`, `restored`):
/// `info`'s step, path, bytes and tiers, with `seconds` for the whole. A
/// path that is not UTF-8 is mended (to_utf8): protobuf's JSON printer
/// dropped its stray bytes with the next ones, and /status showed another path.
wire::CheckpointInfo checkpoint_report(const checkpoint::checkpoint_info& info, double seconds);

}  // namespace lifeboat
