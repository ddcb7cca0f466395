#include "checkpoint/chunk_verifier.hpp"

#include "checkpoint/xxh3.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

uint64_t checksum_of(const std::vector<iovec>& parts) {
  if (parts.size() == 1) return XXH3_64bits(parts[0].iov_base, parts[0].iov_len);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (auto& part : parts) XXH3_64bits_update(&state, part.iov_base, part.iov_len);
  return XXH3_64bits_digest(&state);
}

chunk_verifier::chunk_verifier(std::string path)
    : path_(std::move(path)), thread_([this] { run(); }) {}

chunk_verifier::~chunk_verifier() { (void)finish(); }

void chunk_verifier::submit(uint64_t index, uint64_t begin, uint64_t end, std::vector<iovec> parts,
                            uint64_t expected) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    queue_.push_back({index, begin, end, std::move(parts), expected});
  }
  cv_.notify_all();
}

bool chunk_verifier::failed() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return static_cast<bool>(first_error_);
}

caf::error chunk_verifier::finish() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    closed_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  return first_error_;
}

void chunk_verifier::run() {
  for (;;) {
    chunk next;
    {
      std::unique_lock<std::mutex> lock{mtx_};
      cv_.wait(lock, [this] { return closed_ || !queue_.empty(); });
      if (queue_.empty()) return;
      next = std::move(queue_.front());
      queue_.pop_front();
      // After a mismatch the rest is not worth hashing.
      if (first_error_) continue;
    }
    if (checksum_of(next.parts) == next.expected) continue;
    std::lock_guard<std::mutex> guard{mtx_};
    first_error_ = make_error(
        errc::corrupt, "corrupt file " + path_ + ": checksum mismatch in chunk " +
                           std::to_string(next.index) + " (bytes " + std::to_string(next.begin) +
                           ".." + std::to_string(next.end) + ")");
  }
}

}  // namespace lifeboat::checkpoint
