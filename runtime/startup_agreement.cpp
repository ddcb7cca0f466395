#include "runtime/startup_agreement.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "actors/coordination/coordination_barrier.hpp"
#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "actors/coordination/heartbeat_schedule.hpp"
#include "actors/preemption/cluster_phase.hpp"
#include "actors/preemption/decision_recorder.hpp"
#include "checkpoint/tiered_restore.hpp"
#include "lifeboat/errors.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/text_parse.hpp"
#include "runtime/io_thread_policy.hpp"
#include "runtime/worker_actors.hpp"

namespace lifeboat {

namespace {

using namespace std::chrono_literals;

// Workers may start before the service is up (a launcher, rank 0).
constexpr auto join_timeout = 120s;
// Every rank publishes the step it could restore; the others wait this long.
constexpr auto restore_agreement_timeout = 120s;
constexpr int max_restore_rounds = 4;
constexpr const char* restore_key_prefix = "lifeboat/restore/";
constexpr const char* restore_agreement = "agreeing on the checkpoint to restore";
// Without a store (save_fn saves) there is nothing to restore, but the
// workers still meet before any trains, within restore_agreement_timeout.
constexpr const char* start_barrier_name = "lifeboat/start";
// The workers agree on the kind of checkpoint-ready barrier under these keys.
constexpr const char* nccl_usable_key_prefix = "lifeboat/nccl/usable/";
constexpr const char* nccl_split_key_prefix = "lifeboat/nccl/split/";
constexpr const char* can_value = "ok";
constexpr const char* no_communicator_value = "no NCCL communicator was handed over";
// A save's tier agreement (checkpoint/tier_choice.hpp), per round and step.
constexpr const char* tier_vote_key_prefix = "lifeboat/tiers/";
// Every rank's peer tier listener ("host:port", empty: none).
constexpr const char* peer_address_key_prefix = "lifeboat/peer-tier/";
constexpr const char* peer_address_agreement = "publishing the peer tier's addresses";
constexpr const char* ready_barrier_agreement = "agreeing on the checkpoint-ready barrier";
// Splitting the trainer's communicator: every worker is past the restore
// agreement by then, so this bounds only a worker that dies on the way.
constexpr auto nccl_split_timeout = 60s;

[[noreturn]] void fail_config(const std::string& what) { throw config_error(what); }

// What a worker publishes of an attempt: can_value, or why not.
std::string verdict(const caf::error& err) { return err ? describe(err) : can_value; }

}  // namespace

void join_cluster(worker_actors& actors, cluster_spec& cluster, const join_config& cfg) {
  auto& sys = actors.system();
  if (!cluster.coordinator_external && cluster.rank == 0) {
    service_config service_cfg;
    service_cfg.host = cluster.world_size == 1 ? "127.0.0.1" : cluster.coordinator_host;
    service_cfg.port = cluster.world_size == 1 ? 0 : cluster.coordinator_port;
    service_cfg.world_size = cluster.world_size;
    service_cfg.token = cluster.token;
    service_cfg.heartbeat_timeout = cfg.heartbeat_timeout;
    service_cfg.annotate_status = annotate_preemption_status;
    service_cfg.tls = cfg.tls;
    auto service = spawn_coordination_service(sys, service_cfg);
    if (!service)
      fail_config("cannot host the coordination service at " +
                  endpoint{service_cfg.host, service_cfg.port}.to_string() + ": " +
                  describe(service.error()) +
                  " (rank 0 hosts it unless LIFEBOAT_COORDINATOR_EXTERNAL=1 says that a "
                  "launcher or lifeboat-coordinator does)");
    actors.adopt_service(service->first);
    cluster.coordinator_port = service->second;
  }
  // A round fans out from the coordination service: it writes the query,
  // then the commit, to every worker in turn, and each write wakes one. Where
  // cores are short (many workers on one host), a woken worker preempted the
  // service's thread at each write, so every later write waited for it, and
  // the round ends with the last one. Every worker that does not host the
  // service therefore runs its I/O thread (agent, watchers, resolver) as
  // SCHED_BATCH: its fair share of CPU is the same, but a wake-up no longer
  // preempts. The service's thread, and an external coordinator's, keep the
  // default. Measured with handler_bench at N = 16 on 2 cores: the 15 writes
  // of a fan-out took 1135 us (median) before, 157 us after, and the
  // agreement's p50 was lower in 13 of 17 interleaved pairs of runs, by about
  // a tenth.
  if (cluster.coordinator_external || cluster.rank != 0) run_io_thread_as_batch(sys, "runtime");
  agent_config agent;
  agent.host = cluster.coordinator_host;
  agent.port = cluster.coordinator_port;
  agent.rank = cluster.rank;
  agent.world_size = cluster.world_size;
  agent.incarnation = static_cast<uint32_t>(cluster.restart_count);
  agent.token = cluster.token;
  agent.heartbeat_interval = heartbeat_interval_for(cfg.heartbeat_timeout);
  agent.join_timeout = join_timeout;
  agent.rejoin_bound = cfg.heartbeat_timeout;
  agent.service_silence_bound = cfg.heartbeat_timeout;
  agent.step_source = cfg.heartbeat.step;
  agent.status_source = cfg.heartbeat.status;
  agent.paused_source = cfg.heartbeat.paused;
  agent.in_step_source = cfg.heartbeat.in_step;
  agent.finished_source = cfg.heartbeat.finished;
  agent.blocked_source = cfg.heartbeat.blocked_ms;
  agent.hang_timeout_ms = cfg.hang_timeout_ms;
  agent.tls = cfg.tls;
  if (!cluster.coordinator_external) agent.service_rank = 0;
  auto client = coordination_client::connect(sys, agent);
  // A service lost during the start is a lost peer (exit 3 by the contract):
  // rank 0 where its process hosted the service. Anything else that keeps a
  // worker from joining is its configuration.
  if (!client && client.error() == make_error(errc::peer_lost))
    throw peer_error(agent.service_rank, describe(client.error()), true);
  if (!client)
    fail_config("cannot join the coordination service at " +
                endpoint{agent.host, agent.port}.to_string() + ": " + describe(client.error()));
  actors.adopt_client(std::move(*client));
  // The coordinator's status page shows every rank's part in a decision.
  decision_recorder::process().configure(cluster.rank, agent.incarnation,
                                         publish_to_agent(actors.client()->agent()));
  log(log_level::info, "runtime", "joined the coordination service at ",
      endpoint{agent.host, agent.port}.to_string(), " (incarnation ", agent.incarnation, ")");
}

startup_agreement::startup_agreement(coordination_client& client, int rank, int world_size)
    : client_(client), rank_(rank), world_size_(world_size) {}

int64_t startup_agreement::restore(checkpoint::store* store, checkpoint::memory_tier* memory,
                                   checkpoint_state& state, const std::string& checkpoint_dir,
                                   const checkpoint::peer_fetch_fn& fetch) {
  if (store == nullptr) {
    // A round reaches only the workers that have joined: one that joins
    // after a peer's notice never answers it, and the round never ends. With
    // a store, the restore agreement below makes every worker wait for all to
    // join; without one, this barrier does.
    if (world_size_ > 1)
      if (auto err = client_.barrier(start_barrier_name, restore_agreement_timeout))
        throw peer_error(-1, "waiting for every worker to join: " + describe(err), false);
    return 0;
  }
  if (rank_ == 0)
    if (auto err = store->remove_partial())
      log(log_level::warning, "runtime", "cleaning partial checkpoints: ", describe(err));
  std::optional<int64_t> limit;
  auto& restored = restored_;
  for (int round = 0; round < max_restore_rounds; ++round) {
    // A rank whose checkpoint is already at the limit keeps it: reading the
    // same step again would change nothing but the time the round takes.
    if (round == 0 || (restored && restored->step > *limit)) {
      auto loaded = checkpoint::restore_fastest(*store, memory, state.registry(), limit, fetch);
      if (!loaded)
        fail_config("restoring from '" + checkpoint_dir + "': " + describe(loaded.error()));
      restored = std::move(*loaded);
    }
    int64_t my_step = restored ? restored->step : -1;
    auto steps = restore_steps_published(round, my_step);
    auto lowest = steps.lowest;
    auto highest = steps.highest;
    // Every rank reads the same published steps, so all take the same branch
    // in the same round. Leaving on a rank's own view (its step is the
    // lowest) let it go on while a peer fell back to a second round that it
    // never joined, and both waited for the other until the 120 s bound.
    if (lowest < 0 && highest < 0) return 0;
    // A rank with no checkpoint beside one that restored (after the first
    // round every rank has loaded one): a restore overwrites the registered
    // buffers, so the ranks that restored no longer hold the trainer's
    // initial state, and a fresh start would train them from another state
    // than their peers.
    if (lowest < 0)
      fail_config("rank " + steps.lowest_rank + " has no checkpoint it can restore" +
                  (round == 0 ? "" : " at or before step " + std::to_string(*limit)) +
                  ", and rank " + steps.highest_rank + " restored step " + std::to_string(highest) +
                  " into its registered buffers: those no longer hold the initial state, so "
                  "the workers cannot all start fresh; make one checkpoint readable by every "
                  "rank (or remove the checkpoints) and start again");
    if (lowest == highest) {
      log(log_level::info, "runtime", "restored checkpoint at step ", my_step, " (total_run_calls ",
          restored->total_run_calls, ") from ", restored->path);
      return restored->total_run_calls;
    }
    limit = lowest;
  }
  fail_config("the workers could not agree on a checkpoint to restore");
}

startup_agreement::published_steps startup_agreement::restore_steps_published(int round,
                                                                              int64_t my_step) {
  if (world_size_ == 1) return {my_step, my_step, std::to_string(rank_), std::to_string(rank_)};
  auto prefix = restore_key_prefix + std::to_string(round) + "/";
  auto published = exchange(prefix, std::to_string(my_step), restore_agreement);
  if (published.size() != static_cast<size_t>(world_size_))
    fail_config(std::string{restore_agreement} + ": " + std::to_string(published.size()) + " of " +
                std::to_string(world_size_) + " ranks published a step");
  published_steps steps{
      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), {}, {}};
  for (auto& [key, value] : published) {
    // Text a peer published: parsed, never trusted to be a number.
    auto step = parse_integer(value, key, -1, std::numeric_limits<int64_t>::max());
    if (!step) fail_config(std::string{restore_agreement} + ": " + describe(step.error()));
    auto rank = key.substr(std::min(key.size(), prefix.size()));
    if (*step < steps.lowest) {
      steps.lowest = *step;
      steps.lowest_rank = rank;
    }
    if (*step > steps.highest) {
      steps.highest = *step;
      steps.highest_rank = rank;
    }
  }
  return steps;
}

