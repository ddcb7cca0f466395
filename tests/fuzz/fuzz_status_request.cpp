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

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "actors/status/status_http_server.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace lifeboat;

// Longer than the server's read timeout: a connection still open by then was
// forgotten by the server.
constexpr std::chrono::milliseconds reply_wait{3 * 5000};

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

// libFuzzer's -timeout is a periodic SIGALRM, which interrupts blocking
// calls now and then (EINTR): an interrupted call is no answer of the
// server's, so these two call again. (Before they did, one input in some
// tens of thousands failed as "neither an answer nor a close".)
bool wait_until_ready(int fd, short events) {
  pollfd p{fd, events, 0};
  auto deadline = std::chrono::steady_clock::now() + reply_wait;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc == 1) return true;
    if (rc == 0 || errno != EINTR) return false;
  }
}

ssize_t recv_some(int fd, char* buf, size_t size) {
  for (;;) {
    auto n = ::recv(fd, buf, size, 0);
    if (n >= 0 || errno != EINTR) return n;
  }
}

// Ends the run saying what failed and what the server had counted.
[[noreturn]] void fail(const char* what) {
  auto st = server().stats();
  std::fprintf(stderr,
               "fuzz_status_request: %s (errno %d); server counted %llu requests, %llu bad, "
               "%llu timeouts\n",
               what, errno, static_cast<unsigned long long>(st.requests),
               static_cast<unsigned long long>(st.bad_requests),
               static_cast<unsigned long long>(st.timeouts));
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("no socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server().port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // An interrupted connect goes on in the background; it is done once the
  // socket is writable.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
      (errno != EINTR || !wait_until_ready(fd, POLLOUT)))
    fail("cannot connect");
  // A server that stops reading (it answered 400 and closed) makes the rest
  // of a large input fail to send; that is an answer too.
  size_t sent = 0;
  while (sent < size) {
    auto n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  for (;;) {
    if (!wait_until_ready(fd, POLLIN)) fail("neither an answer nor a close");
    if (recv_some(fd, buf, sizeof(buf)) <= 0) break;
  }
  ::close(fd);
  return 0;
}
