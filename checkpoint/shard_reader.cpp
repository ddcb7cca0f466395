#include "checkpoint/shard_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>
#include <vector>

#include "checkpoint/chunk_reader.hpp"
#include "checkpoint/device_memory.hpp"
#include "checkpoint/file_io.hpp"
#include "checkpoint/framed_file.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

buffer_kind from_wire(wire::ShardBufferKind kind) {
  switch (kind) {
    case wire::SHARD_BUFFER_DEVICE:
      return buffer_kind::device;
    case wire::SHARD_BUFFER_CALLBACKS:
      return buffer_kind::callbacks;
    default:
      return buffer_kind::host;
  }
}

namespace {

// The differences between a shard's buffer table and a registry, "; "-joined.
struct buffer_differences {
  std::string text;

  void add(const std::string& what) {
    if (!text.empty()) text += "; ";
    text += what;
  }

  // Adds how `mine` differs from `saved` of the same name, in kind (host and
  // device memory count as one where `memory_alike`) or in size (but for
  // callbacks); whether they match.
  bool compare(const wire::ShardBuffer& saved, const registered_buffer& mine, bool memory_alike) {
    auto kind = from_wire(saved.kind());
    bool memory = kind != buffer_kind::callbacks && mine.kind != buffer_kind::callbacks;
    if (kind != mine.kind && !(memory_alike && memory)) {
      add("'" + mine.name + "' is " + to_string(kind) + " in the checkpoint but " +
          to_string(mine.kind) + " registered");
      return false;
    }
    if (kind != buffer_kind::callbacks && static_cast<uint64_t>(saved.size()) != mine.size) {
      add("'" + mine.name + "' has " + std::to_string(saved.size()) +
          " bytes in the checkpoint but " + std::to_string(mine.size) + " registered");
      return false;
    }
    return true;
  }
};

// A run of the data file that lands in one destination.
struct segment {
  uint64_t offset;
  char* dst;  // null for a buffer whose bytes a reader drops
  uint64_t size;
};

// The destinations of file bytes [begin, end), given segments sorted by offset;
// `first` is the first segment that may overlap and is advanced past used ones.
std::vector<iovec> destinations(const std::vector<segment>& segs, size_t& first, uint64_t begin,
                                uint64_t end) {
  std::vector<iovec> iov;
  while (first < segs.size() && segs[first].offset + segs[first].size <= begin) ++first;
  for (size_t i = first; i < segs.size() && segs[i].offset < end; ++i) {
    auto from = std::max(begin, segs[i].offset);
    auto to = std::min(end, segs[i].offset + segs[i].size);
    if (from < to)
      iov.push_back({segs[i].dst ? segs[i].dst + (from - segs[i].offset) : nullptr, to - from});
  }
  return iov;
}

}  // namespace

caf::expected<wire::ShardIndex> read_shard_index(const std::string& step_dir,
                                                 const wire::ShardRecord& record) {
  auto path = join_path(step_dir, record.index_file());
  if (!file_exists(path)) return corrupt_file(path, "missing");
  auto bytes = read_whole_file(path);
  if (!bytes) return std::move(bytes.error());
  if (static_cast<int64_t>(bytes->size()) != record.index_bytes() ||
      checksum_of(*bytes) != record.index_checksum())
    return corrupt_file(path, "differs from the manifest's record (" +
                                  std::to_string(bytes->size()) + " bytes, manifest says " +
                                  std::to_string(record.index_bytes()) + ")");
  wire::ShardIndex index;
  if (auto err = decode_framed(index_magic, *bytes, path, index)) return err;
  if (index.data_file() != record.data_file() || index.data_bytes() != record.data_bytes())
    return corrupt_file(path, "names another data file than the manifest");
  return index;
}

caf::error verify_shard_files(const std::string& step_dir,
                              const wire::CheckpointManifest& manifest) {
  for (auto& record : manifest.shards()) {
    auto index = read_shard_index(step_dir, record);
    if (!index) return std::move(index.error());
    auto data_path = join_path(step_dir, record.data_file());
    struct stat st;
    if (::stat(data_path.c_str(), &st) != 0) {
      if (errno == ENOENT) return corrupt_file(data_path, "missing");
      return io_error("stat", data_path, errno);
    }
    if (st.st_size != record.data_bytes())
      return corrupt_file(data_path, "truncated or extended: " + std::to_string(st.st_size) +
                                         " bytes, manifest says " +
                                         std::to_string(record.data_bytes()));
  }
  return {};
}

