#include "checkpoint/verify_checkpoint.hpp"

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/shard_reader.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

caf::expected<verified_checkpoint> verify_checkpoint(const std::string& dir, int64_t step) {
  auto step_dir = join_path(dir, step_dir_name(step));
  auto manifest = read_manifest(step_dir, step);
  if (!manifest) return std::move(manifest.error());
  // The cheap checks of every shard first, as each rank's restore makes
  // them: a missing or truncated file is named before any data is read.
  if (auto err = verify_shard_files(step_dir, *manifest)) return err;
  verified_checkpoint out;
  for (int rank = 0; rank < manifest->shards_size(); ++rank) {
    auto found = rank_record(*manifest, step_dir, rank);
    if (!found) return std::move(found.error());
    auto& record = **found;
    auto index = read_shard_index(step_dir, record);
    if (!index) return std::move(index.error());
    if (auto err = verify_shard_data(step_dir, *index, record.chunks())) return err;
    out.bytes += static_cast<uint64_t>(record.data_bytes());
  }
  out.manifest = std::move(*manifest);
  return out;
}

}  // namespace lifeboat::checkpoint
