// LD_PRELOAD'ed into lifeboat-demo workers by deadline_save_test: each
// pwrite(2) to a file under $SLOW_WRITES_DIR takes $SLOW_WRITES_MS longer, a
// checkpoint directory on slow network storage without FUSE. The store writes
// every checkpoint file through pwrite (checkpoint/file_system.cpp).
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

using pwrite_fn = ssize_t (*)(int, const void*, size_t, off_t);

// Whether `fd` names a file under $SLOW_WRITES_DIR.
bool is_slow(int fd) {
  static const char* dir = std::getenv("SLOW_WRITES_DIR");
  if (dir == nullptr) return false;
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char path[4096];
  auto len = ::readlink(link, path, sizeof(path) - 1);
  if (len <= 0) return false;
  path[len] = '\0';
  // Under it, not a sibling that shares its prefix ("ckpt-local").
  auto n = std::strlen(dir);
  return std::strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

ssize_t slow_pwrite(const char* name, int fd, const void* data, size_t size, off_t offset) {
  auto real = reinterpret_cast<pwrite_fn>(::dlsym(RTLD_NEXT, name));
  if (is_slow(fd)) {
    static const char* ms = std::getenv("SLOW_WRITES_MS");
    // The slowness itself: the write takes this much longer.
    std::this_thread::sleep_for(std::chrono::milliseconds{ms != nullptr ? std::atoi(ms) : 0});
  }
  return real(fd, data, size, offset);
}

}  // namespace

extern "C" ssize_t pwrite(int fd, const void* data, size_t size, off_t offset) {
  return slow_pwrite("pwrite", fd, data, size, offset);
}

extern "C" ssize_t pwrite64(int fd, const void* data, size_t size, off_t offset) {
  return slow_pwrite("pwrite64", fd, data, size, offset);
}
