#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/expected.hpp>

#include "checkpoint/file_io.hpp"
#include "checkpoint/snapshot.hpp"

namespace lifeboat::checkpoint {

/// Bytes per checksummed chunk of a data file; also the size of each write.
constexpr uint64_t default_chunk_size = uint64_t{8} << 20;

/// The name of the thread that hashes a shard's chunks while it is written.
constexpr const char* hash_thread_name = "lifeboat.hash";

/// Saves longer than this log a progress line every this often.
constexpr double progress_interval_seconds = 1.0;

/// Where the time of one shard write went, in seconds; the log line of a slow
/// save and the benchmark print it.
struct write_breakdown {
  double hash = 0;   // XXH3-64 of every chunk, on a thread of its own beside the writes
  double write = 0;  // the write calls of the data file
  double fsync = 0;  // fsync of the data file
  double index = 0;  // close and rename of the data file, the index written durably
};

struct written_shard {
  uint64_t data_bytes = 0;
  double seconds = 0;
  write_breakdown breakdown;
};

/// How write_shard_files writes.
struct shard_write_options {
  uint64_t chunk_size = default_chunk_size;
  file_modes modes;
  /// Every write, fsync and rename of the shard goes through it.
  std::shared_ptr<file_system> files = posix_file_system();
  /// A file of exactly the snapshot's size, allocated beforehand (a memory
  /// tier's spare), that becomes the data file and is written over; none
  /// (empty), or one that cannot be moved there: a new file.
  std::string preallocated;
};

/// Writes one rank's shard into `step_dir` (which must exist): the data file,
/// then the index (buffer table + per-chunk XXH3-64), each to a ".tmp" name,
/// fsync'd and renamed; then the directory is fsync'd. On return the shard is
/// durable. On failure the ".tmp" files are removed and the error names the file.
caf::expected<written_shard> write_shard_files(const std::string& step_dir, int64_t step, int rank,
                                               int world_size, const snapshot& snap,
                                               const shard_write_options& options = {});

}  // namespace lifeboat::checkpoint
