#pragma once

#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "checkpoint/chunk_reader.hpp"
#include "checkpoint/staging.hpp"
#include "checkpoint/state_registry.hpp"
#include "messages/checkpoint.pb.h"

namespace lifeboat::checkpoint {

/// The kind of memory a shard's buffer was saved from.
buffer_kind from_wire(wire::ShardBufferKind kind);

/// Reads and checks one shard's index against its manifest record.
caf::expected<wire::ShardIndex> read_shard_index(const std::string& step_dir,
                                                 const wire::ShardRecord& record);

/// The cheap check of a whole checkpoint, run by every rank: every shard's
/// index is there with the recorded checksum and every data file has the
/// recorded size. errc::corrupt names the file.
caf::error verify_shard_files(const std::string& step_dir,
                              const wire::CheckpointManifest& manifest);

/// Whether a shard's buffer table fits the registry: the same names in the
/// same order, of the same kinds, and (but for callbacks) the same sizes.
/// errc::invalid_config lists every difference.
caf::error check_buffer_table(const wire::ShardIndex& index, const state_registry& registry);

/// How a registry must match a shard's buffer table: `exact` for a job's
/// restore (check_buffer_table), `subset` for a reader outside the job that
/// wants part of the state (a model without its optimizer: subset_registry).
enum class buffer_match { exact, subset };

/// What a reader of part of a shard loads into: a registry in the order of
/// the index's buffers, and which of them stand in for buffers the reader
/// did not register (their bytes are dropped).
struct subset_load {
  state_registry registry;
  std::vector<bool> dropped;
};

/// The subset_load of `registry` for `index`: `registry`'s buffer of each
/// name, of the same size (but for callbacks) and kind, where host and device
/// memory count as one kind (the same bytes), and a stand-in for each buffer
/// `registry` lacks. errc::invalid_config lists every registered buffer that
/// the shard lacks or holds otherwise. Load with it, without
/// check_buffer_table.
caf::expected<subset_load> subset_registry(const wire::ShardIndex& index,
                                           const state_registry& registry);

/// Reads `index`'s data file straight into the registered buffers in large
/// reads, checking every chunk against `chunks` as it arrives; device buffers
/// and callbacks are restored only after the whole file verified. `touched` is
/// set once host memory of the registry was overwritten. The bytes of a
/// buffer marked in `dropped` (subset_load) are kept nowhere: a chunk that
/// holds nothing else is not read, and the rest are verified with the chunk
/// they share with a wanted buffer.
caf::error load_shard(const std::string& step_dir, const wire::ShardIndex& index,
                      const wire::ChunkTable& chunks, const state_registry& registry,
                      staging_pool& pool, bool& touched, const std::vector<bool>& dropped = {});

/// As load_shard, from a stream that carries the data file's bytes in order
/// (a peer sending its replica), checked against the index's own chunk
/// table; `index` must have passed check_buffer_table. `source` names the
/// copy in errors.
caf::error load_shard_from_stream(const std::string& source, const wire::ShardIndex& index,
                                  const state_registry& registry, staging_pool& pool, bool& touched,
                                  const read_exact_fn& read_exact);

/// Reads `index`'s data file in `step_dir` and checks every chunk against
/// `chunks` (the manifest's record of them), as a restore would, without a
/// registry: the bytes are kept nowhere (1 MiB of scratch memory). Writes
/// nothing. errc::corrupt names the file and the first bad chunk.
caf::error verify_shard_data(const std::string& step_dir, const wire::ShardIndex& index,
                             const wire::ChunkTable& chunks);

/// verify_shard_data in parts, for threads that check one shard side by
/// side: first the checks that read no data (the index's buffers against
/// `chunks`, the data file's size), which return the number of chunks to
/// read; errc::corrupt as verify_shard_data's.
caf::expected<uint64_t> shard_chunk_count(const std::string& step_dir,
                                          const wire::ShardIndex& index,
                                          const wire::ChunkTable& chunks);

/// Then chunks [first, end) of a shard that passed shard_chunk_count, each
/// call with a descriptor and 1 MiB of scratch memory of its own: the first
/// bad chunk of the range, as verify_shard_data names it.
caf::error verify_shard_chunks(const std::string& step_dir, const wire::ShardIndex& index,
                               const wire::ChunkTable& chunks, uint64_t first, uint64_t end);

}  // namespace lifeboat::checkpoint
