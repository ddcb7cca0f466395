#include "platform/host_resolver.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "messages/background_thread.hpp"
#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// Shared between the caller and the lookup thread, which may outlive the caller.
struct lookup_state {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  int status = 0;
  std::vector<std::string> addresses;
};

void run_lookup(const std::string& host, lookup_state& state) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* results = nullptr;
  int status = getaddrinfo(host.c_str(), nullptr, &hints, &results);
  std::vector<std::string> addresses;
  for (auto* ai = results; status == 0 && ai != nullptr; ai = ai->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        ai->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr);
    if (inet_ntop(ai->ai_family, raw, text, sizeof(text)) != nullptr) addresses.emplace_back(text);
  }
  if (results != nullptr) freeaddrinfo(results);
  std::lock_guard<std::mutex> guard{state.mutex};
  state.status = status;
  state.addresses = std::move(addresses);
  state.done = true;
  state.done_cv.notify_all();
}

}  // namespace

bool is_numeric_address(const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

uint16_t bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

caf::expected<std::vector<std::string>> resolve_host(const std::string& host,
                                                     std::chrono::milliseconds timeout) {
  if (is_numeric_address(host)) return std::vector<std::string>{host};
  auto state = std::make_shared<lookup_state>();
  background_thread([host, state] { run_lookup(host, *state); }).detach();
  std::unique_lock<std::mutex> lock{state->mutex};
  if (!state->done_cv.wait_for(lock, timeout, [&] { return state->done; }))
    return make_error(errc::timeout, "resolving '" + host + "' took longer than " +
                                         std::to_string(timeout.count()) + " ms");
  if (state->status != 0)
    return make_error(errc::unavailable,
                      "cannot resolve '" + host + "': " + gai_strerror(state->status));
  if (state->addresses.empty())
    return make_error(errc::unavailable, "'" + host + "' has no address");
  return state->addresses;
}

}  // namespace lifeboat