caf::error check_buffer_table(const wire::ShardIndex& index, const state_registry& registry) {
  buffer_differences diffs;
  auto& bufs = registry.buffers();
  auto count = std::max<size_t>(bufs.size(), static_cast<size_t>(index.buffers_size()));
  for (size_t i = 0; i < count; ++i) {
    if (i >= bufs.size()) {
      diffs.add("checkpoint has '" + index.buffers(i).name() + "', which is not registered");
      continue;
    }
    if (i >= static_cast<size_t>(index.buffers_size())) {
      diffs.add("'" + bufs[i].name + "' is registered but not in the checkpoint");
      continue;
    }
    auto& saved = index.buffers(static_cast<int>(i));
    auto& mine = bufs[i];
    if (saved.name() != mine.name) {
      diffs.add("buffer " + std::to_string(i) + " is '" + saved.name() +
                "' in the checkpoint but '" + mine.name + "' registered");
      continue;
    }
    diffs.compare(saved, mine, false);
  }
  if (diffs.text.empty()) return {};
  return make_error(errc::invalid_config,
                    "checkpoint state does not match the registered buffers: " + diffs.text);
}

caf::expected<subset_load> subset_registry(const wire::ShardIndex& index,
                                           const state_registry& registry) {
  std::unordered_map<std::string, const registered_buffer*> wanted;
  for (auto& buf : registry.buffers()) wanted.emplace(buf.name, &buf);
  buffer_differences diffs;
  subset_load subset;
  for (auto& saved : index.buffers()) {
    auto found = wanted.find(saved.name());
    caf::error err;
    subset.dropped.push_back(found == wanted.end());
    if (found == wanted.end()) {
      err = subset.registry.add_callbacks(
          saved.name(), [] { return std::string{}; }, [](const std::string&) {});
    } else {
      auto& mine = *found->second;
      // Host and device memory hold the same bytes: a model trained on a
      // GPU is read into CPU memory, and the other way round.
      if (diffs.compare(saved, mine, true)) {
        if (mine.kind == buffer_kind::callbacks)
          err = subset.registry.add_callbacks(mine.name, mine.save, mine.restore);
        else if (mine.kind == buffer_kind::host)
          err = subset.registry.add_host_buffer(mine.name, mine.data, mine.size);
        else
          err = subset.registry.add_device_buffer(mine.name, mine.data, mine.size);
      }
      wanted.erase(found);
    }
    if (err) return err;  // a name the checkpoint holds twice
  }
  for (auto& buf : registry.buffers())
    if (wanted.count(buf.name) > 0)
      diffs.add("'" + buf.name + "' is registered but not in the checkpoint");
  if (!diffs.text.empty())
    return make_error(errc::invalid_config,
                      "checkpoint state does not hold the registered buffers: " + diffs.text);
  return subset;
}

namespace {

// Where a shard's bytes go, chunk by chunk: host buffers directly, device
// buffers into pinned staging, callback state into strings handed over at
// the end. The chunk reads point into the staging and the strings, which
// stay where they are when the plan moves.
struct load_plan {
  staging_lease device_staging;
  std::vector<std::string> callback_bytes;
  // Per read chunk that also holds dropped bytes, the memory they land in:
  // one each, as the two reading threads must not write into the same.
  std::vector<std::vector<char>> scratch;
  std::vector<bool> dropped;  // by buffer, as load_shard took it
  std::vector<chunk_read> chunks;
};

// Whether `chunks` covers `index`'s data exactly and the buffers, in the
// index's order, lie back to back from its start to its end, as a writer
// lays them out (take_snapshot). `source` names the data in errors (a file,
// or a peer's copy of it).
caf::error check_layout(const std::string& source, const wire::ShardIndex& index,
                        const wire::ChunkTable& chunks) {
  // Sizes and offsets come from files a writer of the checkpoint directory
  // controls: negative ones, or sums that wrap around, must not pass the
  // checks below (a chunk size of -1 once passed the table's size check with
  // no checksums, and the plan read past the end of the empty table).
  if (index.data_bytes() < 0 || chunks.chunk_size() <= 0)
    return corrupt_file(source, "chunk table does not cover the file");
  const auto total = static_cast<uint64_t>(index.data_bytes());
  const auto chunk_size = static_cast<uint64_t>(chunks.chunk_size());
  if (static_cast<uint64_t>(chunks.checksums_size()) !=
      total / chunk_size + (total % chunk_size != 0 ? 1 : 0))
    return corrupt_file(source, "chunk table does not cover the file");
  // A gap would be bytes of no buffer: a load, which hashes what lands in
  // buffers, found the chunk corrupt, a check of the whole file found it good.
  uint64_t end = 0;
  for (auto& saved : index.buffers()) {
    auto offset = static_cast<uint64_t>(saved.offset());
    auto size = static_cast<uint64_t>(saved.size());
    if (saved.offset() < 0 || saved.size() < 0 || size > total || offset > total - size)
      return corrupt_file(source, "buffer '" + saved.name() + "' lies past the end");
    if (offset != end)
      return corrupt_file(source, "buffer '" + saved.name() + "' begins at byte " +
                                      std::to_string(offset) + ", the one before it ends at " +
                                      std::to_string(end));
    end += size;
  }
  if (end != total)
    return corrupt_file(source, "the buffers end at byte " + std::to_string(end) +
                                    ", the data at " + std::to_string(total));
  return {};
}

// Checks the size of the data file at `path` against `index`.
caf::error check_data_size(const std::string& path, const wire::ShardIndex& index) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return io_error("stat", path, errno);
  if (static_cast<uint64_t>(st.st_size) != static_cast<uint64_t>(index.data_bytes()))
    return corrupt_file(path, std::to_string(st.st_size) + " bytes, index says " +
                                  std::to_string(index.data_bytes()));
  return {};
}

