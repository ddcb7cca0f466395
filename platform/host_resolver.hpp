#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace lifeboat {

/// Whether `host` is a numeric IPv4 or IPv6 address, not a name.
bool is_numeric_address(const std::string& host);

/// The local port socket `fd` is bound to (IPv4 or IPv6); 0 when it has none
/// or getsockname fails.
uint16_t bound_port(int fd);

/// The numeric addresses of `host` ("127.0.0.1", "::1"), resolved within
/// `timeout`. A numeric host comes back as is without a lookup. getaddrinfo
/// cannot be cancelled, so a lookup runs on its own detached thread and a slow
/// resolver (no DNS server reachable) costs the caller at most `timeout`.
/// Errors: errc::timeout, errc::unavailable (unknown name).
caf::expected<std::vector<std::string>> resolve_host(const std::string& host,
                                                     std::chrono::milliseconds timeout);

}  // namespace lifeboat
