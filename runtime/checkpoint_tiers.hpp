#pragma once

#include <optional>
#include <string>

#include "checkpoint/memory_tier.hpp"
#include "checkpoint/store.hpp"
#include "messages/status.pb.h"

namespace lifeboat {

/// The memory tier a worker writes first: LIFEBOAT_LOCAL_DIR's value
/// `local_dir` (none: checkpoint::default_memory_dir of `checkpoint_dir`;
/// checkpoint::memory_tier_off: none). A tier that cannot be made is logged
/// and left out: the checkpoint directory alone still holds every checkpoint.
std::optional<checkpoint::memory_tier> open_worker_memory_tier(
    const std::optional<std::string>& local_dir, const std::string& checkpoint_dir, int rank,
    int world_size);

/// What the status shows of a checkpoint (`last_checkpoint`, `restored`):
/// `info`'s step, path, bytes and tiers, with `seconds` for the whole.
wire::CheckpointInfo checkpoint_report(const checkpoint::checkpoint_info& info, double seconds);

}  // namespace lifeboat
