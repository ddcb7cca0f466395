#pragma once

#include <cstddef>

#include <caf/expected.hpp>

namespace lifeboat::checkpoint {

/// Large host memory that is cheap to fill: an anonymous mapping with huge
/// pages advised (where the kernel grants them) and every page faulted in
/// when it is allocated. Why: a checkpoint's bytes are copied into it at full
/// speed only when no page faults on the way; with 4 KiB pages a first touch of
/// 256 MiB took about 0.9 s on a virtual machine here (65,536 faults), with
/// huge pages 0.02-0.3 s, and a read into memory touched before ran at about
/// memcpy's speed with huge pages and 8x slower without. Staging memory and
/// lifeboat-demo's state use it; trainers keep their own allocator (PyTorch:
/// THP_MEM_ALLOC_ENABLE=1 asks for the same).
///
/// Move-only; the memory is unmapped when the owner is destroyed. Not
/// thread-safe beyond what a plain buffer is.
class host_memory {
 public:
  /// At least `bytes` (rounded up to whole pages, never empty): errc::io_error
  /// with the reason when the mapping is refused.
  static caf::expected<host_memory> allocate(std::size_t bytes);

  host_memory() = default;
  ~host_memory();
  host_memory(host_memory&& other) noexcept;
  host_memory& operator=(host_memory&& other) noexcept;
  host_memory(const host_memory&) = delete;
  host_memory& operator=(const host_memory&) = delete;

  char* data() { return data_; }
  const char* data() const { return data_; }
  /// The mapping's size: `bytes` rounded up to whole pages.
  std::size_t size() const { return size_; }

 private:
  host_memory(char* data, std::size_t size) : data_(data), size_(size) {}
  void release();

  char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace lifeboat::checkpoint
