#pragma once

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "checkpoint/file_io.hpp"
#include "messages/checkpoint.pb.h"

namespace lifeboat::checkpoint {

/// Commits the checkpoint in `step_dir`: reads every rank's index (each must be
/// there and intact, which the checkpoint-ready barrier guarantees), records
/// each shard's sizes, index checksum and chunk table, and writes MANIFEST
/// durably (".tmp", fsync, rename, directory fsync) through `fs`.
caf::error write_manifest(file_system& fs, const std::string& step_dir, int64_t step,
                          int world_size, int64_t total_run_calls, mode_t mode = private_file_mode);

/// The manifest of `step_dir`: errc::not_found when absent (not committed),
/// errc::corrupt when garbled, errc::version_mismatch for another schema.
caf::expected<wire::CheckpointManifest> read_manifest(const std::string& step_dir, int64_t step);

/// Rank `rank`'s record in `manifest` (read from `step_dir`, rank < its world
/// size), or errc::corrupt naming the manifest where it records another rank
/// in that place.
caf::expected<const wire::ShardRecord*> rank_record(const wire::CheckpointManifest& manifest,
                                                    const std::string& step_dir, int rank);

}  // namespace lifeboat::checkpoint
