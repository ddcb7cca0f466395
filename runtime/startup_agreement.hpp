#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/coordination/tls_config.hpp"
#include "checkpoint/barrier.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/tier_choice.hpp"
#include "checkpoint/tiered_restore.hpp"
#include "lifeboat/checkpoint_state.hpp"
#include "platform/cluster_discovery.hpp"

namespace lifeboat {

class coordination_client;
class worker_actors;

/// What the coordination agent reports in each heartbeat; each function runs
/// on the middleman's thread until the worker's actors are stopped, so what
/// it captures must outlive them.
struct heartbeat_sources {
  std::function<int64_t()> step;
  std::function<std::string()> status;  // opaque to the service (cluster_phase.hpp)
  std::function<bool()> paused;         // in a save: no step time, no hang
  std::function<bool()> in_step;        // inside run(): Heartbeat.in_step
  std::function<bool()> finished;       // closing: Heartbeat.finished
  std::function<int64_t()> blocked_ms;
};

/// How a worker joins.
struct join_config {
  std::chrono::milliseconds heartbeat_timeout{0};
  /// For the service: -1 adaptive, 0 off, else milliseconds.
  int64_t hang_timeout_ms = 0;
  heartbeat_sources heartbeat;
  /// The service's and the agent's (worker_settings::tls).
  tls_config tls;
};

/// The first meeting of a worker's start: hosts the coordination service
/// where this worker does (rank 0 without an external coordinator; then
/// `cluster.coordinator_port` becomes the port it got) and joins it; both go
/// to `actors`, which stops them. Throws config_error when the worker cannot
/// host or join, peer_error when the service was lost during the join.
void join_cluster(worker_actors& actors, cluster_spec& cluster, const join_config& cfg);

/// The meetings after the join, where every worker publishes what it can do
/// and all take the same decision from what all published: the checkpoint to
/// restore, then the kind of checkpoint-ready barrier.
///
/// Lifetime: `client` must outlive it; a ready barrier it makes uses the
/// client too (see make_ready_barrier). Thread-safety: not thread-safe; the
/// training thread uses it during the runtime's construction only.
class startup_agreement {
 public:
  startup_agreement(coordination_client& client, int rank, int world_size);

  /// Without a store, waits for every worker to join. With one, every rank
  /// restores the newest checkpoint it can verify, from its `memory` tier
  /// (may be null) where that has it, else from the store's directory
  /// (checkpoint::restore_fastest, with `fetch` for the peer tier); when they
  /// differ, all restore the newest step every rank has. Returns the restored
  /// total_run_calls (0: a fresh start). Throws config_error when no step can
  /// be agreed on or a checkpoint cannot be read, peer_error when a meeting
  /// fails.
  int64_t restore(checkpoint::store* store, checkpoint::memory_tier* memory,
                  checkpoint_state& state, const std::string& checkpoint_dir,
                  const checkpoint::peer_fetch_fn& fetch = nullptr);

  /// Every rank publishes the address of its peer tier's listener (`mine`,
  /// "host:port"; empty: none) and gets every rank's, by rank. Throws
  /// peer_error when the meeting fails.
  std::vector<std::string> publish_peer_addresses(const std::string& mine);

  /// What restore restored; none for a fresh start.
  const std::optional<checkpoint::checkpoint_info>& restored() const { return restored_; }

  /// The exchange of a final save's tier votes (checkpoint::tier_vote_exchange)
  /// through the coordination service; null for one worker. It uses the
  /// client: it must not outlive it.
  checkpoint::tier_vote_exchange make_tier_vote_exchange();

  /// The checkpoint-ready barrier every worker uses: NCCL on a communicator
  /// split from `nccl_communicator` where every worker can, else the
  /// coordination service's (which uses the client: it must not outlive it);
  /// null for one worker. Throws peer_error when a meeting fails.
  std::unique_ptr<checkpoint::barrier> make_ready_barrier(void* nccl_communicator);

 private:
  using published = std::vector<std::pair<std::string, std::string>>;

  // The lowest and the highest step the ranks could restore in a round
  // (-1: none), each with the first rank that published it.
  struct published_steps {
    int64_t lowest;
    int64_t highest;
    std::string lowest_rank;
    std::string highest_rank;
  };
  published_steps restore_steps_published(int round, int64_t my_step);
  // Every rank publishes `mine` under `prefix` and meets the others; returns
  // what each said, keyed by prefix + rank. A failed meeting throws
  // peer_error("what: why").
  published exchange(const std::string& prefix, const std::string& mine, const std::string& what);
  // True when every rank said it can; else logs the first that cannot.
  bool every_rank_can(const std::string& prefix, const published& said);

  coordination_client& client_;
  int rank_;
  int world_size_;
  std::optional<checkpoint::checkpoint_info> restored_;
};

}  // namespace lifeboat
