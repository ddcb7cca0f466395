#include "checkpoint/directory_lock.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

namespace {

// The descriptors of every lock held in this process, for the fork handlers.
// The prepare handler takes the mutex, so no other thread holds it in the
// middle of a change when the child is made (the child has only the forking
// thread, and would otherwise wait on the mutex forever).
struct held_locks {
  std::mutex mutex;
  std::set<int> fds;
};

held_locks& held() {
  static auto* locks = [] {
    auto* made = new held_locks;
    pthread_atfork([] { held().mutex.lock(); }, [] { held().mutex.unlock(); },
                   [] {
                     auto& locks = held();
                     for (int fd : locks.fds) ::close(fd);
                     locks.fds.clear();
                     locks.mutex.unlock();
                   });
    return made;
  }();
  return *locks;
}

}  // namespace

caf::expected<directory_lock> directory_lock::acquire(const std::string& dir) {
  auto& locks = held();
  std::lock_guard<std::mutex> guard{locks.mutex};
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return make_error(errc::io_error,
                      "cannot open " + dir + " to lock it: " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) return make_error(errc::already_exists, dir + " is locked by another");
    return make_error(errc::io_error, "cannot lock " + dir + ": " + std::strerror(err));
  }
  locks.fds.insert(fd);
  return directory_lock{fd};
}

bool directory_lock::is_held(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  bool taken = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  // Closing the probe's only descriptor releases its shared lock.
  ::close(fd);
  return taken;
}

directory_lock::directory_lock(directory_lock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

directory_lock& directory_lock::operator=(directory_lock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

directory_lock::~directory_lock() { release(); }

void directory_lock::release() {
  if (fd_ < 0) return;
  auto& locks = held();
  std::lock_guard<std::mutex> guard{locks.mutex};
  locks.fds.erase(fd_);
  // Closing the last descriptor of the open file releases the lock.
  ::close(fd_);
  fd_ = -1;
}

}  // namespace lifeboat::checkpoint
