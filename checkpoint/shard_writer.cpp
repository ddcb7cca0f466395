#include "checkpoint/shard_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

#include "checkpoint/file_io.hpp"
#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/xxh3.hpp"
#include "messages/background_thread.hpp"
#include "messages/checkpoint.pb.h"
#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat::checkpoint {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* component = "checkpoint";
constexpr double bytes_per_mb = 1e6;

// O_DIRECT wants the offset, length and memory address of each write aligned
// to the device's logical block; 4096 covers the devices in use.
constexpr uint64_t direct_alignment = 4096;

// Each write call hands the kernel this much (a multiple of direct_alignment):
// one O_DIRECT write of 32 MiB keeps eight 4 MiB requests in flight on the
// device, where 8 MiB writes kept two (1,226-1,397 MB/s against 967-1,284 MB/s
// in 4 runs each, hashing beside the writes).
constexpr uint64_t write_block = uint64_t{32} << 20;

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

// Hashes a snapshot's chunks on a thread of its own while the writer thread
// waits on the device: XXH3-64 of 1 GiB took 34-150 ms on the loaded 2-core
// machine, 4-10% of the whole save when it ran between the writes.
class chunk_hasher {
 public:
  chunk_hasher(const char* data, uint64_t total, uint64_t chunk_size)
      : data_(data), total_(total), chunk_size_(chunk_size) {
    try {
      thread_ = background_thread([this] {
        name_this_thread(hash_thread_name);
        run();
      });
    } catch (const std::system_error&) {
      // Without a thread to spare, finish() hashes on the caller's thread.
    }
  }

  ~chunk_hasher() {
    if (thread_.joinable()) thread_.join();
  }

  chunk_hasher(const chunk_hasher&) = delete;
  chunk_hasher& operator=(const chunk_hasher&) = delete;

  /// Waits for every checksum and adds them to `table`.
  void finish(wire::ChunkTable& table) {
    if (thread_.joinable())
      thread_.join();
    else
      run();
    table.set_chunk_size(static_cast<int64_t>(chunk_size_));
    for (auto sum : checksums_) table.add_checksums(sum);
  }

  double seconds() const { return seconds_; }

 private:
  void run() {
    auto start = clock_type::now();
    checksums_.reserve((total_ + chunk_size_ - 1) / chunk_size_);
    for (uint64_t offset = 0; offset < total_; offset += chunk_size_)
      checksums_.push_back(XXH3_64bits(data_ + offset, std::min(chunk_size_, total_ - offset)));
    seconds_ = seconds_since(start);
  }

  const char* data_;
  uint64_t total_;
  uint64_t chunk_size_;
  std::vector<uint64_t> checksums_;
  double seconds_ = 0;
  std::thread thread_;
};

// The data file goes around the page cache (O_DIRECT) where the filesystem
// allows it. Through the page cache, the write calls alone took 0.2-2.8 s for
// 1 GiB here (each save copies into 1 GiB of freshly allocated cache, whose
// cost varies with the rest of the machine), and writeback started per chunk
// (sync_file_range) made them slower still (3.3-4.2 s); O_DIRECT writes
// took 0.24-0.72 s, straight from the staging memory.
// `reused`: the file at `path` is allocated already at the shard's size and
// is written over, not truncated (its blocks stay).
caf::expected<unique_fd> open_data_file(file_system& fs, const std::string& path, const char* data,
                                        mode_t mode, bool reused, bool& direct) {
  const int flags = O_WRONLY | O_CREAT | (reused ? 0 : O_TRUNC);
  direct = reinterpret_cast<uintptr_t>(data) % direct_alignment == 0;
  if (direct) {
    if (auto fd = open_file(fs, path, flags | O_DIRECT, mode)) return fd;
    direct = false;
  }
  return open_file(fs, path, flags, mode);
}

caf::error stop_direct(int fd, bool& direct, const std::string& path) {
  direct = false;
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0)
    return io_error("fcntl", path, errno);
  return {};
}

// Writes [offset, offset + size), with O_DIRECT while `direct` holds. A tail
// shorter than direct_alignment, and a range that the device refuses to take
// directly (a larger logical block), go through the page cache instead.
caf::error write_range(file_system& fs, int fd, const char* data, uint64_t size, uint64_t offset,
                       bool& direct, const std::string& path) {
  auto direct_size = direct ? size / direct_alignment * direct_alignment : 0;
  if (direct_size > 0) {
    auto err = pwrite_all(fs, fd, data, direct_size, static_cast<off_t>(offset), path);
    if (!err) {
      data += direct_size;
      offset += direct_size;
      size -= direct_size;
    } else {
      log(log_level::warning, component, "O_DIRECT write failed (", describe(err),
          "): writing through the page cache");
    }
  }
  if (size == 0) return {};
  if (direct) {
    if (auto err = stop_direct(fd, direct, path)) return err;
  }
  return pwrite_all(fs, fd, data, size, static_cast<off_t>(offset), path);
}

caf::error write_data(file_system& fs, int fd, bool direct, const std::string& path,
                      const snapshot& snap, uint64_t chunk_size, int64_t step,
                      wire::ChunkTable& table, write_breakdown& took) {
  auto start = clock_type::now();
  auto next_report = progress_interval_seconds;
  const char* data = snap.bytes.data();
  const uint64_t total = snap.size();
  chunk_hasher hasher{data, total, chunk_size};
  for (uint64_t offset = 0; offset < total; offset += write_block) {
    auto len = std::min(write_block, total - offset);
    if (auto err = write_range(fs, fd, data + offset, len, offset, direct, path)) return err;
    if (auto elapsed = seconds_since(start); elapsed >= next_report) {
      auto done = offset + len;
      log(log_level::info, component, "saving step ", step, ": ", done, " of ", total, " bytes, ",
          done / bytes_per_mb / elapsed, " MB/s, ", elapsed, " s");
      next_report += progress_interval_seconds;
    }
  }
  took.write = seconds_since(start);
  auto fsync_start = clock_type::now();
  auto err = fsync_fd(fs, fd, path);
  took.fsync = seconds_since(fsync_start);
  hasher.finish(table);
  took.hash = hasher.seconds();
  return err;
}

}  // namespace

caf::expected<written_shard> write_shard_files(const std::string& step_dir, int64_t step, int rank,
                                               int world_size, const snapshot& snap,
                                               const shard_write_options& options) {
  auto& fs = *options.files;
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
  // A spare takes the temporary name, so a crash leaves it where a partial
  // step's files go; one that cannot be moved (gone) is no loss.
  bool reused = !options.preallocated.empty() && fs.rename(options.preallocated, data_tmp) == 0;
  bool direct = false;
  auto fd = open_data_file(fs, data_tmp, snap.bytes.data(), options.modes.file, reused, direct);
  if (!fd) return std::move(fd.error());
  write_breakdown took;
  auto err = write_data(fs, fd->get(), direct, data_tmp, snap, options.chunk_size, step,
                        *index.mutable_chunks(), took);
  if (!err && reused) err = check_written_size(fd->get(), snap.size(), data_tmp);
  auto index_start = clock_type::now();
  if (!err) err = fd->close(data_tmp);
  if (!err && fs.rename(data_tmp, data_path) != 0) err = io_error("rename", data_tmp, errno);
  if (err) {
    fs.unlink(data_tmp);
    return err;
  }
  // The index is renamed into place after the data, and write_file_durably
  // fsyncs the directory, which makes both renames durable.
  if (auto err = write_file_durably(fs, step_dir, shard_index_name(rank, world_size),
                                    encode_framed(index_magic, index), options.modes.file))
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
