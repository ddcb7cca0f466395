#pragma once

// Helpers shared by the status endpoint's tests: a raw loopback socket with
// deadlines (for requests no HTTP client would send), a child-process runner
// (for lifeboat-status and chromium), and small real actors that answer
// (status_atom) with a fixed ActorStatus of their own.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/atoms.hpp"
#include "messages/status.pb.h"
#include "messages/wire.hpp"

namespace lifeboat::test {

using clock_type = std::chrono::steady_clock;

inline int millis_left(clock_type::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

/// A blocking TCP connection to 127.0.0.1 whose reads end at a deadline.
class raw_connection {
 public:
  explicit raw_connection(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  ~raw_connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  bool connected() const { return fd_ >= 0; }

  /// Sends everything; false when the server closed the connection first.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  void shutdown_send() { ::shutdown(fd_, SHUT_WR); }

  /// Everything the server sent until it closed the connection; nullopt if
  /// it was still open at the deadline.
  std::optional<std::string> read_until_close(clock_type::time_point deadline) {
    std::string out;
    char buf[4096];
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      int rc = ::poll(&p, 1, millis_left(deadline));
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) return std::nullopt;
      auto n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n > 0) {
        out.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno == ECONNRESET) {
        return out;
      } else if (errno != EINTR) {
        return std::nullopt;
      }
    }
  }

 private:
  int fd_ = -1;
};

/// True once nothing accepts connections on the port any more.
inline bool port_closed_before(uint16_t port, clock_type::time_point deadline) {
  while (clock_type::now() < deadline) {
    raw_connection probe{port};
    if (!probe.connected()) return true;
    // A connection can still be accepted by the kernel backlog while the
    // server shuts down; wait for it to be closed rather than sleeping.
    probe.read_until_close(clock_type::now() + std::chrono::milliseconds{100});
  }
  return false;
}

struct process_result {
  int exit_code = -1;  // -1: killed at the deadline or by a signal
  std::string out;
  std::string err;
};

/// Runs argv[0] (searched in PATH) in its own process group, collects
/// stdout and stderr, and kills the group at the deadline.
inline process_result run_process(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout) {
  int out_pipe[2];
  int err_pipe[2];
  process_result result;
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  auto deadline = clock_type::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_pipes = 2;
  bool timed_out = false;
  while (open_pipes > 0) {
    int rc = ::poll(fds, 2, millis_left(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) {
      timed_out = true;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      auto n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  if (timed_out) ::kill(-pid, SIGKILL);
  for (auto& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

/// A real actor whose own state is one ActorStatus; it answers (status_atom)
/// with it.
inline caf::behavior fixed_status_actor(caf::event_based_actor*, wire::ActorStatus status) {
  return {[status](status_atom) { return status; }};
}

/// A real actor that takes status requests and never answers them (it holds
/// the promises), as a stuck actor would. It takes its name as an argument:
/// CAF 0.17 dereferences a null argument tuple when a function actor is
/// spawned with no arguments, which UBSan reports.
struct silent_state {
  std::string name;
  std::vector<caf::response_promise> held;
};

inline caf::behavior silent_status_actor(caf::stateful_actor<silent_state>* self,
                                         std::string name) {
  self->state.name = std::move(name);
  return {[self](status_atom) { self->state.held.push_back(self->make_response_promise()); }};
}

inline wire::ActorStatus actor_status(const std::string& name, const std::string& state,
                                      int64_t mailbox) {
  wire::ActorStatus out;
  out.set_name(name);
  out.set_state(state);
  out.set_mailbox(mailbox);
  return out;
}

/// The actors of a coordinator-side worker in the middle of a save: the step
/// resolver knows step and phase, the checkpoint writer the last checkpoint
/// (with a byte count above 2^32), the coordination service two workers.
inline std::vector<wire::ActorStatus> saving_cluster() {
  auto resolver = actor_status("step_resolver", "running", 2);
  resolver.set_step(120);
  resolver.set_phase("saving");
  (*resolver.mutable_metrics())["notices"] = 1;
  auto writer = actor_status("checkpoint_writer", "running", 0);
  auto* ckpt = writer.mutable_last_checkpoint();
  ckpt->set_step(100);
  ckpt->set_path("/ckpt/step-100");
  ckpt->set_bytes(6'000'000'000);
  ckpt->set_seconds(0.75);
  // Held in every tier: the memory tier, the peer's, the directory.
  for (const auto& [name, seconds] : std::vector<std::pair<const char*, double>>{
           {"memory", 0.05}, {"peer", 0.3}, {"directory", 0.7}}) {
    auto* held = ckpt->add_tiers();
    held->set_name(name);
    held->set_seconds(seconds);
  }
  // Restored at this worker's start from the memory tier; saved since.
  auto* restored = writer.mutable_restored();
  restored->set_step(40);
  restored->set_path("/dev/shm/job/step-40");
  restored->set_bytes(6'000'000'000);
  restored->set_seconds(0.5);
  auto* tier = restored->add_tiers();
  tier->set_name("memory");
  tier->set_seconds(0.5);
  (*writer.mutable_metrics())["saves"] = 3;
  (*writer.mutable_metrics())["save_seconds"] = 0.75;
  auto service = actor_status("coordination_service", "running", 1);
  for (int rank = 0; rank < 2; ++rank) {
    auto* w = service.add_workers();
    w->set_rank(rank);
    w->set_step(120 - rank);
    w->set_last_heartbeat_ms(15 + rank);
    w->set_state("alive");
    w->set_phase(rank == 0 ? "saving" : "checkpoint_scheduled");
    // Rank 1 takes three times as long: a straggler.
    w->set_step_seconds_median(rank == 0 ? 0.022 : 0.066);
    w->set_step_seconds_p99(rank == 0 ? 0.025 : 0.07);
    w->set_straggler(rank == 1);
  }
  (*service.mutable_metrics())["heartbeats_missed"] = 0;
  return {actor_status("signal_watcher", "running", 0), resolver, writer, service};
}

}  // namespace lifeboat::test