// 1. Every worker says whether it can use an NCCL barrier: it can, it was
//    handed no communicator, or why not. All say it, also where no trainer
//    handed one over, so that one whose trainer did never waits in the split
//    (a collective call) for peers that will not make it.
// 2. Each splits a communicator from the trainer's (bounded).
// 3. Every worker says whether its split worked: a barrier that one worker
//    never enters fails every save.
// Any "no" on the way: all use the coordination service.
std::unique_ptr<checkpoint::barrier> startup_agreement::make_ready_barrier(
    void* nccl_communicator) {
  if (world_size_ == 1) return nullptr;
  auto usable = exchange(nccl_usable_key_prefix,
                         nccl_communicator == nullptr ? no_communicator_value
                                                      : verdict(checkpoint::nccl_barrier_usable()),
                         ready_barrier_agreement);
  bool handed_over = std::any_of(usable.begin(), usable.end(), [](const auto& said) {
    return said.second != no_communicator_value;
  });
  if (handed_over && every_rank_can(nccl_usable_key_prefix, usable)) {
    auto nccl = checkpoint::make_nccl_barrier(nccl_communicator, nccl_split_timeout);
    auto split = exchange(nccl_split_key_prefix, verdict(nccl ? caf::error{} : nccl.error()),
                          ready_barrier_agreement);
    if (every_rank_can(nccl_split_key_prefix, split)) {
      log(log_level::info, "runtime",
          "checkpoint-ready barrier: NCCL all-reduce on a communicator split from the trainer's");
      return std::move(*nccl);
    }
  }
  return std::make_unique<coordination_barrier>(client_);
}

