#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

namespace lifeboat {

struct http_header {
  std::string name;
  std::string value;
};

struct http_request {
  std::string method = "GET";  // GET, PUT, POST, ...
  std::string host;
  uint16_t port = 80;
  std::string target = "/";  // path and query
  std::vector<http_header> headers;
  std::string body;
};

struct http_response {
  int status = 0;
  std::vector<http_header> headers;
  std::string body;

  /// The value of the first header called `name` (case-insensitive).
  std::optional<std::string> header(std::string_view name) const;
};

/// Sends one HTTP/1.1 request on a fresh connection and reads the reply. The
/// whole exchange (name lookup, connect, write, read) is bounded by `timeout`;
/// any HTTP status is a response, not an error. Errors name host:port:
/// errc::timeout when the bound was reached, errc::unavailable otherwise
/// (refused, reset, unparsable reply).
caf::expected<http_response> http_send(const http_request& request,
                                       std::chrono::milliseconds timeout);

}  // namespace lifeboat
