#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "checkpoint/file_system.hpp"

namespace lifeboat::checkpoint {

/// An owned file descriptor, closed on destruction.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  ~unique_fd();
  unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}
  unique_fd& operator=(unique_fd&& other) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  int get() const { return fd_; }
  int release();

  /// Closes now and reports a failed close (NFS and quota errors surface here).
  caf::error close(const std::string& path);

 private:
  int fd_ = -1;
};

/// errc::io_error "<op> <path>: <strerror(err)>".
caf::error io_error(const char* op, const std::string& path, int err);

/// errc::corrupt "corrupt file <path>: <why>"; the log line a person greps for.
caf::error corrupt_file(const std::string& path, const std::string& why);

std::string join_path(const std::string& dir, const std::string& name);

/// Checkpoints hold a job's whole model and optimizer state: by default only
/// their owner may read them, whatever the umask would allow.
constexpr mode_t private_file_mode = 0600;
constexpr mode_t private_dir_mode = 0700;

/// The permissions of the files and directories a checkpoint store creates
/// (both still narrowed by the process's umask).
struct file_modes {
  mode_t file = private_file_mode;
  mode_t dir = private_dir_mode;
};

/// open(2) through `fs`, retried on EINTR; the error names the path.
caf::expected<unique_fd> open_file(file_system& fs, const std::string& path, int flags,
                                   mode_t mode = private_file_mode);

/// open_file through the kernel, for reading.
caf::expected<unique_fd> open_file(const std::string& path, int flags,
                                   mode_t mode = private_file_mode);

/// pwrite(2) at `offset` until every byte is written; a write that takes no
/// byte is a full device (ENOSPC).
caf::error pwrite_all(file_system& fs, int fd, const char* data, size_t size, off_t offset,
                      const std::string& path);

/// pread(2) into `iov` (several destinations) at `offset` until all are filled.
/// A file shorter than that is errc::corrupt.
caf::error preadv_all(int fd, std::vector<iovec> iov, off_t offset, const std::string& path);

/// The bytes of the regular file at `path`; errc::corrupt naming it when it is
/// something else (a FIFO, a directory), at once.
caf::expected<std::string> read_whole_file(const std::string& path);

caf::error fsync_fd(file_system& fs, int fd, const std::string& path);

/// fsync of a directory: makes the creation, rename or removal of its entries durable.
caf::error fsync_dir(file_system& fs, const std::string& dir);

/// Creates `dir` if absent (one level) and makes its entry durable in the parent.
caf::error make_dir_durable(file_system& fs, const std::string& dir,
                            mode_t mode = private_dir_mode);

/// Creates `dir` and any missing parents, each made durable in its parent.
caf::error make_dirs_durable(file_system& fs, const std::string& dir,
                             mode_t mode = private_dir_mode);

/// Who may write one file at the same time: one writer, or several (the
/// ranks of a host recording their job's memory directory at once).
enum class file_writers { one, several };

/// Writes `bytes` as `path`: to a temporary file beside it, fsync, rename,
/// fsync of the directory. A crash leaves either the old file (or none) or
/// the whole new one; an error removes the temporary file. With one writer
/// the temporary file is `path` + ".tmp"; with several, each call has one of
/// its own (`path` + ".<pid>-<n>.tmp"): writers that shared one would
/// truncate each other's bytes and rename a file another is still writing,
/// and the file could be empty for a moment. Then the last rename wins, whole.
caf::error write_file_durably(file_system& fs, const std::string& dir, const std::string& name,
                              const std::string& bytes, mode_t mode = private_file_mode,
                              file_writers writers = file_writers::one);

/// Removes a directory tree (no symlinks are followed).
caf::error remove_tree(const std::string& path);

/// The names in a directory, without "." and "..".
caf::expected<std::vector<std::string>> list_dir(const std::string& dir);

bool file_exists(const std::string& path);

/// The size of the file at `path`; errc::io_error naming it (absent, or
/// stat(2) failed).
caf::expected<uint64_t> file_size(const std::string& path);

/// Whether the file open as `fd` (at `path`), written over from its start
/// without truncation (a spare allocated beforehand), ends with the `size`
/// bytes just written: errc::io_error naming both sizes otherwise, since
/// bytes past them would make it longer than its index says.
caf::error check_written_size(int fd, uint64_t size, const std::string& path);

}  // namespace lifeboat::checkpoint
