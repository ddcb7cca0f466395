// The service's side of a TLS connection (tls_channel as a server, through
// memory BIOs as in the broker) fed what a peer on the network may send. The
// first byte picks where the peer's bytes land:
//   even: a fresh session, before the handshake (the ClientHello and on);
//   odd:  a session already established with a genuine client in memory,
//         as the records that follow the join.
// The rest is a list of chunks (a length byte, then that many bytes), fed
// one read at a time as the broker would.
//
// Checked after every chunk: no plaintext ever comes out. A peer that does
// not hold the key cannot finish the handshake (its binder and Finished are
// MACs under the key and this session's randomness), and a record that the
// session's keys did not seal is rejected: whatever the bytes, the service
// is handed no frame.

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "actors/coordination/tls_channel.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/support/tls_exchange.hpp"

namespace {

using namespace lifeboat;

const std::string token = "fuzz-token";
const std::string greeting = "the service's greeting";

std::shared_ptr<tls_context> context_of(tls_role role) {
  tls_config cfg;
  cfg.enabled = true;
  auto ctx = tls_context::shared(cfg, token, role);
  if (!ctx) std::abort();
  return *ctx;
}

// A server channel whose handshake with a genuine client ended in memory.
tls_channel established_server() {
  auto client = tls_channel::make(context_of(tls_role::client));
  auto server = tls_channel::make(context_of(tls_role::server));
  if (!client || !server) std::abort();
  server->write(greeting.data(), greeting.size());
  if (test::exchange(*client, *server)) std::abort();
  if (!server->established() || !server->take_plaintext().empty()) std::abort();
  return std::move(*server);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::input in{data, size};
  auto fresh = in.byte() % 2 == 0;
  std::optional<tls_channel> server;
  if (fresh) {
    auto made = tls_channel::make(context_of(tls_role::server));
    if (!made) std::abort();
    server = std::move(*made);
    // Held until a ClientHello comes, as the service's greeting is.
    server->write(greeting.data(), greeting.size());
  } else {
    server = established_server();
  }
  while (!in.empty()) {
    auto chunk = in.take(in.byte());
    auto err = server->feed(chunk.data(), chunk.size());
    server->take_ciphertext();
    if (!server->take_plaintext().empty()) std::abort();
    if (err) break;  // the broker closes the connection
  }
  return 0;
}
