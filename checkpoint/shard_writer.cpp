#include "checkpoint/shard_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include "checkpoint/file_io.hpp"
#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/xxh3.hpp"
#include "messages/checkpoint.pb.h"
#include "messages/log.hpp"

namespace lifeboat::checkpoint {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* component = "checkpoint";
constexpr double bytes_per_mb = 1e6;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

wire::ShardBufferKind to_wire(buffer_kind kind) {
  switch (kind) {
    case buffer_kind::device:
      return wire::SHARD_BUFFER_DEVICE;
    case buffer_kind::callbacks:
      return wire::SHARD_BUFFER_CALLBACKS;
    case buffer_kind::host:
      break;
  }
  return wire::SHARD_BUFFER_HOST;
}

// Writes the data file chunk by chunk, hashing each chunk just before it is
// written (it is hot in cache then) and asking the kernel to start writeback
// of it at once, so that the final fsync has little left to do.
caf::error write_data(int fd, const std::string& path, const snapshot& snap, uint64_t chunk_size,
                      int64_t step, wire::ChunkTable& table, write_breakdown& took) {
  auto start = clock_type::now();
  auto next_report = progress_interval_seconds;
  const char* data = snap.bytes.data();
  const uint64_t total = snap.size();
  table.set_chunk_size(static_cast<int64_t>(chunk_size));
  for (uint64_t offset = 0; offset < total; offset += chunk_size) {
    auto len = std::min(chunk_size, total - offset);
    auto hash_start = clock_type::now();
    table.add_checksums(XXH3_64bits(data + offset, len));
    auto write_start = clock_type::now();
    took.hash += std::chrono::duration<double>(write_start - hash_start).count();
    if (auto err = write_all(fd, data + offset, len, path)) return err;
    ::sync_file_range(fd, static_cast<off_t>(offset), static_cast<off_t>(len),
                      SYNC_FILE_RANGE_WRITE);
    took.write += seconds_since(write_start);
    if (auto elapsed = seconds_since(start); elapsed >= next_report) {
      auto done = offset + len;
      log(log_level::info, component, "saving step ", step, ": ", done, " of ", total, " bytes, ",
          done / bytes_per_mb / elapsed, " MB/s, ", elapsed, " s");
      next_report += progress_interval_seconds;
    }
  }
  auto fsync_start = clock_type::now();
  auto err = fsync_fd(fd, path);
  took.fsync = seconds_since(fsync_start);
  return err;
}

}  // namespace

caf::expected<written_shard> write_shard_files(const std::string& step_dir, int64_t step, int rank,
                                               int world_size, const snapshot& snap,
                                               uint64_t chunk_size) {
  auto start = clock_type::now();
  auto data_name = shard_data_name(rank, world_size);
  auto data_path = join_path(step_dir, data_name);
  auto data_tmp = data_path + temp_suffix;
  wire::ShardIndex index;
  index.set_schema_version(checkpoint_schema_version);
  index.set_step(step);
  index.set_rank(rank);
  index.set_world_size(world_size);
  index.set_data_file(data_name);
  index.set_data_bytes(static_cast<int64_t>(snap.size()));
  for (auto& entry : snap.entries) {
    auto* buf = index.add_buffers();
    buf->set_name(entry.name);
    buf->set_kind(to_wire(entry.kind));
    buf->set_offset(static_cast<int64_t>(entry.offset));
    buf->set_size(static_cast<int64_t>(entry.size));
  }
  auto fd = open_file(data_tmp, O_WRONLY | O_CREAT | O_TRUNC);
  if (!fd) return std::move(fd.error());
  write_breakdown took;
  auto err = write_data(fd->get(), data_tmp, snap, chunk_size, step, *index.mutable_chunks(), took);
  auto index_start = clock_type::now();
  if (!err) err = fd->close(data_tmp);
  if (!err && ::rename(data_tmp.c_str(), data_path.c_str()) != 0)
    err = io_error("rename", data_tmp, errno);
  if (err) {
    ::unlink(data_tmp.c_str());
    return err;
  }
  // The index is renamed into place after the data, and write_file_durably
  // fsyncs the directory, which makes both renames durable.
  if (auto err = write_file_durably(step_dir, shard_index_name(rank, world_size),
                                    encode_framed(index_magic, index)))
    return err;
  took.index = seconds_since(index_start);
  written_shard result{snap.size(), seconds_since(start), took};
  if (result.seconds > progress_interval_seconds)
    log(log_level::info, component, "saved step ", step, ": ", result.data_bytes, " bytes in ",
        result.seconds, " s, ", result.data_bytes / bytes_per_mb / result.seconds, " MB/s (hash ",
        took.hash, " s, write ", took.write, " s, fsync ", took.fsync, " s, index ", took.index,
        " s)");
  return result;
}

}  // namespace lifeboat::checkpoint