caf::expected<load_plan> plan_load(const std::string& source, const wire::ShardIndex& index,
                                   const wire::ChunkTable& chunks, const state_registry& registry,
                                   staging_pool& pool, const std::vector<bool>& dropped) {
  if (auto err = check_layout(source, index, chunks)) return err;
  const auto total = static_cast<uint64_t>(index.data_bytes());
  const auto chunk_size = static_cast<uint64_t>(chunks.chunk_size());
  load_plan plan;
  plan.dropped = dropped;
  plan.dropped.resize(static_cast<size_t>(index.buffers_size()), false);
  uint64_t device_bytes = 0;
  // By the registry's kinds: a reader may take a buffer saved from device
  // memory into host memory (subset_registry).
  for (int i = 0; i < index.buffers_size(); ++i)
    if (registry.buffers()[static_cast<size_t>(i)].kind == buffer_kind::device)
      device_bytes += static_cast<uint64_t>(index.buffers(i).size());
  if (device_bytes > 0) {
    auto lease = pool.acquire(device_bytes, true);
    if (!lease) return std::move(lease.error());
    plan.device_staging = std::move(*lease);
  }
  std::vector<segment> segs;
  plan.callback_bytes.reserve(static_cast<size_t>(index.buffers_size()));
  uint64_t device_offset = 0;
  for (int i = 0; i < index.buffers_size(); ++i) {
    auto& saved = index.buffers(i);
    auto& mine = registry.buffers()[static_cast<size_t>(i)];
    auto offset = static_cast<uint64_t>(saved.offset());
    auto size = static_cast<uint64_t>(saved.size());
    char* dst = nullptr;
    if (plan.dropped[static_cast<size_t>(i)]) {
      if (size > 0) segs.push_back({offset, nullptr, size});
      continue;
    }
    switch (mine.kind) {
      case buffer_kind::host:
        dst = static_cast<char*>(mine.data);
        break;
      case buffer_kind::device:
        dst = plan.device_staging.data() + device_offset;
        device_offset += size;
        break;
      case buffer_kind::callbacks:
        plan.callback_bytes.emplace_back(size, '\0');
        dst = plan.callback_bytes.back().data();
        break;
    }
    if (size > 0) segs.push_back({offset, dst, size});
  }
  // In the index's order, the segments are sorted by offset (check_layout).
  size_t first = 0;
  for (uint64_t begin = 0, chunk = 0; begin < total; begin += chunk_size, ++chunk) {
    auto parts = destinations(segs, first, begin, std::min(total, begin + chunk_size));
    // A chunk of dropped bytes alone is not read; in one read for a wanted
    // buffer they are verified with it, in scratch memory.
    uint64_t scratch_bytes = 0;
    bool wanted = false;
    for (auto& part : parts) {
      if (part.iov_base != nullptr)
        wanted = true;
      else
        scratch_bytes += part.iov_len;
    }
    if (!wanted && scratch_bytes > 0) continue;
    if (scratch_bytes > 0) {
      plan.scratch.emplace_back(scratch_bytes);
      auto* at = plan.scratch.back().data();
      for (auto& part : parts) {
        if (part.iov_base != nullptr) continue;
        part.iov_base = at;
        at += part.iov_len;
      }
    }
    plan.chunks.push_back(
        {chunk, begin, std::move(parts), chunks.checksums(static_cast<int>(chunk))});
  }
  return plan;
}

