#include "runtime/checkpoint_tiers.hpp"

#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat {

std::optional<checkpoint::memory_tier> open_worker_memory_tier(
    const std::optional<std::string>& local_dir, const std::string& checkpoint_dir, int rank,
    int world_size) {
  if (local_dir == std::string{checkpoint::memory_tier_off}) return std::nullopt;
  auto dir = local_dir ? caf::expected<std::string>{*local_dir}
                       : checkpoint::default_memory_dir(checkpoint_dir);
  auto opened = dir ? checkpoint::memory_tier::open(*dir, rank, world_size)
                    : caf::expected<checkpoint::memory_tier>{dir.error()};
  if (!opened) {
    log(log_level::warning, "runtime",
        "no memory tier, checkpoints go to the directory only: ", describe(opened.error()));
    return std::nullopt;
  }
  log(log_level::info, "runtime", "memory tier: ", opened->path());
  if (!local_dir)
    if (auto err = checkpoint::remove_orphaned_memory_tiers(*dir, checkpoint_dir))
      log(log_level::warning, "runtime", "removing orphaned memory tiers: ", describe(err));
  return std::move(*opened);
}

wire::CheckpointInfo checkpoint_report(const checkpoint::checkpoint_info& info, double seconds) {
  wire::CheckpointInfo out;
  out.set_step(info.step);
  out.set_path(info.path);
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
