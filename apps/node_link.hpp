#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/coordination/stall_watch.hpp"
#include "actors/coordination/tls_channel.hpp"

namespace lifeboat::apps {

using link_clock = std::chrono::steady_clock;

/// One authenticated TCP connection between node 0's launcher and another
/// launcher of a multi-node job: lines of text, plus heartbeats ("ping") so
/// that a peer that vanished without closing its socket is noticed too.
/// With a tls_channel every byte on the socket is TLS 1.3, as on the
/// workers' coordination connections (same key or certificates): a line
/// that fails its authentication (forged, altered, replayed) fails the link.
/// Not thread-safe: one thread uses a link.
class node_link {
 public:
  /// A client channel sends its first handshake bytes at once.
  node_link(int fd, int peer_node, std::optional<tls_channel> tls = std::nullopt);
  ~node_link();
  node_link(const node_link&) = delete;
  node_link& operator=(const node_link&) = delete;

  int fd() const { return fd_; }
  int peer_node() const { return peer_node_; }
  void set_peer_node(int node) { peer_node_ = node; }
  /// Why the link failed, once send or receive returned false.
  const std::string& why() const { return why_; }
  /// Whether it failed in TLS: a handshake or a record the peer's key did
  /// not make.
  bool tls_failed() const { return tls_failed_; }

  /// Sends one line (no newline in it); false once the connection failed.
  bool send(const std::string& line);

  /// Reads what arrived, without blocking; appends every complete line but
  /// heartbeats to `out` (lines that arrived before end of file too). False
  /// at end of file or on an error.
  bool receive(std::vector<std::string>& out);

  /// Blocks until one line arrives or `until` passes (then false, with why()).
  bool read_line(std::string& out, link_clock::time_point until);

  /// Sends a heartbeat when one is due; false when that fails or the peer
  /// has been silent for longer than the link's silence bound. Called at
  /// least once a heartbeat interval: a call later than that by a stall of
  /// this launcher's own (stall_watch) does not count the stall as the
  /// peer's silence.
  bool keep_alive(link_clock::time_point now);

  /// When keep_alive is due next.
  link_clock::time_point next_keep_alive() const;

 private:
  bool fail(std::string why);
  // Writes all of `data` to the socket (blocking up to the send timeout).
  bool write_all(const std::string& data);
  // Sends what TLS produced (handshake answers, records); true without TLS.
  bool send_ciphertext();
  // Appends what arrived to buffer_ without blocking; false at EOF or error.
  bool fill();
  // Takes the next complete line but heartbeats out of buffer_.
  bool next_line(std::string& out);

  int fd_;
  int peer_node_;
  std::optional<tls_channel> tls_;
  std::string buffer_;
  std::string why_;
  bool tls_failed_ = false;
  link_clock::time_point last_sent_;
  link_clock::time_point last_heard_;
  stall_watch stall_;
};

using link_ptr = std::unique_ptr<node_link>;

/// How long the launchers wait for one another before any worker starts, and
/// what ends the wait early: a descriptor that becomes readable (the
/// launcher's signalfd of SIGTERM and SIGINT; -1: none), which the wait does
/// not read. An ended wait is the error wait_interrupted.
struct node_wait {
  link_clock::time_point until;
  int interrupt_fd = -1;
};

/// What every launcher of a job must agree on: node K's workers are global
/// ranks K * nproc .. of nnodes * nproc, and node 0 classifies every node's
/// worker exits by its own restart code.
struct job_shape {
  int nnodes = 1;
  int nproc = 1;
  int restart_code = 0;
};

constexpr const char* wait_interrupted = "the wait for the other launchers was interrupted";

/// Node K (K > 0): connects to node 0's launcher at host:port, retrying until
/// `wait.until` (calling `on_wait` once when the first attempt fails), proves
/// that it holds `token` and checks that node 0 does too. With `tls` (a
/// client context; null: clear text) the link is TLS 1.3 from its first byte,
/// and a node 0 without it (or with another key) is an error within the
/// handshake bound. Node 0 refuses a launcher whose `shape` differs from its
/// own. The link or an error.
std::variant<link_ptr, std::string> connect_to_node_zero(const std::string& host, uint16_t port,
                                                         const std::string& token, int node_rank,
                                                         const job_shape& shape, node_wait wait,
                                                         const std::function<void()>& on_wait,
                                                         const std::shared_ptr<tls_context>& tls);

/// Node 0's listening socket for the other launchers.
class node_listener {
 public:
  /// Binds host:port; nullptr and `error` when it cannot.
  static std::unique_ptr<node_listener> listen(const std::string& host, uint16_t port,
                                               std::string& error);
  ~node_listener();
  node_listener(const node_listener&) = delete;
  node_listener& operator=(const node_listener&) = delete;

  /// Accepts launchers until nodes 1 .. nnodes-1 each hold the token and
  /// joined, or `wait.until` passes (an error naming the missing nodes).
  /// Refused peers (wrong token, node rank, another job_shape, a failed TLS
  /// handshake with `tls`, a server context) are logged and closed. Returns
  /// the links by node rank (index 0 empty).
  std::variant<std::vector<link_ptr>, std::string> accept_nodes(
      const std::string& token, const job_shape& shape, node_wait wait,
      const std::shared_ptr<tls_context>& tls);

  /// The port it listens on (the one asked for, or the one picked for 0).
  uint16_t port() const;

 private:
  explicit node_listener(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace lifeboat::apps
