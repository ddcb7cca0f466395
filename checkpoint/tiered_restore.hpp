#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include <caf/expected.hpp>

#include "checkpoint/async_saver.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/store.hpp"

namespace lifeboat::checkpoint {

/// How far a fetch from the peer got, for the line that says why it failed.
struct peer_fetch_progress {
  std::optional<int64_t> step;  // the step the peer offered
  bool touched = false;         // registered host memory was overwritten
};

/// Restores this rank's newest replica not after `max_step` and not before
/// `min_step` from the peer that keeps it into `registry`, verified as it
/// arrives; none when the peer has none. The result's `tiers` holds
/// tier_peer and the fetch's seconds.
using peer_fetch_fn = std::function<caf::expected<std::optional<checkpoint_info>>(
    std::optional<int64_t> max_step, int64_t min_step, state_registry& registry, staging_pool& pool,
    peer_fetch_progress& progress)>;

/// Restores this rank's newest checkpoint not after `max_step` from the
/// fastest tier that has it verified, at least as new as the directory's
/// newest committed one:
///   1. the memory tier;
///   2. the peer's replica (`fetch`; null: no peer tier), streamed into
///      the registered buffers;
///   3. the checkpoint directory, as store::restore_latest.
/// A copy that is missing or corrupt is a warning naming the file, and the
/// next tier is read. One that does not match the registry (another size,
/// other buffers) is errc::invalid_config at once: the other tiers hold the
/// same bytes. `memory` may be null
/// (no memory tier, and then no peer tier). The result's `tiers` names the
/// one read.
caf::expected<std::optional<checkpoint_info>> restore_fastest(store& directory, memory_tier* memory,
                                                              state_registry& registry,
                                                              std::optional<int64_t> max_step,
                                                              const peer_fetch_fn& fetch = nullptr);

/// Whether the checkpoint directory holds `restored` committed: it was read
/// from there, or the directory has its step committed as well.
bool directory_holds(const store& directory, const checkpoint_info& restored);

/// After a restore from the memory or peer tier of a step the directory lacks (a
/// final save that committed in memory only): hands `saver` a directory-only
/// save of the restored `registry` at that step, which runs while training
/// resumes; every rank takes the same branch (they restored the same step and
/// see the same directory). Nothing to do otherwise. `persisted` (may be
/// null) runs on the saver's thread once that save committed. An error when
/// the snapshot cannot be taken.
caf::error persist_to_directory(async_saver& saver, const store& directory,
                                const state_registry& registry, const checkpoint_info& restored,
                                std::function<void(int64_t step)> persisted = nullptr);

}  // namespace lifeboat::checkpoint
