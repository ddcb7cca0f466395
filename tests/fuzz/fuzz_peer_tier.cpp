// The peer tier's two ends fed a peer's bytes over real loopback sockets,
// after a genuine handshake (so the fuzzer reaches past the token's proof):
//   first byte even: a replica_server (keeping rank 1's replicas of 4) gets
//     a ReplicaRequest made of the input (its proof filled in when empty),
//     then the rest of the input as a push's files;
//   first byte odd: a replica_client's fetch gets the rest of the input as
//     the listener's replies and files.
// Checked: neither end crashes, hangs or restores a step it was not asked for;
// every connection ends (the server, made for the input, ends with it).

#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "messages/checkpoint.pb.h"
#include "runtime/peer_tier.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/support/loopback_port.hpp"

namespace {

using namespace lifeboat;

const std::string token = "fuzz-token";
constexpr int world_size = 4;
constexpr int rank = 1;

// A server of its own for each input: its destructor ends every connection
// and joins its thread, so no input's work outlives it.
std::unique_ptr<replica_server> start_server() {
  replica_server::config cfg;
  cfg.host = "127.0.0.1";
  cfg.token = token;
  cfg.dir = fuzz::scratch_dir() + "/peer";
  cfg.world_size = world_size;
  cfg.holds = [](int source) { return source == rank; };
  auto s = replica_server::start(std::move(cfg));
  if (!s) std::abort();
  return std::move(*s);
}

// The registered state a fetch restores into: one host buffer and one of
// callbacks, as a trainer's model and its data loader.
checkpoint::state_registry& registry() {
  static std::vector<char> weights(4096);
  static std::string loader;
  static auto made = [] {
    checkpoint::state_registry r;
    if (r.add_host_buffer("weights", weights.data(), weights.size()) ||
        r.add_callbacks(
            "loader", [] { return loader; }, [](const std::string& bytes) { loader = bytes; }))
      std::abort();
    return r;
  }();
  return made;
}

void feed_the_server(fuzz::input& in) {
  auto server = start_server();
  auto link = peer_link::connect("127.0.0.1", server->port(), token);
  if (!link) std::abort();  // a genuine connector is always taken
  size_t len = in.byte();
  auto request_bytes = in.take(len);
  auto files = in.rest();
  wire::ReplicaRequest request;
  if (request.ParseFromString(request_bytes)) {
    if (request.proof().empty()) request.set_proof(link->proof());
    // A push announces the bytes that follow, split where the input says:
    // one waiting for more would only wait for its read bound.
    request.set_index_bytes(std::min<uint64_t>(request.index_bytes(), files.size()));
    request.set_data_bytes(files.size() - request.index_bytes());
  }
  if (link->send(request)) return;
  fuzz::put_file(fuzz::scratch_dir(), "push", files);
  link->send_file(fuzz::scratch_dir() + "/push", files.size());
  // What the server answers, until it ends the connection.
  for (wire::ReplicaReply reply; !link->receive(reply);) {
  }
}

void feed_the_client(fuzz::input& in) {
  // Accepts one connection per input.
  static test::held_port listener;
  auto replies = in.rest();
  fuzz::put_file(fuzz::scratch_dir(), "replies", replies);
  std::thread fake{[&] {
    auto link = peer_link::accept(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC), token);
    wire::ReplicaRequest request;
    if (!link || link->receive(request)) return;
    link->send_file(fuzz::scratch_dir() + "/replies", replies.size());
  }};
  replica_client client{"127.0.0.1", listener.port(), token, rank, world_size};
  static auto pool = checkpoint::staging_pool::make();
  checkpoint::peer_fetch_progress progress;
  auto fetched = client.fetch(registry(), *pool, 9, 3, progress);
  fake.join();
  if (fetched && *fetched && ((*fetched)->step < 3 || (*fetched)->step > 9)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::input in{data, size};
  if (in.byte() % 2 == 0)
    feed_the_server(in);
  else
    feed_the_client(in);
  return 0;
}
