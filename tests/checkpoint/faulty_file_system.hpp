#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "checkpoint/file_system.hpp"

namespace lifeboat::checkpoint::testing {

/// The kernel's file system with faults armed on purpose: calls on the paths
/// that a pattern (fnmatch(3) without flags: `*` matches `/` too) matches fail
/// with a given errno, or write fewer bytes than asked. Descriptors are matched by the path they
/// were opened with.
/// Thread-safe: a store may write through it from its saver thread.
class faulty_file_system final : public file_system {
 public:
  enum class call { open, pwrite, fsync, rename, mkdir, fallocate, ftruncate };

  /// From now on `what` on a path that `pattern` matches fails with `err`.
  void fail(call what, const std::string& pattern, int err);

  /// From now on a write to a path that `pattern` matches takes at most half
  /// of the bytes asked (at least one); with `then_full`, every later write
  /// to it takes none, as on a device that filled up.
  void shorten_writes(const std::string& pattern, bool then_full);

  /// From now on each write to a path that `pattern` matches takes `delay`
  /// longer, as on a slow network file system.
  void delay_writes(const std::string& pattern, std::chrono::milliseconds delay);

  /// How many calls failed or were shortened on purpose so far.
  int injected() const;

  int open(const std::string& path, int flags, mode_t mode) override;
  ssize_t pwrite(int fd, const char* data, size_t size, off_t offset) override;
  int fsync(int fd) override;
  int rename(const std::string& from, const std::string& to) override;
  int mkdir(const std::string& path, mode_t mode) override;
  int unlink(const std::string& path) override;
  int fallocate(int fd, off_t length) override;
  int ftruncate(int fd, off_t length) override;

 private:
  struct failure {
    call what;
    std::string pattern;
    int err;
  };

  // The errno armed for `what` on `path`, or 0; counts an injection.
  int armed_error(call what, const std::string& path);
  std::string path_of(int fd) const;

  mutable std::mutex mutex_;
  std::vector<failure> failures_;
  std::string short_writes_;  // the pattern; empty: none
  bool then_full_ = false;
  std::string slow_writes_;  // the pattern; empty: none
  std::chrono::milliseconds write_delay_{0};
  bool shortened_once_ = false;
  int injected_ = 0;
  std::map<int, std::string> open_paths_;
};

}  // namespace lifeboat::checkpoint::testing