// Once every chunk verified: device buffers and callback state get theirs.
caf::error finish_load(load_plan& plan, const wire::ShardIndex& index,
                       const state_registry& registry) {
  uint64_t device_offset = 0;
  auto callback_iter = plan.callback_bytes.begin();
  for (int i = 0; i < index.buffers_size(); ++i) {
    auto& mine = registry.buffers()[static_cast<size_t>(i)];
    auto size = static_cast<uint64_t>(index.buffers(i).size());
    if (plan.dropped[static_cast<size_t>(i)]) continue;
    if (mine.kind == buffer_kind::device) {
      if (auto err =
              device::copy_to_device(mine.data, plan.device_staging.data() + device_offset, size))
        return err;
      device_offset += size;
    } else if (mine.kind == buffer_kind::callbacks) {
      mine.restore(*callback_iter++);
    }
  }
  return {};
}

}  // namespace

caf::error load_shard(const std::string& step_dir, const wire::ShardIndex& index,
                      const wire::ChunkTable& chunks, const state_registry& registry,
                      staging_pool& pool, bool& touched, const std::vector<bool>& dropped) {
  auto data_path = join_path(step_dir, index.data_file());
  auto plan = plan_load(data_path, index, chunks, registry, pool, dropped);
  if (!plan) return std::move(plan.error());
  if (auto err = check_data_size(data_path, index)) return err;
  touched = !plan->chunks.empty();
  if (auto err = read_chunks(data_path, plan->chunks)) return err;
  return finish_load(*plan, index, registry);
}

caf::error load_shard_from_stream(const std::string& source, const wire::ShardIndex& index,
                                  const state_registry& registry, staging_pool& pool, bool& touched,
                                  const read_exact_fn& read_exact) {
  auto plan = plan_load(source, index, index.chunks(), registry, pool, {});
  if (!plan) return std::move(plan.error());
  touched = !plan->chunks.empty();
  if (auto err = receive_chunks(read_exact, source, plan->chunks)) return err;
  return finish_load(*plan, index, registry);
}

caf::expected<uint64_t> shard_chunk_count(const std::string& step_dir,
                                          const wire::ShardIndex& index,
                                          const wire::ChunkTable& chunks) {
  auto data_path = join_path(step_dir, index.data_file());
  if (auto err = check_layout(data_path, index, chunks)) return err;
  if (auto err = check_data_size(data_path, index)) return err;
  const auto total = static_cast<uint64_t>(index.data_bytes());
  const auto chunk_size = static_cast<uint64_t>(chunks.chunk_size());
  return total == 0 ? 0 : (total + chunk_size - 1) / chunk_size;
}

caf::error verify_shard_chunks(const std::string& step_dir, const wire::ShardIndex& index,
                               const wire::ChunkTable& chunks, uint64_t first, uint64_t end) {
  // Nothing to read: the file is not even opened (as a load opens none), so
  // a FIFO of size 0 in its place cannot hold the check.
  if (first >= end) return {};
  auto data_path = join_path(step_dir, index.data_file());
  auto fd = open_file(data_path, O_RDONLY);
  if (!fd) return std::move(fd.error());
  ::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  // Every block of every chunk lands in the same scratch memory, read and
  // hashed one after the other: the check keeps no byte, so a shard larger
  // than the host's memory is checked in 1 MiB.
  std::vector<char> scratch(hash_block_bytes);
  const auto total = static_cast<uint64_t>(index.data_bytes());
  const auto chunk_size = static_cast<uint64_t>(chunks.chunk_size());
  std::vector<chunk_read> reads;
  for (auto chunk = first; chunk < end; ++chunk) {
    auto begin = chunk * chunk_size;
    chunk_read read{chunk, begin, {}, chunks.checksums(static_cast<int>(chunk))};
    auto stop = std::min(total, begin + chunk_size);
    for (auto at = begin; at < stop; at += hash_block_bytes)
      read.parts.push_back({scratch.data(), std::min(hash_block_bytes, stop - at)});
    reads.push_back(std::move(read));
  }
  const auto start = first * chunk_size;
  uint64_t position = start;
  return receive_chunks(
      [&](char* data, size_t size) {
        auto err =
            preadv_all(fd->get(), {iovec{data, size}}, static_cast<off_t>(position), data_path);
        position += size;
        return err;
      },
      data_path, reads, start);
}

caf::error verify_shard_data(const std::string& step_dir, const wire::ShardIndex& index,
                             const wire::ChunkTable& chunks) {
  auto count = shard_chunk_count(step_dir, index, chunks);
  if (!count) return std::move(count.error());
  return verify_shard_chunks(step_dir, index, chunks, 0, *count);
}

}  // namespace lifeboat::checkpoint
