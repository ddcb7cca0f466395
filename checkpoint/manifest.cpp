#include "checkpoint/manifest.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "checkpoint/file_io.hpp"
#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "messages/errors.hpp"
#include "platform/clock.hpp"

namespace lifeboat::checkpoint {

namespace {

// A manifest or index names its files relative to its step directory; one
// that reaches outside it (an absolute path, "..", a subdirectory) would make
// a restore read, and a commit stat, whatever file a writer of the
// checkpoint directory chose.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string{"/\0", 2}) == std::string::npos;
}

caf::error add_shard_record(const std::string& step_dir, int rank, int world_size,
                            wire::CheckpointManifest& manifest) {
  auto index_name = shard_index_name(rank, world_size);
  auto index_path = join_path(step_dir, index_name);
  auto bytes = read_whole_file(index_path);
  if (!bytes) {
    if (!file_exists(index_path))
      return make_error(errc::not_found, "cannot commit step " + std::to_string(manifest.step()) +
                                             ": shard of rank " + std::to_string(rank) +
                                             " is missing (" + index_path + ")");
    return std::move(bytes.error());
  }
  wire::ShardIndex index;
  if (auto err = decode_framed(index_magic, *bytes, index_path, index)) return err;
  if (!is_plain_file_name(index.data_file()))
    return corrupt_file(index_path,
                        "names data file \"" + index.data_file() + "\" outside its step directory");
  auto data_path = join_path(step_dir, index.data_file());
  struct stat st;
  if (::stat(data_path.c_str(), &st) != 0) return io_error("stat", data_path, errno);
  if (st.st_size != index.data_bytes())
    return corrupt_file(data_path, std::to_string(st.st_size) + " bytes, index says " +
                                       std::to_string(index.data_bytes()));
  auto* record = manifest.add_shards();
  record->set_rank(rank);
  record->set_data_file(index.data_file());
  record->set_index_file(index_name);
  record->set_data_bytes(index.data_bytes());
  record->set_index_bytes(static_cast<int64_t>(bytes->size()));
  record->set_index_checksum(checksum_of(*bytes));
  *record->mutable_chunks() = index.chunks();
  return {};
}

}  // namespace

caf::error write_manifest(file_system& fs, const std::string& step_dir, int64_t step,
                          int world_size, int64_t total_run_calls, mode_t mode) {
  wire::CheckpointManifest manifest;
  manifest.set_schema_version(checkpoint_schema_version);
  manifest.set_lifeboat_version(LIFEBOAT_VERSION);
  manifest.set_step(step);
  manifest.set_world_size(world_size);
  manifest.set_total_run_calls(total_run_calls);
  manifest.set_created_unix_ms(unix_now_ms());
  for (int rank = 0; rank < world_size; ++rank)
    if (auto err = add_shard_record(step_dir, rank, world_size, manifest)) return err;
  return write_file_durably(fs, step_dir, manifest_file_name,
                            encode_framed(manifest_magic, manifest), mode);
}

caf::expected<wire::CheckpointManifest> read_manifest(const std::string& step_dir, int64_t step) {
  auto path = join_path(step_dir, manifest_file_name);
  if (!file_exists(path)) return make_error(errc::not_found, "no manifest in " + step_dir);
  auto bytes = read_whole_file(path);
  if (!bytes) return std::move(bytes.error());
  wire::CheckpointManifest manifest;
  if (auto err = decode_framed(manifest_magic, *bytes, path, manifest)) return err;
  if (manifest.schema_version() != checkpoint_schema_version)
    return make_error(errc::version_mismatch,
                      path + " has schema version " + std::to_string(manifest.schema_version()) +
                          ", this build reads " + std::to_string(checkpoint_schema_version));
  if (manifest.step() != step)
    return corrupt_file(path, "records step " + std::to_string(manifest.step()) +
                                  " in the directory of step " + std::to_string(step));
  if (manifest.shards_size() != manifest.world_size())
    return corrupt_file(path, std::to_string(manifest.shards_size()) + " shards for world size " +
                                  std::to_string(manifest.world_size()));
  for (auto& shard : manifest.shards())
    for (auto* name : {&shard.data_file(), &shard.index_file()})
      if (!is_plain_file_name(*name))
        return corrupt_file(path, "names file \"" + *name + "\" outside its step directory");
  return manifest;
}

caf::expected<const wire::ShardRecord*> rank_record(const wire::CheckpointManifest& manifest,
                                                    const std::string& step_dir, int rank) {
  auto& record = manifest.shards(rank);
  if (record.rank() != rank)
    return corrupt_file(
        join_path(step_dir, manifest_file_name),
        "shard " + std::to_string(rank) + " is recorded as rank " + std::to_string(record.rank()));
  return &record;
}

}  // namespace lifeboat::checkpoint
