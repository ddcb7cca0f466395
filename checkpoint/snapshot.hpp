#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "checkpoint/staging.hpp"
#include "checkpoint/state_registry.hpp"

namespace lifeboat::checkpoint {

/// Where one buffer's bytes lie in a snapshot (and in the shard's data file).
struct snapshot_entry {
  std::string name;
  buffer_kind kind = buffer_kind::host;
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// A copy of a rank's state at one moment, in staging memory, ready to be
/// written while training goes on. Move-only; its buffer returns to the pool
/// when it is destroyed.
struct snapshot {
  std::vector<snapshot_entry> entries;
  staging_lease bytes;

  uint64_t size() const { return bytes.size(); }
};

/// Copies every registered buffer into a staging buffer from `pool` (device
/// memory through the pinned staging buffer, callbacks by calling `save`).
/// Runs on the training thread: this copy is the whole of its stall. The
/// registry's checks run first: a failed one is its errc::invalid_config.
caf::expected<snapshot> take_snapshot(const state_registry& registry, staging_pool& pool);

}  // namespace lifeboat::checkpoint
