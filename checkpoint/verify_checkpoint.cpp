#include "checkpoint/verify_checkpoint.hpp"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/shard_reader.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

namespace {

// Rank `rank`'s shard, checked as its restore would.
caf::error verify_rank(const std::string& step_dir, const wire::CheckpointManifest& manifest,
                       int rank) {
  auto record = rank_record(manifest, step_dir, rank);
  if (!record) return std::move(record.error());
  auto index = read_shard_index(step_dir, **record);
  if (!index) return std::move(index.error());
  return verify_shard_data(step_dir, *index, (*record)->chunks());
}

// Every rank's shard of `manifest` in `step_dir`: the data bytes checked.
caf::expected<uint64_t> check_shards(const std::string& step_dir,
                                     const wire::CheckpointManifest& manifest) {
  // The cheap checks of every shard first, as each rank's restore makes
  // them: a missing or truncated file is named before any data is read.
  if (auto err = verify_shard_files(step_dir, manifest)) return err;
  // One shard per core at a time: reading and hashing a shard keeps one core
  // busy, and a job's checkpoint has a shard per rank.
  auto ranks = manifest.shards_size();
  auto threads =
      std::max(1, std::min(static_cast<int>(std::thread::hardware_concurrency()), ranks));
  std::vector<caf::error> errors(static_cast<size_t>(ranks));
  std::atomic<int> next{0};
  auto work = [&] {
    for (int rank = next++; rank < ranks; rank = next++)
      errors[static_cast<size_t>(rank)] = verify_rank(step_dir, manifest, rank);
  };
  std::vector<std::thread> helpers;
  try {
    for (int i = 1; i < threads; ++i) helpers.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads to be had: those started and this one check the rest.
  }
  work();
  for (auto& helper : helpers) helper.join();
  // The lowest rank's error, whichever thread found one first.
  for (auto& err : errors)
    if (err) return std::move(err);
  uint64_t bytes = 0;
  for (auto& shard : manifest.shards()) bytes += static_cast<uint64_t>(shard.data_bytes());
  return bytes;
}

}  // namespace

caf::expected<verified_checkpoint> verify_checkpoint(const std::string& dir, int64_t step) {
  auto manifest = read_manifest(join_path(dir, step_dir_name(step)), step);
  if (!manifest) return std::move(manifest.error());
  return verify_shards(dir, step, std::move(*manifest));
}

caf::expected<verified_checkpoint> verify_shards(const std::string& dir, int64_t step,
                                                 wire::CheckpointManifest manifest) {
  auto step_dir = join_path(dir, step_dir_name(step));
  auto checked = check_shards(step_dir, manifest);
  if (!checked && !file_exists(join_path(step_dir, manifest_file_name)))
    return make_error(errc::not_found,
                      "step " + std::to_string(step) + " in " + dir +
                          " was removed during the check (no longer committed: a running job's "
                          "retention removes its older checkpoints as it saves)");
  if (!checked) return std::move(checked.error());
  verified_checkpoint out;
  out.bytes = *checked;
  out.manifest = std::move(manifest);
  return out;
}

}  // namespace lifeboat::checkpoint
