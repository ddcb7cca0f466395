// The coordination service's bounds on what a peer that never joins can cost,
// over real sockets: a connection that trickles its join is closed within the
// join bound like one that sends nothing, and a frame over the size limit
// closes its connection with a log line naming the limit.

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/coordination_frame.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/apps/status_client.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

using bounds_test = service_fixture;
using std::chrono::milliseconds;

// Long enough for two bytes at one a second, short enough for a quick test.
constexpr milliseconds trickle_join_bound{2500};
constexpr milliseconds trickle_interval{1000};
// How late after the bound the close may come on a busy machine.
constexpr milliseconds close_margin{1500};

TEST_F(bounds_test, a_connection_that_sends_one_byte_a_second_is_closed_within_the_join_bound) {
  auto [bounded, bounded_port] = service_with_join_bound(sys, trickle_join_bound);
  ASSERT_NE(bounded_port, 0);
  raw_socket s{bounded_port};
  auto start = std::chrono::steady_clock::now();
  auto hello = s.read_frame();
  ASSERT_TRUE(hello && hello->has_hello());
  // A valid join, sent so slowly that it never completes within the bound.
  wire::Envelope env;
  auto* j = env.mutable_join();
  j->set_protocol_version(coordination_protocol_version);
  j->set_world_size(fixture_world_size);
  j->set_mac(join_mac(fixture_token, hello->hello().nonce(), 0, fixture_world_size, 0));
  j->set_nonce(make_join_nonce());
  auto bytes = encode_frame(env);
  size_t sent = 0;
  bool closed = false;
  // Each wait for the close is also the pause between two bytes.
  while (!closed && sent < bytes.size()) {
    ASSERT_TRUE(s.write_all(bytes.data() + sent, 1));
    ++sent;
    closed = s.closed_by_peer(trickle_interval);
    ASSERT_LT(std::chrono::steady_clock::now() - start, trickle_join_bound + close_margin);
  }
  EXPECT_TRUE(closed);
  EXPECT_GE(sent, 2u);
  EXPECT_LT(sent, bytes.size());
  EXPECT_GE(std::chrono::steady_clock::now() - start, trickle_join_bound - milliseconds(50));
  caf::anon_send_exit(bounded, caf::exit_reason::user_shutdown);
}

TEST(coordination_service_bounds, an_oversized_frame_closes_the_connection_with_a_log_line) {
  constexpr std::chrono::seconds deadline{20};
  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                             "--world-size", "2", "--token", "t"},
                            true};
  uint16_t port = 0;
  while (auto line = coordinator.read_line(deadline))
    if (line->find("lifeboat-coordinator: listening on 127.0.0.1:") != std::string::npos) {
      port = listening_port(*line);
      break;
    }
  ASSERT_NE(port, 0);
  raw_socket s{port};
  ASSERT_TRUE(s.read_frame()->has_hello());
  auto declared = max_frame_bytes + 1;
  const char header[frame_header_bytes] = {
      static_cast<char>(declared >> 24), static_cast<char>((declared >> 16) & 0xFF),
      static_cast<char>((declared >> 8) & 0xFF), static_cast<char>(declared & 0xFF)};
  ASSERT_TRUE(s.write_all(header, sizeof(header)));
  EXPECT_TRUE(s.closed_by_peer());
  const auto expected =
      "frame larger than the limit of " + std::to_string(max_frame_bytes) + " bytes";
  bool logged = false;
  while (!logged)
    if (auto line = coordinator.read_line(deadline))
      logged = line->find(expected) != std::string::npos;
    else
      break;
  EXPECT_TRUE(logged) << "no line with '" << expected << "'";
  coordinator.kill(SIGTERM);
  EXPECT_TRUE(coordinator.wait_exit(deadline));
}

}  // namespace