std::vector<std::string> startup_agreement::publish_peer_addresses(const std::string& mine) {
  std::vector<std::string> by_rank(static_cast<size_t>(world_size_));
  for (auto& [key, value] : exchange(peer_address_key_prefix, mine, peer_address_agreement)) {
    auto rank = parse_integer(std::string_view{key}.substr(std::strlen(peer_address_key_prefix)),
                              key, 0, world_size_ - 1);
    if (!rank)
      throw peer_error(-1, std::string{peer_address_agreement} + ": " + describe(rank.error()),
                       false);
    by_rank[static_cast<size_t>(*rank)] = value;
  }
  return by_rank;
}

checkpoint::tier_vote_exchange startup_agreement::make_tier_vote_exchange() {
  if (world_size_ == 1) return nullptr;
  return [client = &client_, rank = rank_, world = world_size_](
             const std::string& round, int64_t step, const std::string& said,
             std::chrono::milliseconds timeout) -> caf::expected<std::vector<std::string>> {
    auto prefix = tier_vote_key_prefix + round + "/" + std::to_string(step) + "/";
    if (auto err = client->insert(prefix + std::to_string(rank), said)) return err;
    if (auto err = client->barrier(prefix, timeout)) return err;
    auto published = client->get_prefix(prefix);
    if (!published) return std::move(published.error());
    std::vector<std::string> by_rank(static_cast<size_t>(world));
    for (auto& [key, value] : *published) {
      auto r = parse_integer(std::string_view{key}.substr(prefix.size()), key, 0, world - 1);
      if (r) by_rank[static_cast<size_t>(*r)] = std::move(value);
    }
    return by_rank;
  };
}

// Publish, meet, read: the barrier fails at once for everyone when a peer is
// lost or failed, where waiting on its key would not.
startup_agreement::published startup_agreement::exchange(const std::string& prefix,
                                                         const std::string& mine,
                                                         const std::string& what) {
  client_.insert(prefix + std::to_string(rank_), mine);
  if (auto err = client_.barrier(prefix, restore_agreement_timeout))
    throw peer_error(-1, what + ": " + describe(err), false);
  auto published = client_.get_prefix(prefix);
  if (!published) throw peer_error(-1, what + ": " + describe(published.error()), false);
  return std::move(*published);
}

bool startup_agreement::every_rank_can(const std::string& prefix, const published& said) {
  auto refusal = std::find_if(said.begin(), said.end(),
                              [](const auto& entry) { return entry.second != can_value; });
  if (refusal == said.end()) return true;
  log(log_level::warning, "runtime",
      "checkpoint-ready barrier through the coordination service, not NCCL: rank ",
      refusal->first.substr(prefix.size()), ": ", refusal->second);
  return false;
}

}  // namespace lifeboat
