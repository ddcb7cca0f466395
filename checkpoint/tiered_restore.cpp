#include "checkpoint/tiered_restore.hpp"

#include <string>

#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat::checkpoint {

namespace {

constexpr const char* component = "checkpoint";

}  // namespace

caf::expected<std::optional<checkpoint_info>> restore_fastest(store& directory, memory_tier* memory,
                                                              state_registry& registry,
                                                              std::optional<int64_t> max_step,
                                                              const peer_fetch_fn& fetch) {
  auto in_memory = memory != nullptr ? memory->newest_step(max_step) : std::nullopt;
  auto in_directory = directory.newest_committed_step(max_step);
  // A corrupt copy that overwrote registered buffers in part.
  std::optional<std::string> partly_loaded;
  // A copy that does not fit the registered state (another model, other
  // buffers) is refused (errc::invalid_config) without reading the next
  // tier: every tier holds the same bytes, and a peer's replica of a large
  // shard would cross the network only to be refused again.
  // An older step in memory than in the directory is a stale copy (a save
  // that did not reach this host's tier): the directory's is the newest.
  if (in_memory && (!in_directory || *in_memory >= *in_directory)) {
    bool touched = false;
    auto info = memory->restore_step(*in_memory, registry, touched);
    if (touched) partly_loaded = "of step " + std::to_string(*in_memory) + " in the memory tier";
    if (info) {
      log(log_level::info, component, "restored step ", info->step, " from the memory tier ",
          info->path, " (", info->bytes, " bytes in ", info->seconds, " s)");
      return std::optional<checkpoint_info>{std::move(*info)};
    }
    if (info.error() == make_error(errc::invalid_config))
      return wrap_error(
          errc::invalid_config,
          "step " + std::to_string(*in_memory) + " in the memory tier " + memory->path(),
          info.error());
    log(log_level::warning, component, "memory tier: step ", *in_memory, " not restored, reading ",
        fetch ? "the peer's replica" : "the checkpoint directory", ": ", describe(info.error()));
  }
  // A replaced host's memory tier is empty: the peer that keeps this rank's
  // replica sends it back, unless the directory holds a newer step.
  if (memory != nullptr && fetch) {
    peer_fetch_progress progress;
    auto fetched = fetch(max_step, in_directory.value_or(-1), registry, directory.pool(), progress);
    if (progress.touched)
      partly_loaded = "of step " + std::to_string(*progress.step) + " from the peer tier";
    if (!fetched && fetched.error() == make_error(errc::invalid_config))
      return wrap_error(errc::invalid_config, "the peer's replica", fetched.error());
    if (!fetched && progress.step) {
      log(log_level::warning, component, "peer tier: step ", *progress.step,
          " not restored, reading the checkpoint directory: ", describe(fetched.error()));
    } else if (!fetched) {
      log(log_level::warning, component,
          "peer tier: no replica fetched, reading the checkpoint directory: ",
          describe(fetched.error()));
    } else if (*fetched) {
      auto& info = **fetched;
      log(log_level::info, component, "restored step ", info.step, " from the peer tier (",
          info.bytes, " bytes in ", info.seconds, " s, of which the copy took ", info.seconds,
          " s)");
      return fetched;
    }
  }
  // The directory's copy overwrites every registered buffer again, so one
  // that was partly loaded from a corrupt copy does no harm.
  auto restored = directory.restore_latest(registry, max_step);
  if (restored && !*restored && partly_loaded)
    return make_error(errc::corrupt, "a corrupt copy " + *partly_loaded +
                                         " overwrote registered buffers in part, and the "
                                         "checkpoint directory has no checkpoint to restore");
  return restored;
}

bool directory_holds(const store& directory, const checkpoint_info& restored) {
  if (!restored.tiers.empty() && restored.tiers[0].name == tier_directory) return true;
  return directory.newest_committed_step(restored.step) == restored.step;
}

caf::error persist_to_directory(async_saver& saver, const store& directory,
                                const state_registry& registry, const checkpoint_info& restored,
                                std::function<void(int64_t step)> persisted) {
  if (restored.tiers.empty() || directory_holds(directory, restored)) return {};
  auto step = restored.step;
  log(log_level::info, component, "checkpoint of step ", step,
      " is in memory only: writing it to the checkpoint directory while training resumes");
  return saver.save(registry, step, restored.total_run_calls,
                    [step, persisted](const caf::expected<checkpoint_info>& done) {
                      if (done) {
                        log(log_level::info, component, "checkpoint of step ", step,
                            " persisted to the checkpoint directory ", done->path);
                        if (persisted) persisted(step);
                      } else
                        log(log_level::warning, component, "checkpoint of step ", step,
                            " stays in memory only: ", describe(done.error()));
                    },
                    {0, true});
}

}  // namespace lifeboat::checkpoint
