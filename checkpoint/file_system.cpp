#include "checkpoint/file_system.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace lifeboat::checkpoint {

namespace {

class posix_fs final : public file_system {
 public:
  int open(const std::string& path, int flags, mode_t mode) override {
    return ::open(path.c_str(), flags, mode);
  }

  ssize_t pwrite(int fd, const char* data, size_t size, off_t offset) override {
    return ::pwrite(fd, data, size, offset);
  }

  int fsync(int fd) override { return ::fsync(fd); }

  int rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str());
  }

  int mkdir(const std::string& path, mode_t mode) override { return ::mkdir(path.c_str(), mode); }

  int unlink(const std::string& path) override { return ::unlink(path.c_str()); }

  int fallocate(int fd, off_t length) override { return ::fallocate(fd, 0, 0, length); }

  int ftruncate(int fd, off_t length) override { return ::ftruncate(fd, length); }
};

}  // namespace

const std::shared_ptr<file_system>& posix_file_system() {
  static const std::shared_ptr<file_system> instance = std::make_shared<posix_fs>();
  return instance;
}

}  // namespace lifeboat::checkpoint
