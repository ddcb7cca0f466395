#include "checkpoint/staging.hpp"

#include <utility>

#include "checkpoint/device_memory.hpp"

namespace lifeboat::checkpoint {

caf::expected<std::unique_ptr<staging_buffer>> staging_buffer::allocate(std::size_t capacity) {
  auto memory = host_memory::allocate(capacity);
  if (!memory) return std::move(memory.error());
  return std::unique_ptr<staging_buffer>{new staging_buffer(std::move(*memory))};
}

staging_buffer::~staging_buffer() {
  if (pinned_) device::unpin(memory_.data());
}

caf::error staging_buffer::pin() {
  if (pinned_) return {};
  if (auto err = device::pin(memory_.data(), memory_.size())) return err;
  pinned_ = true;
  return {};
}

staging_lease::staging_lease(std::shared_ptr<staging_pool> pool,
                             std::unique_ptr<staging_buffer> buffer, std::size_t size)
    : pool_(std::move(pool)), buffer_(std::move(buffer)), size_(size) {}

staging_lease::~staging_lease() { give_back(); }

staging_lease& staging_lease::operator=(staging_lease&& other) noexcept {
  if (this != &other) {
    give_back();
    pool_ = std::move(other.pool_);
    buffer_ = std::move(other.buffer_);
    size_ = other.size_;
  }
  return *this;
}

void staging_lease::give_back() {
  if (pool_ && buffer_) pool_->give_back(std::move(buffer_));
  pool_.reset();
}

std::shared_ptr<staging_pool> staging_pool::make() {
  return std::shared_ptr<staging_pool>{new staging_pool};
}

caf::expected<staging_lease> staging_pool::acquire(std::size_t bytes, bool pinned) {
  std::unique_ptr<staging_buffer> buffer;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto i = free_.begin(); i != free_.end(); ++i) {
      if ((*i)->capacity() >= bytes) {
        buffer = std::move(*i);
        free_.erase(i);
        break;
      }
    }
    // A buffer too small for this save is dropped rather than kept alongside.
    if (!buffer && !free_.empty()) free_.pop_back();
  }
  if (!buffer) {
    auto fresh = staging_buffer::allocate(bytes);
    if (!fresh) return std::move(fresh.error());
    buffer = std::move(*fresh);
    std::lock_guard<std::mutex> guard{mtx_};
    ++allocations_;
  }
  if (pinned) {
    if (auto err = buffer->pin()) {
      give_back(std::move(buffer));
      return err;
    }
  }
  return staging_lease{shared_from_this(), std::move(buffer), bytes};
}

std::size_t staging_pool::allocations() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return allocations_;
}

void staging_pool::give_back(std::unique_ptr<staging_buffer> buffer) {
  std::lock_guard<std::mutex> guard{mtx_};
  free_.push_back(std::move(buffer));
}

}  // namespace lifeboat::checkpoint
