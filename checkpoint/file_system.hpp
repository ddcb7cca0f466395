#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

namespace lifeboat::checkpoint {

/// The system calls through which a checkpoint is written, in the manner of
/// LevelDB's `Env`: the store, the shard writer and the manifest make every
/// call that creates, writes, syncs, renames or removes a checkpoint file
/// through one, so a test can stand in a file system that fails on purpose (a
/// full disk, EIO on fsync, a short write). Reads, and the removal of whole
/// trees, go to the kernel directly.
///
/// Each call has its POSIX namesake's contract: the result, or -1 with errno
/// set. Implementations must be safe to call from several threads at once: a
/// store writes its shard on the saver thread while the training thread opens
/// another store over the same directory.
class file_system {
 public:
  virtual ~file_system() = default;

  /// open(2); `flags` gets O_CLOEXEC from the caller.
  virtual int open(const std::string& path, int flags, mode_t mode) = 0;

  /// pwrite(2): may write fewer than `size` bytes.
  virtual ssize_t pwrite(int fd, const char* data, size_t size, off_t offset) = 0;

  /// fsync(2), of a file or of a directory.
  virtual int fsync(int fd) = 0;

  /// rename(2).
  virtual int rename(const std::string& from, const std::string& to) = 0;

  /// mkdir(2), one level.
  virtual int mkdir(const std::string& path, mode_t mode) = 0;

  /// unlink(2).
  virtual int unlink(const std::string& path) = 0;

  /// fallocate(2) of [0, `length`) with no flags: the file's blocks (a
  /// tmpfs file's pages) allocated now, ahead of the writes.
  virtual int fallocate(int fd, off_t length) = 0;

  /// ftruncate(2): the file cut (or grown, sparse) to `length` bytes.
  virtual int ftruncate(int fd, off_t length) = 0;
};

/// The kernel's file system: every call is the system call itself. Stateless;
/// the instance lives until the process exits.
const std::shared_ptr<file_system>& posix_file_system();

}  // namespace lifeboat::checkpoint
