#include "runtime/checkpoint_tiers.hpp"

#include <chrono>
#include <filesystem>
#include <future>

#include "checkpoint/file_io.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/utf8.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

caf::expected<std::optional<checkpoint::memory_tier>> open_worker_memory_tier(
    const std::optional<std::string>& local_dir, const std::string& checkpoint_dir, int rank,
    int world_size) {
  if (local_dir == std::string{checkpoint::memory_tier_off}) return std::nullopt;
  auto dir = local_dir ? caf::expected<std::string>{*local_dir}
                       : checkpoint::default_memory_dir(checkpoint_dir);
  // LIFEBOAT_LOCAL_DIR names no checkpoint directory, as the default does:
  // one set for every job of a user held a finished job's tiers when the
  // next job (another checkpoint directory) started, which restored them.
  caf::error unclaimed;
  if (dir && local_dir) unclaimed = checkpoint::claim_local_memory_dir(*dir, checkpoint_dir);
  auto opened = !dir        ? caf::expected<checkpoint::memory_tier>{dir.error()}
                : unclaimed ? caf::expected<checkpoint::memory_tier>{unclaimed}
                            : checkpoint::memory_tier::open(*dir, rank, world_size);
  if (!opened && opened.error() == make_error(errc::already_exists))
    return std::move(opened.error());
  if (!opened) {
    // The store's error speaks of a checkpoint directory: say which one.
    auto where = !dir        ? std::string{}
                 : local_dir ? " in " + *dir + " (LIFEBOAT_LOCAL_DIR)"
                             : " in " + *dir;
    log(log_level::warning, "runtime", "no memory tier", where,
        ", checkpoints go to the directory only: ", describe(opened.error()));
    return std::nullopt;
  }
  log(log_level::info, "runtime", "memory tier: ", opened->path());
  if (!local_dir)
    if (auto err = checkpoint::remove_orphaned_memory_tiers(*dir, checkpoint_dir))
      log(log_level::warning, "runtime", "removing orphaned memory tiers: ", describe(err));
  return std::optional<checkpoint::memory_tier>{std::move(*opened)};
}

caf::expected<std::optional<checkpoint::directory_lock>> lock_checkpoint_dir(
    const std::string& checkpoint_dir, int rank) {
  if (rank != 0) return std::nullopt;
  // A checkpoint directory given as a link (ckpt -> /mnt/shared/job) is
  // locked where the link leads: the lock follows no link, and such a
  // directory went unlocked ("Not a directory"), where a job given the
  // target's own path would not have met its lock either.
  std::error_code ec;
  auto target = std::filesystem::canonical(checkpoint_dir, ec);
  auto lock = checkpoint::directory_lock::acquire(ec ? checkpoint_dir : target.string());
  if (lock) return std::optional<checkpoint::directory_lock>{std::move(*lock)};
  if (lock.error() == make_error(errc::already_exists))
    return make_error(errc::already_exists,
                      "the rank 0 of another job holds it: a job running on the same checkpoint "
                      "directory (started again while the first still runs?), and the two "
                      "would write the same steps over each other; stop the other job or give "
                      "this one a checkpoint directory of its own");
  log(log_level::warning, "runtime", "checkpoint directory ", checkpoint_dir,
      " not locked, a second job on it would not be refused: ", describe(lock.error()));
  return std::nullopt;
}

void prepare_spares(checkpoint::memory_tier* memory, worker_peer_tier& peer,
                    const checkpoint::state_registry& registry) {
  // State saved through callbacks has no size until it is saved: the save
  // grows the spare by its bytes (memory_tier::take_spare).
  uint64_t bytes = 0;
  for (auto& buf : registry.buffers())
    if (buf.kind != checkpoint::buffer_kind::callbacks) bytes += buf.size;
  if (memory == nullptr || bytes == 0) return;
  auto start = std::chrono::steady_clock::now();
  // Each host's room is its own: a holder may have room where this host has
  // none.
  std::string where;
  if (auto err = memory->prepare_spare(bytes))
    log(log_level::info, "runtime", "memory tier: ", describe(err));
  else
    where = "here";
  if (peer.client) {
    if (auto err = peer.client->prepare_spare(bytes))
      log(log_level::info, "runtime", "peer tier: no spare at the holder: ", describe(err));
    else
      where += (where.empty() ? "at " : " and at ") + peer.client->holder();
  }
  if (!where.empty())
    log(log_level::info, "runtime", "memory tier: ", bytes, " bytes allocated for the next shard ",
        where, " in ",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), " s");
}

