#pragma once

#include <sys/uio.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/error.hpp>

namespace lifeboat::checkpoint {

/// Checks chunks of a file against their XXH3-64 on a thread of its own, so
/// that reading the next chunk overlaps hashing this one and a restore runs
/// at the speed of the reads. The first mismatch is kept and reported.
class chunk_verifier {
 public:
  explicit chunk_verifier(std::string path);

  /// Joins the thread (after the queued chunks are checked).
  ~chunk_verifier();

  chunk_verifier(const chunk_verifier&) = delete;
  chunk_verifier& operator=(const chunk_verifier&) = delete;

  /// Queues chunk `index` (file bytes [begin, end), now in `parts`).
  void submit(uint64_t index, uint64_t begin, uint64_t end, std::vector<iovec> parts,
              uint64_t expected);

  /// Whether a mismatch was found already (reading can stop).
  bool failed() const;

  /// Waits for every queued chunk; errc::corrupt names the file and the first bad chunk.
  caf::error finish();

 private:
  struct chunk {
    uint64_t index;
    uint64_t begin;
    uint64_t end;
    std::vector<iovec> parts;
    uint64_t expected;
  };

  void run();

  std::string path_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<chunk> queue_;
  bool closed_ = false;
  caf::error first_error_;
  std::thread thread_;
};

/// XXH3-64 of bytes spread over several places.
uint64_t checksum_of(const std::vector<iovec>& parts);

}  // namespace lifeboat::checkpoint
