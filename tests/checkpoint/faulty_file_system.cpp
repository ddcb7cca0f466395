#include "tests/checkpoint/faulty_file_system.hpp"

#include <fnmatch.h>

#include <cerrno>
#include <thread>

namespace lifeboat::checkpoint::testing {

namespace {

bool matches(const std::string& pattern, const std::string& path) {
  return ::fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
}

}  // namespace

void faulty_file_system::fail(call what, const std::string& pattern, int err) {
  std::lock_guard<std::mutex> guard{mutex_};
  failures_.push_back({what, pattern, err});
}

void faulty_file_system::shorten_writes(const std::string& pattern, bool then_full) {
  std::lock_guard<std::mutex> guard{mutex_};
  short_writes_ = pattern;
  then_full_ = then_full;
}

int faulty_file_system::injected() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return injected_;
}

int faulty_file_system::armed_error(call what, const std::string& path) {
  std::lock_guard<std::mutex> guard{mutex_};
  for (const auto& f : failures_) {
    if (f.what == what && matches(f.pattern, path)) {
      ++injected_;
      return f.err;
    }
  }
  return 0;
}

std::string faulty_file_system::path_of(int fd) const {
  std::lock_guard<std::mutex> guard{mutex_};
  auto i = open_paths_.find(fd);
  return i == open_paths_.end() ? std::string{} : i->second;
}

int faulty_file_system::open(const std::string& path, int flags, mode_t mode) {
  if (auto err = armed_error(call::open, path)) {
    errno = err;
    return -1;
  }
  auto fd = posix_file_system()->open(path, flags, mode);
  if (fd >= 0) {
    // A descriptor number is reused after a close: the latest open names it.
    std::lock_guard<std::mutex> guard{mutex_};
    open_paths_[fd] = path;
  }
  return fd;
}

void faulty_file_system::delay_writes(const std::string& pattern, std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> guard{mutex_};
  slow_writes_ = pattern;
  write_delay_ = delay;
}

ssize_t faulty_file_system::pwrite(int fd, const char* data, size_t size, off_t offset) {
  auto path = path_of(fd);
  if (auto err = armed_error(call::pwrite, path)) {
    errno = err;
    return -1;
  }
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!short_writes_.empty() && matches(short_writes_, path)) {
      ++injected_;
      if (then_full_ && shortened_once_) return 0;
      shortened_once_ = true;
      size = size > 1 ? size / 2 : size;
    }
  }
  std::chrono::milliseconds delay{0};
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!slow_writes_.empty() && matches(slow_writes_, path)) delay = write_delay_;
  }
  // The slowness itself, not a synchronisation: the write takes this long.
  std::this_thread::sleep_for(delay);
  return posix_file_system()->pwrite(fd, data, size, offset);
}

int faulty_file_system::fsync(int fd) {
  if (auto err = armed_error(call::fsync, path_of(fd))) {
    errno = err;
    return -1;
  }
  return posix_file_system()->fsync(fd);
}

int faulty_file_system::rename(const std::string& from, const std::string& to) {
  if (auto err = armed_error(call::rename, from)) {
    errno = err;
    return -1;
  }
  return posix_file_system()->rename(from, to);
}

int faulty_file_system::mkdir(const std::string& path, mode_t mode) {
  if (auto err = armed_error(call::mkdir, path)) {
    errno = err;
    return -1;
  }
  return posix_file_system()->mkdir(path, mode);
}

int faulty_file_system::unlink(const std::string& path) {
  return posix_file_system()->unlink(path);
}

int faulty_file_system::fallocate(int fd, off_t length) {
  if (auto err = armed_error(call::fallocate, path_of(fd))) {
    errno = err;
    return -1;
  }
  return posix_file_system()->fallocate(fd, length);
}

int faulty_file_system::ftruncate(int fd, off_t length) {
  if (auto err = armed_error(call::ftruncate, path_of(fd))) {
    errno = err;
    return -1;
  }
  return posix_file_system()->ftruncate(fd, length);
}

}  // namespace lifeboat::checkpoint::testing
