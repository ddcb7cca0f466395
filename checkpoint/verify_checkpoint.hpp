#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>

#include "messages/checkpoint.pb.h"

namespace lifeboat::checkpoint {

/// What verify_checkpoint read: the manifest (world size, run calls, when it
/// was committed) and how many data bytes it checked, every rank's.
struct verified_checkpoint {
  wire::CheckpointManifest manifest;
  uint64_t bytes = 0;
};

/// Checks every rank's shard of the committed checkpoint of `step` in `dir`
/// as a restore of each rank would (the manifest, each index against it,
/// each data file's size and every chunk's checksum), outside any job: no
/// registry, no store, nothing written; a shard per core at a time, each in
/// 1 MiB of memory (verify_shard_data).
/// Errors: errc::not_found when `dir` holds no committed checkpoint of
/// `step`; errc::corrupt naming the first bad file (and chunk);
/// errc::version_mismatch for a manifest of another schema; errc::io_error
/// where a file cannot be read.
caf::expected<verified_checkpoint> verify_checkpoint(const std::string& dir, int64_t step);

}  // namespace lifeboat::checkpoint
