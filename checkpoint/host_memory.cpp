#include "checkpoint/host_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "messages/errors.hpp"

// Linux 5.14's "fault every page in for writing"; older headers lack the name.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace lifeboat::checkpoint {

caf::expected<host_memory> host_memory::allocate(std::size_t bytes) {
  auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto size = bytes == 0 ? page : (bytes + page - 1) / page * page;
  void* mem = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return make_error(errc::io_error, "cannot map " + std::to_string(size) +
                                          " bytes of host memory: " + std::strerror(errno));
  // Advice, not a demand: without transparent huge pages the mapping keeps
  // 4 KiB pages and works the same, only slower to touch.
  ::madvise(mem, size, MADV_HUGEPAGE);
  // The kernel faults every page in at once, without a trap per page; where
  // it cannot (an older kernel), writing every page does the same.
  if (::madvise(mem, size, MADV_POPULATE_WRITE) != 0) std::memset(mem, 0, size);
  return host_memory{static_cast<char*>(mem), size};
}

host_memory::~host_memory() { release(); }

host_memory::host_memory(host_memory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

host_memory& host_memory::operator=(host_memory&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void host_memory::release() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace lifeboat::checkpoint
