#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lifeboat::checkpoint {

// The on-disk layout (DESIGN "Checkpoint layout"):
//   <dir>/step-000000000123/                       one directory per step
//     shard-00001-of-00004.data                    this rank's bytes
//     shard-00001-of-00004.index                   its buffer table and chunk checksums
//     MANIFEST                                     the commit: present only when complete
// Files are written under a ".tmp" name, fsync'd and renamed into place.

constexpr const char* manifest_file_name = "MANIFEST";
constexpr const char* temp_suffix = ".tmp";

/// "step-000000000123": zero-padded so that names sort by step.
std::string step_dir_name(int64_t step);

/// The step a directory name denotes, or nothing for a foreign name.
std::optional<int64_t> parse_step_dir_name(const std::string& name);

/// "shard-00001-of-00004.data" / ".index".
std::string shard_data_name(int rank, int world_size);
std::string shard_index_name(int rank, int world_size);

}  // namespace lifeboat::checkpoint
