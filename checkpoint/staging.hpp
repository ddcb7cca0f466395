#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "checkpoint/host_memory.hpp"

namespace lifeboat::checkpoint {

/// Host memory that snapshots are copied into: mapped and pre-faulted once
/// (host_memory), so that the copy on the training thread never waits for
/// page faults.
class staging_buffer {
 public:
  static caf::expected<std::unique_ptr<staging_buffer>> allocate(std::size_t capacity);
  ~staging_buffer();
  staging_buffer(const staging_buffer&) = delete;
  staging_buffer& operator=(const staging_buffer&) = delete;

  char* data() { return memory_.data(); }
  std::size_t capacity() const { return memory_.size(); }
  bool pinned() const { return pinned_; }

  /// Page-locks the buffer for device copies (once; later calls do nothing).
  caf::error pin();

 private:
  explicit staging_buffer(host_memory memory) : memory_(std::move(memory)) {}

  host_memory memory_;
  bool pinned_ = false;
};

class staging_pool;

/// A staging buffer lent out of a pool; goes back to the pool when destroyed.
class staging_lease {
 public:
  staging_lease() = default;
  staging_lease(std::shared_ptr<staging_pool> pool, std::unique_ptr<staging_buffer> buffer,
                std::size_t size);
  ~staging_lease();
  staging_lease(staging_lease&&) noexcept = default;
  staging_lease& operator=(staging_lease&& other) noexcept;

  char* data() { return buffer_->data(); }
  const char* data() const { return buffer_->data(); }
  std::size_t size() const { return size_; }

 private:
  void give_back();

  std::shared_ptr<staging_pool> pool_;
  std::unique_ptr<staging_buffer> buffer_;
  std::size_t size_ = 0;
};

/// Reuses staging buffers between saves: a save of the same size as the last
/// one allocates nothing. Thread-safe; leases may be returned from any thread.
class staging_pool : public std::enable_shared_from_this<staging_pool> {
 public:
  static std::shared_ptr<staging_pool> make();

  /// A buffer of at least `bytes` (page-locked when `pinned`).
  caf::expected<staging_lease> acquire(std::size_t bytes, bool pinned);

  /// How many buffers were allocated over the pool's life.
  std::size_t allocations() const;

 private:
  friend class staging_lease;
  staging_pool() = default;
  void give_back(std::unique_ptr<staging_buffer> buffer);

  mutable std::mutex mtx_;
  std::vector<std::unique_ptr<staging_buffer>> free_;
  std::size_t allocations_ = 0;
};

}  // namespace lifeboat::checkpoint