checkpoint::replicate_fn worker_peer_tier::replicate(const checkpoint::memory_tier& memory) {
  if (!client) return nullptr;
  return [this, &memory](int64_t step, int64_t total_run_calls, std::string_view data) {
    return client->push(memory, step, total_run_calls, data);
  };
}

checkpoint::peer_fetch_fn worker_peer_tier::fetch() {
  if (!client) return nullptr;
  return [this](std::optional<int64_t> max_step, int64_t min_step,
                checkpoint::state_registry& registry, checkpoint::staging_pool& pool,
                checkpoint::peer_fetch_progress& progress) {
    return client->fetch(registry, pool, max_step, min_step, progress);
  };
}

worker_peer_tier open_worker_peer_tier(const checkpoint::memory_tier* memory,
                                       const cluster_spec& cluster, const tls_config& tls,
                                       const peer_address_exchange& exchange) {
  worker_peer_tier out;
  // The coordination channel's TLS settings: checkpoints crossing hosts are
  // encrypted whenever its frames are.
  std::shared_ptr<tls_context> server_tls, client_tls;
  caf::error tls_failed;
  if (tls.enabled) {
    auto server = tls_context::shared(tls, cluster.token, tls_role::server);
    auto client = tls_context::shared(tls, cluster.token, tls_role::client);
    if (server && client) {
      server_tls = std::move(*server);
      client_tls = std::move(*client);
    } else {
      tls_failed = server ? client.error() : server.error();
    }
  }
  // Every rank's host, known once the exchange below returns. A peer that
  // returned from it first may already ask the listener: it waits for them.
  std::promise<std::vector<std::string>> hosts_known;
  std::shared_future<std::vector<std::string>> hosts_future = hosts_known.get_future().share();
  std::string mine;
  if (tls_failed) log(log_level::warning, "runtime", "no peer tier: ", describe(tls_failed));
  if (memory != nullptr && !tls_failed) {
    auto host = local_address_toward(cluster.coordinator_host, cluster.coordinator_port);
    replica_server::config cfg;
    cfg.token = cluster.token;
    cfg.dir = checkpoint::join_path(std::filesystem::path{memory->path()}.parent_path().string(),
                                    checkpoint::peer_tier_dir_name);
    cfg.world_size = cluster.world_size;
    cfg.holds = [hosts_future, rank = cluster.rank](int source) {
      // Each caller reads through its own copy of the future.
      auto hosts = hosts_future;
      if (hosts.wait_for(peer_link_io_timeout) != std::future_status::ready) return false;
      try {
        return replica_holder(hosts.get(), source) == rank;
      } catch (const std::future_error&) {
        return false;  // the exchange failed: this worker is on its way out
      }
    };
    cfg.tls = server_tls;
    if (host) cfg.host = *host;
    auto server = host ? replica_server::start(std::move(cfg))
                       : caf::expected<std::unique_ptr<replica_server>>{host.error()};
    if (server) {
      out.server = std::move(*server);
      mine = endpoint{*host, out.server->port()}.to_string();
    } else {
      log(log_level::warning, "runtime", "no peer tier: ", describe(server.error()));
    }
  }
  auto addresses = exchange(mine);
  std::vector<std::string> hosts;
  for (const auto& address : addresses) {
    auto parts = parse_endpoint(address, "a peer tier's address");
    hosts.push_back(parts ? parts->host : std::string{});
  }
  auto holder = replica_holder(hosts, cluster.rank);
  hosts_known.set_value(std::move(hosts));
  if (!holder || tls_failed) return out;
  auto where = parse_endpoint(addresses[static_cast<size_t>(*holder)], "a peer tier's address");
  out.client.emplace(where->host, where->port, cluster.token, cluster.rank, cluster.world_size,
                     client_tls);
  log(log_level::info, "runtime", "peer tier: rank ", *holder, " at ", out.client->holder(),
      " keeps this rank's replicas", client_tls ? " (TLS 1.3)" : "");
  return out;
}

wire::CheckpointInfo checkpoint_report(const checkpoint::checkpoint_info& info, double seconds) {
  wire::CheckpointInfo out;
  out.set_step(info.step);
  out.set_path(to_utf8(info.path));
  out.set_bytes(info.bytes);
  out.set_seconds(seconds);
  for (const auto& tier : info.tiers) {
    auto* row = out.add_tiers();
    row->set_name(tier.name);
    row->set_seconds(tier.seconds);
  }
  return out;
}

}  // namespace lifeboat
