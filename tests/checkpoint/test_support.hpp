#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lifeboat::checkpoint::testing {

/// A fresh directory under /tmp (mode 0755), removed with its contents at the end.
class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Deterministic bytes that depend on `seed`: tells one checkpoint from another.
void fill_pattern(char* data, std::size_t size, uint64_t seed);
std::vector<char> pattern(std::size_t size, uint64_t seed);

/// Starts `argv` with each parent descriptor in `fds` as descriptor 3, 4, ...
pid_t spawn(const std::vector<std::string>& argv, const std::vector<int>& fds = {},
            int stdout_fd = -1);

/// Waits for `pid`; its exit code, or 128 + the signal that ended it.
int wait_for(pid_t pid);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);
bool exists(const std::string& path);

/// Flips the bits of the byte at `offset` of the file at `path` (a copy gone
/// bad on disk); false when the file could not be changed.
bool flip_byte(const std::string& path, uint64_t offset);

}  // namespace lifeboat::checkpoint::testing
