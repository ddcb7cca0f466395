#pragma once

#include <functional>
#include <thread>
#include <vector>

#include <caf/expected.hpp>

namespace lifeboat {

/// Turns POSIX signals into calls of `on_signal(signo)` on a thread of its
/// own. The handler itself only writes one byte to a pipe (async-signal-safe);
/// everything else happens on the reader thread. One per process: installing
/// a second one while the first lives fails. Restores the previous handlers
/// when destroyed.
class signal_pipe {
 public:
  static caf::expected<std::unique_ptr<signal_pipe>> install(std::vector<int> signals,
                                                             std::function<void(int)> on_signal);
  ~signal_pipe();

  signal_pipe(const signal_pipe&) = delete;
  signal_pipe& operator=(const signal_pipe&) = delete;

 private:
  signal_pipe() = default;
  void read_loop();

  std::vector<int> signals_;
  std::function<void(int)> on_signal_;
  int read_fd_ = -1;
  std::thread reader_;
};

}  // namespace lifeboat
