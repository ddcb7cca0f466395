#pragma once

// Two tls_channels talking in memory, with no socket: how the TLS tests, the
// TLS fuzz target and tls_bench run a handshake and the records after it.

#include <caf/error.hpp>

#include "actors/coordination/tls_channel.hpp"

namespace lifeboat::test {

/// Carries each side's bytes to the other until neither has any: the first
/// error either side raises, or none.
inline caf::error exchange(tls_channel& client, tls_channel& server) {
  for (;;) {
    auto to_server = client.take_ciphertext();
    auto to_client = server.take_ciphertext();
    if (to_server.empty() && to_client.empty()) return caf::none;
    if (auto err = server.feed(to_server.data(), to_server.size())) return err;
    if (auto err = client.feed(to_client.data(), to_client.size())) return err;
  }
}

}  // namespace lifeboat::test
