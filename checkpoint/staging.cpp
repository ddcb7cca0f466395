#include "checkpoint/staging.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "checkpoint/device_memory.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

namespace {

std::size_t round_to_pages(std::size_t bytes) {
  auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes == 0) return page;
  return (bytes + page - 1) / page * page;
}

}  // namespace

caf::expected<std::unique_ptr<staging_buffer>> staging_buffer::allocate(std::size_t capacity) {
  capacity = round_to_pages(capacity);
  void* mem = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return make_error(errc::io_error, "cannot map " + std::to_string(capacity) +
                                          " bytes of staging memory: " + std::strerror(errno));
  // Huge pages (where the kernel grants them) make the copy cheaper on TLB
  // misses; writing every page now pre-faults it, so that the copy on the
  // training thread never waits for page faults.
  ::madvise(mem, capacity, MADV_HUGEPAGE);
  std::memset(mem, 0, capacity);
  return std::unique_ptr<staging_buffer>{new staging_buffer(static_cast<char*>(mem), capacity)};
}

staging_buffer::~staging_buffer() {
  if (pinned_) device::unpin(data_);
  ::munmap(data_, capacity_);
}

caf::error staging_buffer::pin() {
  if (pinned_) return {};
  if (auto err = device::pin(data_, capacity_)) return err;
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
