#pragma once

#include <cstdint>
#include <optional>

#include <caf/expected.hpp>

#include "checkpoint/async_saver.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/store.hpp"

namespace lifeboat::checkpoint {

/// Restores this rank's newest checkpoint not after `max_step` from the
/// fastest tier that has it verified: the memory tier when its newest step is
/// at least the directory's newest committed one, else (and when that copy is
/// missing, corrupt or does not match the registry: a warning naming the
/// file) the checkpoint directory, as store::restore_latest. `memory` may be
/// null (no memory tier). The result's `tiers` names the one read.
caf::expected<std::optional<checkpoint_info>> restore_fastest(store& directory, memory_tier* memory,
                                                              state_registry& registry,
                                                              std::optional<int64_t> max_step);

/// After a restore from the memory tier of a step the directory lacks (a
/// final save that committed in memory only): hands `saver` a directory-only
/// save of the restored `registry` at that step, which runs while training
/// resumes; every rank takes the same branch (they restored the same step and
/// see the same directory). Nothing to do otherwise. An error when the
/// snapshot cannot be taken.
caf::error persist_to_directory(async_saver& saver, const store& directory,
                                const state_registry& registry, const checkpoint_info& restored);

}  // namespace lifeboat::checkpoint
