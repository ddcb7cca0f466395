// The status endpoint's request handling: each input is sent, as one client's
// bytes, to a status_http_server on 127.0.0.1 with the limits the endpoint
// runs with (header size, body size, read time, connections), and the reply
// is read to the end. Several requests in one input go down one kept-alive
// connection. The handler answers every request at once, as the endpoint's
// actor would.
//
// Checked: the server answers or closes every connection by itself (no
// input leaves it hanging beyond the read timeout).

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "actors/status/status_http_server.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace lifeboat;

// Longer than the server's read timeout: a connection still open by then was
// forgotten by the server.
constexpr int reply_wait_ms = 3 * 5000;

status_http_server& server() {
  static std::unique_ptr<status_http_server> srv = [] {
    auto bound = status_http_server::bind(0, status_http_limits{});
    if (!bound) std::abort();
    auto& s = **bound;
    s.serve([&s](const status_http_request& req, uint64_t id) {
      s.complete(id, status_http_reply{200, "text/plain", req.method + " " + req.target, {}});
      return true;
    });
    return std::move(*bound);
  }();
  return *srv;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet_logging();
  server();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server().port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
  // A server that stops reading (it answered 400 and closed) makes the rest
  // of a large input fail to send; that is an answer too.
  size_t sent = 0;
  while (sent < size) {
    auto n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, reply_wait_ms) != 1) std::abort();
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
  }
  ::close(fd);
  return 0;
}
