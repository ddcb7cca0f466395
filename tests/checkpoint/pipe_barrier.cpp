#include "tests/checkpoint/pipe_barrier.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "messages/errors.hpp"

namespace lifeboat::checkpoint::testing {

namespace {

constexpr const char* arrive_word = "arrive ";
constexpr const char* go_word = "go ";
constexpr const char* start_line = "start";

}  // namespace

std::optional<std::string> line_reader::next(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto pos = buffered_.find('\n'); pos != std::string::npos) {
      auto line = buffered_.substr(0, pos);
      buffered_.erase(0, pos + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd pfd{fd_, POLLIN, 0};
    auto rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return std::nullopt;
    char buf[256];
    auto n = ::read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffered_.append(buf, static_cast<size_t>(n));
  }
}

bool write_line(int fd, const std::string& line) {
  auto text = line + "\n";
  return ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

caf::error pipe_barrier::arrive_and_wait(const std::string& name,
                                         std::chrono::milliseconds timeout) {
  if (!write_line(to_hub_, arrive_word + name))
    return make_error(errc::peer_lost, "pipe barrier: the harness is gone");
  auto line = from_hub_.next(timeout);
  if (!line) return make_error(errc::timeout, "pipe barrier " + name);
  if (*line != go_word + name)
    return make_error(errc::invalid_argument, "pipe barrier " + name + ": got '" + *line + "'");
  return {};
}

bool pipe_barrier::await_start(std::chrono::milliseconds timeout) {
  auto line = from_hub_.next(timeout);
  return line && *line == start_line;
}

pipe_barrier_hub::pipe_barrier_hub(std::vector<worker_pipes> workers)
    : workers_(std::move(workers)) {
  for (auto& w : workers_) readers_.emplace_back(w.from_worker);
}

bool pipe_barrier_hub::await_arrival(int rank, const std::string& name,
                                     std::chrono::milliseconds timeout) {
  auto line = readers_[static_cast<size_t>(rank)].next(timeout);
  return line && *line == arrive_word + name;
}

void pipe_barrier_hub::release(const std::string& name) {
  for (auto& w : workers_) write_line(w.to_worker, go_word + name);
}

void pipe_barrier_hub::start(int rank) {
  write_line(workers_[static_cast<size_t>(rank)].to_worker, start_line);
}

}  // namespace lifeboat::checkpoint::testing
