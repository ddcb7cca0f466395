#include "checkpoint/verify_checkpoint.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/shard_reader.hpp"
#include "messages/background_thread.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

namespace {

// Part of one rank's shard to check: chunks [first, end).
struct shard_part {
  int rank;
  uint64_t first;
  uint64_t end;
};

// Rank `rank`'s shard index into `index`, after the checks that read no
// data (its record, its buffers against the chunk table, its data file's
// size): the number of its chunks to read.
caf::expected<uint64_t> read_index(const std::string& step_dir,
                                   const wire::CheckpointManifest& manifest, int rank,
                                   wire::ShardIndex& index) {
  auto record = rank_record(manifest, step_dir, rank);
  if (!record) return std::move(record.error());
  auto read = read_shard_index(step_dir, **record);
  if (!read) return std::move(read.error());
  index = std::move(*read);
  return shard_chunk_count(step_dir, index, (*record)->chunks());
}

// Every rank's shard of `manifest` in `step_dir`: the data bytes checked.
caf::expected<uint64_t> check_shards(const std::string& step_dir,
                                     const wire::CheckpointManifest& manifest) {
  // The cheap checks of every shard first, as each rank's restore makes
  // them: a missing or truncated file is named before any data is read.
  if (auto err = verify_shard_files(step_dir, manifest)) return err;
  auto ranks = manifest.shards_size();
  auto cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Reading and hashing keeps one core busy: each shard is cut into as many
  // parts as give every core one when there are fewer shards than cores (a
  // job of one worker, whose one shard a single thread read at half the
  // speed of `cat` on two cores).
  auto parts_per_shard = static_cast<uint64_t>(std::max(1, cores / std::max(1, ranks)));
  std::vector<caf::error> rank_errors(static_cast<size_t>(ranks));
  std::vector<wire::ShardIndex> indexes(static_cast<size_t>(ranks));
  std::vector<shard_part> parts;
  for (int rank = 0; rank < ranks; ++rank) {
    auto count = read_index(step_dir, manifest, rank, indexes[static_cast<size_t>(rank)]);
    if (!count) {
      rank_errors[static_cast<size_t>(rank)] = std::move(count.error());
      continue;
    }
    auto per_part = std::max<uint64_t>(1, (*count + parts_per_shard - 1) / parts_per_shard);
    for (uint64_t first = 0; first < *count; first += per_part)
      parts.push_back({rank, first, std::min(*count, first + per_part)});
  }
  // In order of rank and chunk: the first failed part names the lowest
  // rank's first bad chunk, whichever thread found one first.
  std::vector<caf::error> part_errors(parts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (auto i = next++; i < parts.size(); i = next++) {
      auto& part = parts[i];
      part_errors[i] =
          verify_shard_chunks(step_dir, indexes[static_cast<size_t>(part.rank)],
                              manifest.shards(part.rank).chunks(), part.first, part.end);
    }
  };
  auto threads = std::min(static_cast<size_t>(cores), parts.size());
  std::vector<std::thread> helpers;
  try {
    background_threads_block_signals block;
    for (size_t i = 1; i < threads; ++i) helpers.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads to be had: those started and this one check the rest.
  }
  work();
  for (auto& helper : helpers) helper.join();
  for (size_t i = 0; i < parts.size(); ++i) {
    auto& err = rank_errors[static_cast<size_t>(parts[i].rank)];
    if (part_errors[i] && !err) err = std::move(part_errors[i]);
  }
  for (auto& err : rank_errors)
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

caf::expected<verified_checkpoint> verify_newest(const std::string& dir, const step_listing& list) {
  std::optional<int64_t> removed;
  caf::error last;
  for (int attempt = 0; attempt < newest_check_attempts; ++attempt) {
    auto steps = list();
    if (!steps) return std::move(steps.error());
    if (steps->empty() && !removed) return make_error(errc::not_found, none_committed_in(dir));
    // Nothing newer than the step that went: what removed it was no save.
    if (steps->empty() || (removed && steps->back() <= *removed)) break;
    auto verified = verify_checkpoint(dir, steps->back());
    if (verified || verified.error() != make_error(errc::not_found)) return verified;
    removed = steps->back();
    last = std::move(verified.error());
  }
  return last;
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
