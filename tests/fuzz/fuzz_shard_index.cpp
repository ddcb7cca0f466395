// One rank's restore from a step directory, as store::load runs it once the
// manifest is read: the shard index (read_shard_index), its buffer table
// against the registered buffers (check_buffer_table), and the data file read
// chunk by chunk into them (load_shard, chunk_reader).
//
// The input's first byte chooses: bit 0, whether the rest is the index file's
// raw bytes or a ShardIndex payload that the target frames with the right
// checksum; bit 1, whether the target fills the chunk table with the right
// checksums of the data file (which it writes with data_bytes bytes of a
// fixed pattern), so the fuzzer reaches a complete load as well as each check;
// bit 2, whether the load is a reader's of part of the shard (subset_registry:
// "weights" alone, every other buffer dropped) instead of a job's. A job's
// load and verify_shard_data, which reads the file without a registry, must
// agree on whether the shard is good.

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/framed_file.hpp"
#include "checkpoint/shard_reader.hpp"
#include "checkpoint/staging.hpp"
#include "checkpoint/state_registry.hpp"
#include "messages/checkpoint.pb.h"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace lifeboat;
using namespace lifeboat::checkpoint;

constexpr char index_file[] = "index";
constexpr char data_file[] = "data";
// Larger data files are left out: the fuzzer would spend its time writing them.
constexpr int64_t max_data_bytes = 64 * 1024;
constexpr size_t weights_bytes = 64;
constexpr size_t bias_bytes = 8;

std::string data_pattern(int64_t size) {
  std::string out(static_cast<size_t>(size), '\0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 31 + 7);
  return out;
}

void fill_checksums(wire::ChunkTable& chunks, const std::string& data) {
  chunks.clear_checksums();
  auto chunk = static_cast<size_t>(chunks.chunk_size());
  if (chunks.chunk_size() <= 0) return;
  for (size_t at = 0; at < data.size(); at += chunk)
    chunks.add_checksums(checksum_of(data.substr(at, chunk)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::input in{data, size};
  auto mode = in.byte();
  auto bytes = in.rest();
  wire::ShardIndex parsed;
  if (mode & 1) {
    if (!parsed.ParseFromString(bytes)) return 0;
    if ((mode & 2) && parsed.data_bytes() >= 0 && parsed.data_bytes() <= max_data_bytes)
      fill_checksums(*parsed.mutable_chunks(), data_pattern(parsed.data_bytes()));
    bytes = encode_framed(index_magic, parsed);
  } else if (!parsed.ParseFromString(bytes.substr(std::min(bytes.size(), frame_header_size)))) {
    parsed.Clear();
  }
  const auto& dir = fuzz::scratch_dir();
  fuzz::put_file(dir, index_file, bytes);
  // What the manifest records of this shard, as write_manifest records it,
  // and the data file's size as verify_shard_files checked it before.
  wire::CheckpointManifest manifest;
  auto* record = manifest.add_shards();
  record->set_index_file(index_file);
  record->set_index_bytes(static_cast<int64_t>(bytes.size()));
  record->set_index_checksum(checksum_of(bytes));
  record->set_data_file(data_file);
  record->set_data_bytes(parsed.data_bytes());
  *record->mutable_chunks() = parsed.chunks();
  if (parsed.data_bytes() < 0 || parsed.data_bytes() > max_data_bytes) return 0;
  fuzz::put_file(dir, data_file, data_pattern(parsed.data_bytes()));
  if (verify_shard_files(dir, manifest)) return 0;

  auto index = read_shard_index(dir, *record);
  if (!index) return 0;
  std::vector<char> weights(weights_bytes), bias(bias_bytes);
  std::string restored;
  state_registry registry;
  static_cast<void>(registry.add_host_buffer("weights", weights.data(), weights.size()));
  static_cast<void>(registry.add_host_buffer("bias", bias.data(), bias.size()));
  static_cast<void>(registry.add_callbacks(
      "rng", [] { return std::string{}; }, [&](const std::string& s) { restored = s; }));
  static auto pool = staging_pool::make();
  bool touched = false;
  if (mode & 4) {
    state_registry part;
    static_cast<void>(part.add_host_buffer("weights", weights.data(), weights.size()));
    auto subset = subset_registry(*index, part);
    if (!subset) return 0;
    static_cast<void>(load_shard(dir, *index, record->chunks(), subset->registry, *pool, touched,
                                 subset->dropped));
    return 0;
  }
  // The check outside any job (lifeboat-checkpoint verify) reads the file
  // whatever is registered; where a job's load reads every chunk too, both
  // must find the shard good, or both not.
  auto verified = verify_shard_data(dir, *index, record->chunks());
  if (check_buffer_table(*index, registry)) return 0;
  auto loaded = load_shard(dir, *index, record->chunks(), registry, *pool, touched);
  if (static_cast<bool>(loaded) != static_cast<bool>(verified)) __builtin_trap();
  return 0;
}
