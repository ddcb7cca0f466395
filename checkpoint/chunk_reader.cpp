#include "checkpoint/chunk_reader.hpp"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>
#include <system_error>
#include <thread>

#include "checkpoint/file_io.hpp"
#include "checkpoint/xxh3.hpp"
#include "messages/background_thread.hpp"

namespace lifeboat::checkpoint {

namespace {

struct failure {
  uint64_t chunk;
  caf::error error;
};

// Fills `chunk`'s parts block by block through `fill(dst, len, offset)` and
// hashes each block right after it arrived.
template <class Fill>
std::optional<failure> read_one(const Fill& fill, const std::string& source,
                                const chunk_read& chunk) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  auto offset = chunk.begin;
  for (auto& part : chunk.parts) {
    auto* dst = static_cast<char*>(part.iov_base);
    for (uint64_t done = 0; done < part.iov_len;) {
      auto len = std::min<uint64_t>(hash_block_bytes, part.iov_len - done);
      if (auto err = fill(dst + done, len, offset)) return failure{chunk.index, std::move(err)};
      XXH3_64bits_update(&state, dst + done, len);
      done += len;
      offset += len;
    }
  }
  if (XXH3_64bits_digest(&state) == chunk.expected) return std::nullopt;
  return failure{chunk.index,
                 corrupt_file(source, "checksum mismatch in chunk " + std::to_string(chunk.index) +
                                          " (bytes " + std::to_string(chunk.begin) + ".." +
                                          std::to_string(offset) + ")")};
}

// Lowers `first_bad` to `index` unless a lower one is there already.
void record_bad(std::atomic<uint64_t>& first_bad, uint64_t index) {
  auto known = first_bad.load();
  while (index < known && !first_bad.compare_exchange_weak(known, index)) {
  }
}

// Chunks [from, to) in order, until one fails or every chunk left is past one
// that failed in the other half.
std::optional<failure> read_range(const std::string& path, const std::vector<chunk_read>& chunks,
                                  size_t from, size_t to, std::atomic<uint64_t>& first_bad) {
  if (from == to) return std::nullopt;
  auto fd = open_file(path, O_RDONLY);
  if (!fd) {
    record_bad(first_bad, chunks[from].index);
    return failure{chunks[from].index, std::move(fd.error())};
  }
  ::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  auto fill = [&](char* dst, uint64_t len, uint64_t offset) {
    return preadv_all(fd->get(), {iovec{dst, len}}, static_cast<off_t>(offset), path);
  };
  for (auto i = from; i < to && chunks[i].index < first_bad.load(); ++i) {
    if (auto failed = read_one(fill, path, chunks[i])) {
      record_bad(first_bad, failed->chunk);
      return failed;
    }
  }
  return std::nullopt;
}

}  // namespace

caf::error read_chunks(const std::string& path, const std::vector<chunk_read>& chunks) {
  std::atomic<uint64_t> first_bad{std::numeric_limits<uint64_t>::max()};
  auto half = chunks.size() < 2 ? chunks.size() : (chunks.size() + 1) / 2;
  std::optional<failure> second;
  std::thread helper;
  try {
    if (half < chunks.size())
      helper = background_thread(
          [&] { second = read_range(path, chunks, half, chunks.size(), first_bad); });
  } catch (const std::system_error&) {
    // No second thread to be had: this one reads everything.
    half = chunks.size();
  }
  auto first = read_range(path, chunks, 0, half, first_bad);
  if (helper.joinable()) helper.join();
  if (first && (!second || first->chunk < second->chunk)) return std::move(first->error);
  if (second) return std::move(second->error);
  return {};
}

caf::error receive_chunks(const read_exact_fn& read_exact, const std::string& source,
                          const std::vector<chunk_read>& chunks, uint64_t stream_begin) {
  // A stream cannot skip: bytes that no buffer takes (an index whose
  // buffers leave a gap) would shift every later chunk.
  uint64_t position = stream_begin;
  auto fill = [&](char* dst, uint64_t len, uint64_t) {
    position += len;
    return read_exact(dst, len);
  };
  for (auto& chunk : chunks) {
    if (chunk.begin != position)
      return corrupt_file(source, "chunk " + std::to_string(chunk.index) + " begins at byte " +
                                      std::to_string(chunk.begin) + ", the stream is at byte " +
                                      std::to_string(position));
    if (auto failed = read_one(fill, source, chunk)) return std::move(failed->error);
  }
  return {};
}

}  // namespace lifeboat::checkpoint
