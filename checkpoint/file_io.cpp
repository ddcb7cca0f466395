#include "checkpoint/file_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "checkpoint/layout.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

unique_fd::~unique_fd() {
  if (fd_ >= 0) ::close(fd_);
}

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int unique_fd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

caf::error unique_fd::close(const std::string& path) {
  if (fd_ < 0) return {};
  int rc = ::close(release());
  if (rc != 0 && errno != EINTR) return io_error("close", path, errno);
  return {};
}

caf::error io_error(const char* op, const std::string& path, int err) {
  std::string text = op;
  text += " ";
  text += path;
  text += ": ";
  text += std::strerror(err);
  return make_error(errc::io_error, std::move(text));
}

caf::error corrupt_file(const std::string& path, const std::string& why) {
  return make_error(errc::corrupt, "corrupt file " + path + ": " + why);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

caf::expected<unique_fd> open_file(file_system& fs, const std::string& path, int flags,
                                   mode_t mode) {
  int fd;
  do {
    fd = fs.open(path, flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return io_error("open", path, errno);
  return unique_fd{fd};
}

caf::expected<unique_fd> open_file(const std::string& path, int flags, mode_t mode) {
  return open_file(*posix_file_system(), path, flags, mode);
}

caf::error pwrite_all(file_system& fs, int fd, const char* data, size_t size, off_t offset,
                      const std::string& path) {
  while (size > 0) {
    auto n = fs.pwrite(fd, data, size, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("write", path, errno);
    }
    // A zero-byte write means the device accepts nothing more.
    if (n == 0) return io_error("write", path, ENOSPC);
    data += n;
    offset += n;
    size -= static_cast<size_t>(n);
  }
  return {};
}

caf::error preadv_all(int fd, std::vector<iovec> iov, off_t offset, const std::string& path) {
  size_t first = 0;
  while (first < iov.size()) {
    int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    auto n = ::preadv(fd, iov.data() + first, count, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("read", path, errno);
    }
    if (n == 0) return make_error(errc::corrupt, "file " + path + " is truncated");
    offset += n;
    // Advance over the filled part of the vector.
    auto left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return {};
}

caf::expected<std::string> read_whole_file(const std::string& path) {
  // Non-blocking: opening a FIFO planted under a checkpoint file's name
  // would wait for a writer forever (a regular file reads as it would).
  auto fd = open_file(path, O_RDONLY | O_NONBLOCK);
  if (!fd) return std::move(fd.error());
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) return io_error("stat", path, errno);
  if (!S_ISREG(st.st_mode)) return corrupt_file(path, "is not a regular file");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  if (!bytes.empty()) {
    if (auto err = preadv_all(fd->get(), {iovec{bytes.data(), bytes.size()}}, 0, path)) return err;
  }
  return bytes;
}

caf::error fsync_fd(file_system& fs, int fd, const std::string& path) {
  int rc;
  do {
    rc = fs.fsync(fd);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return io_error("fsync", path, errno);
  return {};
}

caf::error fsync_dir(file_system& fs, const std::string& dir) {
  auto fd = open_file(fs, dir, O_RDONLY | O_DIRECTORY);
  if (!fd) return std::move(fd.error());
  return fsync_fd(fs, fd->get(), dir);
}

namespace {

std::string parent_of(const std::string& path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

}  // namespace

caf::error make_dir_durable(file_system& fs, const std::string& dir, mode_t mode) {
  if (fs.mkdir(dir, mode) != 0) {
    if (errno != EEXIST) return io_error("mkdir", dir, errno);
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return io_error("stat", dir, errno);
    if (!S_ISDIR(st.st_mode)) return io_error("mkdir", dir, ENOTDIR);
  }
  return fsync_dir(fs, parent_of(dir));
}

caf::error make_dirs_durable(file_system& fs, const std::string& dir, mode_t mode) {
  auto parent = parent_of(dir);
  if (parent != dir && parent != "." && parent != "/" && !file_exists(parent)) {
    if (auto err = make_dirs_durable(fs, parent, mode)) return err;
  }
  return make_dir_durable(fs, dir, mode);
}

caf::error write_file_durably(file_system& fs, const std::string& dir, const std::string& name,
                              const std::string& bytes, mode_t mode, file_writers writers) {
  static std::atomic<uint64_t> temp_files{0};
  auto path = join_path(dir, name);
  auto tmp = path + temp_suffix;
  if (writers == file_writers::several)
    tmp =
        path + "." + std::to_string(::getpid()) + "-" + std::to_string(temp_files++) + temp_suffix;
  auto fd = open_file(fs, tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (!fd) return std::move(fd.error());
  auto err = pwrite_all(fs, fd->get(), bytes.data(), bytes.size(), 0, tmp);
  if (!err) err = fsync_fd(fs, fd->get(), tmp);
  if (!err) err = fd->close(tmp);
  if (!err && fs.rename(tmp, path) != 0) err = io_error("rename", tmp, errno);
  if (err) {
    fs.unlink(tmp);
    return err;
  }
  return fsync_dir(fs, dir);
}

caf::error remove_tree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return io_error("stat", path, errno);
  }
  // What vanishes meanwhile is gone as wished: the ranks of one host remove
  // their memory tiers, and the last the job's directory, at the same time.
  if (S_ISDIR(st.st_mode)) {
    auto names = list_dir(path);
    if (!names && names.error() == make_error(errc::io_error) && !file_exists(path)) return {};
    if (!names) return std::move(names.error());
    for (auto& name : *names)
      if (auto err = remove_tree(join_path(path, name))) return err;
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return io_error("rmdir", path, errno);
    return {};
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error("unlink", path, errno);
  return {};
}

caf::expected<std::vector<std::string>> list_dir(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> handle{::opendir(dir.c_str()), &::closedir};
  if (!handle) return io_error("opendir", dir, errno);
  std::vector<std::string> names;
  errno = 0;
  while (auto* entry = ::readdir(handle.get())) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  if (errno != 0) return io_error("readdir", dir, errno);
  return names;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

caf::expected<uint64_t> file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return io_error("stat", path, errno);
  return static_cast<uint64_t>(st.st_size);
}

caf::error check_written_size(int fd, uint64_t size, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error("fstat", path, errno);
  if (static_cast<uint64_t>(st.st_size) == size) return {};
  return make_error(errc::io_error, "the file written over at " + path + " has " +
                                        std::to_string(st.st_size) + " bytes, not the " +
                                        std::to_string(size) + " written");
}

}  // namespace lifeboat::checkpoint
