#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/error.hpp>

namespace lifeboat::checkpoint {

/// Readers read a chunk this much at a time and hash each block right after
/// it arrived, while it is still in the cache: a block this size fits the L2
/// of many server cores and the L3 of all. Hashing whole 8 MiB chunks after
/// reading them read every byte back from memory, and a restore ran at 0.76x
/// of a plain read of a cached file. Where the kernel's copy out of tmpfs is
/// the bound (a 2-core AMD EPYC VM with 512 KiB of L2 per core), blocks of
/// 64 KiB to 4 MiB read alike.
constexpr uint64_t hash_block_bytes = uint64_t{1} << 20;

/// One checksummed chunk of a data file and where its bytes go: the file's
/// bytes from `begin` on fill `parts` in order.
struct chunk_read {
  uint64_t index;
  uint64_t begin;
  std::vector<iovec> parts;
  uint64_t expected;  // XXH3-64 of the chunk's bytes
};

/// Reads `chunks` (in file order) of the file at `path` into their parts and
/// checks each against its checksum, so that a restore runs at the speed of a
/// plain read: two threads (the caller's and one more, when there are two
/// chunks or more) each take one half, with a descriptor and readahead of
/// their own, and hash every block right after reading it, while it is still
/// in the CPU cache. A failure stops each half at the failed chunk's index,
/// so the one returned is always the first bad chunk: errc::corrupt naming
/// the file and the chunk, or the read's error.
caf::error read_chunks(const std::string& path, const std::vector<chunk_read>& chunks);

/// Reads exactly `size` bytes of a stream into `data`, or fails.
using read_exact_fn = std::function<caf::error(char* data, size_t size)>;

/// As read_chunks, from a stream that carries the file's bytes in order (a
/// peer sending a replica) from its byte `stream_begin` on: `chunks` follow
/// each other without gaps from there; each is checked as it arrives, so a
/// restore needs no copy of the file. Stops at the first failure:
/// errc::corrupt naming `source` and the chunk, or the stream's error.
caf::error receive_chunks(const read_exact_fn& read_exact, const std::string& source,
                          const std::vector<chunk_read>& chunks, uint64_t stream_begin = 0);

}  // namespace lifeboat::checkpoint
