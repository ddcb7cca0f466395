#pragma once

// What several fuzz targets share: a scratch directory for the file parsers
// and a reader that takes an input apart.

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace lifeboat::fuzz {

/// A directory private to this fuzzing process, made once (in /dev/shm when
/// it exists: every input is written to a file) and removed when the process
/// ends through exit(), as libFuzzer ends a run of -max_total_time or -runs:
/// /dev/shm is emptied only at a reboot, and every `make test` runs the
/// targets anew. A crash leaves it, beside the crashing input. Its files are
/// overwritten by every input, so it never grows.
class scratch_directory {
 public:
  scratch_directory() {
    path_ = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ += "/lifeboat-fuzz-XXXXXX";
    if (mkdtemp(path_.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  }
  ~scratch_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_directory(const scratch_directory&) = delete;
  scratch_directory& operator=(const scratch_directory&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline const std::string& scratch_dir() {
  static const scratch_directory dir;
  return dir.path();
}

/// Replaces `dir`/`name` with `bytes` (no fsync: nothing here must survive).
inline void put_file(const std::string& dir, const std::string& name, const std::string& bytes) {
  auto path = dir + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path);
  size_t done = 0;
  while (done < bytes.size()) {
    auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;  // libFuzzer's timeout alarm
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done != bytes.size()) throw std::runtime_error("short write to " + path);
}

/// Takes inputs apart: the first bytes choose, the rest is data.
class input {
 public:
  input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t byte() { return size_ > 0 ? (--size_, *data_++) : 0; }

  std::string take(size_t n) {
    n = n < size_ ? n : size_;
    std::string out(reinterpret_cast<const char*>(data_), n);
    data_ += n;
    size_ -= n;
    return out;
  }

  std::string rest() { return take(size_); }

  bool empty() const { return size_ == 0; }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace lifeboat::fuzz
