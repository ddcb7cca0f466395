#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lifeboat {

/// "host:port" as lifeboat writes an address in its errors and log lines,
/// with an IPv6 address in brackets ("[::1]:5000"): without them the port
/// cannot be told from the address. Every layer names addresses with it.
std::string host_port(std::string_view host, uint16_t port);

}  // namespace lifeboat
