#pragma once

#include <string>

#include <caf/expected.hpp>

namespace lifeboat::checkpoint {

/// An exclusive advisory lock (flock(2)) on a directory, held from acquire
/// until the object is destroyed or the process ends, however it ends: a
/// killed holder leaves no stale lock behind, and the directory gains no
/// file (the layout stays as DESIGN.md states it).
///
/// A child forked from the holder does not keep the lock: flock belongs to
/// the open file, which fork shares, so a training script's forked workers
/// (a DataLoader's) that outlive it by seconds would otherwise hold it
/// against the restart. Each lock's descriptor is closed in the child
/// (pthread_atfork), and O_CLOEXEC closes it across exec.
///
/// Thread-safety: acquire and the destructor may run on any thread.
class directory_lock {
 public:
  /// Locks `dir`, which must exist, without waiting. errc::already_exists
  /// when another holds it (another process, or another directory_lock of
  /// this one); errc::io_error when `dir` cannot be opened (a link is not
  /// followed) or the file system refuses locks.
  static caf::expected<directory_lock> acquire(const std::string& dir);

  /// Whether a directory_lock (of any process, this one included) holds
  /// `dir`; false as well when `dir` cannot be opened. Why not an acquire
  /// released at once: two such probes at the same moment (two workers
  /// starting) each found the other's and took the directory for held. This
  /// one takes a shared lock, which another probe's does not conflict with;
  /// an acquire at the same moment still fails (errc::already_exists), so a
  /// caller that acquires while others may probe tries again.
  static bool is_held(const std::string& dir);

  directory_lock(directory_lock&& other) noexcept;
  directory_lock& operator=(directory_lock&& other) noexcept;
  directory_lock(const directory_lock&) = delete;
  directory_lock& operator=(const directory_lock&) = delete;
  ~directory_lock();

 private:
  explicit directory_lock(int fd) : fd_(fd) {}

  void release();

  int fd_ = -1;
};

}  // namespace lifeboat::checkpoint
