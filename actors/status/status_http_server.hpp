#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

namespace lifeboat {

/// Limits of the small HTTP/1.1 server behind the status endpoint. Every one
/// bounds what a misbehaving client can cost the worker process.
struct status_http_limits {
  static constexpr std::chrono::milliseconds default_read_timeout{5000};
  static constexpr std::chrono::milliseconds default_reply_timeout{2000};
  static constexpr std::size_t default_header_limit = 8 * 1024;
  static constexpr std::size_t default_body_limit = 1024;
  static constexpr std::size_t default_max_connections = 64;

  /// Reading one request (from its first byte, or from the previous response
  /// on a kept-alive connection) must finish within this time.
  std::chrono::milliseconds read_timeout = default_read_timeout;
  /// A request whose reply has not been completed within this time gets 503.
  std::chrono::milliseconds reply_timeout = default_reply_timeout;
  std::size_t header_limit = default_header_limit;
  std::size_t body_limit = default_body_limit;
  /// Connections beyond this many are closed as soon as they are accepted.
  std::size_t max_connections = default_max_connections;
};

struct status_http_request {
  std::string method;
  std::string target;
};

struct status_http_reply {
  unsigned status = 200;
  std::string content_type;
  std::string body;
  /// Extra header fields, e.g. `Allow` on a 405.
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Counters of the server, readable from any thread.
struct status_http_stats {
  uint64_t requests = 0;              // well-formed requests handed to the handler
  uint64_t bad_requests = 0;          // malformed or over a limit: answered 400 and closed
  uint64_t timeouts = 0;              // connections closed because a read ran past its time
  uint64_t rejected_connections = 0;  // closed at once because too many were open
  uint64_t reply_timeouts = 0;        // replies not completed in time: answered 503
};

/// A minimal HTTP/1.1 server (on 127.0.0.1 unless told another address) that
/// runs its own I/O thread.
/// Each well-formed request is handed to the handler with an id; whoever
/// answers calls `complete(id, reply)` from any thread. The server owns all
/// network state; the handler never blocks the I/O thread.
class status_http_server {
 public:
  /// Called on the I/O thread. Returns false when the request cannot be
  /// taken (the server then answers 503 at once).
  using handler = std::function<bool(const status_http_request&, uint64_t id)>;

  /// Binds and listens on host:port (an IPv4 or IPv6 address; port 0: any
  /// free port); connections wait in the backlog until `serve` starts the
  /// I/O thread. errc::invalid_config when `host` is no address.
  static caf::expected<std::unique_ptr<status_http_server>> bind(
      uint16_t port, const status_http_limits& cfg, const std::string& host = "127.0.0.1");

  ~status_http_server();

  status_http_server(const status_http_server&) = delete;
  status_http_server& operator=(const status_http_server&) = delete;

  /// The port actually bound.
  uint16_t port() const;

  /// Starts the I/O thread; called once.
  void serve(handler fn);

  /// Answers the request `id`; a request already answered (or timed out, or
  /// whose client went away) ignores it. Thread-safe.
  void complete(uint64_t id, status_http_reply reply);

  /// Stops the I/O thread, joins it and closes the listening socket; open
  /// connections are closed when the server is destroyed. Idempotent; the
  /// destructor calls it.
  void stop();

  status_http_stats stats() const;

  struct impl;

 private:
  explicit status_http_server(std::unique_ptr<impl> ptr);

  std::unique_ptr<impl> impl_;
};

}  // namespace lifeboat
