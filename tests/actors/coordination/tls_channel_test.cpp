#include "actors/coordination/tls_channel.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/actors/coordination/tls_certificates.hpp"
#include "tests/support/tls_exchange.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

const std::string token = "tls-channel-test-token";
const std::string loopback = "127.0.0.1";

struct channel_pair {
  tls_channel client;
  tls_channel server;
};

// A client and a server channel of the given configurations.
caf::expected<channel_pair> make_pair(const tls_config& client_cfg, const std::string& client_token,
                                      const tls_config& server_cfg, const std::string& server_token,
                                      const std::string& server_name = loopback) {
  auto client_ctx = tls_context::make(client_cfg, client_token, tls_role::client);
  if (!client_ctx) return client_ctx.error();
  auto server_ctx = tls_context::make(server_cfg, server_token, tls_role::server);
  if (!server_ctx) return server_ctx.error();
  auto client = tls_channel::make(*client_ctx, server_name);
  if (!client) return client.error();
  auto server = tls_channel::make(*server_ctx);
  if (!server) return server.error();
  return channel_pair{std::move(*client), std::move(*server)};
}

caf::error pump(channel_pair& p) { return exchange(p.client, p.server); }

tls_config psk_config() {
  tls_config cfg;
  cfg.enabled = true;
  return cfg;
}

void expect_both_ways(channel_pair& p) {
  const std::string ping = "ping from the worker";
  const std::string pong = "pong from the service";
  p.client.write(ping.data(), ping.size());
  p.server.write(pong.data(), pong.size());
  ASSERT_FALSE(pump(p));
  EXPECT_EQ(p.server.take_plaintext(), ping);
  EXPECT_EQ(p.client.take_plaintext(), pong);
}

TEST(tls_channel_test, two_channels_with_the_same_token_agree_and_carry_plaintext_both_ways) {
  auto p = make_pair(psk_config(), token, psk_config(), token);
  ASSERT_TRUE(p) << describe(p.error());
  // What the service writes before the handshake ends (its greeting) waits.
  const std::string early = "greeting";
  p->server.write(early.data(), early.size());
  ASSERT_FALSE(pump(*p));
  EXPECT_TRUE(p->client.established());
  EXPECT_TRUE(p->server.established());
  EXPECT_EQ(p->client.take_plaintext(), early);
  expect_both_ways(*p);
}

// What the service writes once the ClientHello came travels with its first
// flight (0.5-RTT data): the worker reads the greeting before the server has
// the worker's Finished, a round trip sooner than after the handshake.
void expect_greeting_in_first_flight(channel_pair& p) {
  const std::string greeting = "hello with the service's nonce";
  p.server.write(greeting.data(), greeting.size());
  auto hello = p.client.take_ciphertext();
  ASSERT_FALSE(p.server.feed(hello.data(), hello.size()));
  auto flight = p.server.take_ciphertext();
  ASSERT_EQ(flight.find(greeting), std::string::npos) << "the greeting went out in clear text";
  ASSERT_FALSE(p.client.feed(flight.data(), flight.size()));
  EXPECT_TRUE(p.client.established());
  EXPECT_FALSE(p.server.established());
  EXPECT_EQ(p.client.take_plaintext(), greeting);
  ASSERT_FALSE(pump(p));
  EXPECT_TRUE(p.server.established());
  expect_both_ways(p);
}

TEST(tls_channel_test, the_greeting_goes_with_the_first_flight_of_a_psk_handshake) {
  auto p = make_pair(psk_config(), token, psk_config(), token);
  ASSERT_TRUE(p) << describe(p.error());
  expect_greeting_in_first_flight(*p);
}

TEST(tls_channel_test, the_greeting_goes_with_the_first_flight_of_a_certificate_handshake) {
  tls_certificates certs;
  ASSERT_EQ(certs.error(), "");
  auto p = make_pair(certs.config(), "", certs.config(), "");
  ASSERT_TRUE(p) << describe(p.error());
  expect_greeting_in_first_flight(*p);
}

TEST(tls_channel_test, a_peer_with_another_token_fails_the_handshake) {
  auto p = make_pair(psk_config(), "another-token", psk_config(), token);
  ASSERT_TRUE(p) << describe(p.error());
  auto err = pump(*p);
  EXPECT_EQ(err, make_error(errc::refused)) << describe(err);
  EXPECT_FALSE(p->server.established());
}

TEST(tls_channel_test, a_flipped_byte_after_the_handshake_is_rejected_and_never_delivered) {
  auto p = make_pair(psk_config(), token, psk_config(), token);
  ASSERT_TRUE(p) << describe(p.error());
  ASSERT_FALSE(pump(*p));
  const std::string payload = "lifeboat/agreed_step=4242";
  p->client.write(payload.data(), payload.size());
  auto bytes = p->client.take_ciphertext();
  ASSERT_EQ(bytes.find(payload), std::string::npos) << "the payload went out in clear text";
  // Every position of the record is covered by its tag: try each. A flip in
  // the 5-byte record header may only announce a longer record, which then
  // waits for more bytes: never delivered either.
  constexpr size_t record_header_bytes = 5;
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto q = make_pair(psk_config(), token, psk_config(), token);
    ASSERT_TRUE(q);
    ASSERT_FALSE(pump(*q));
    q->client.write(payload.data(), payload.size());
    auto forged = q->client.take_ciphertext();
    forged[i] = static_cast<char>(forged[i] ^ 0x01);
    auto err = q->server.feed(forged.data(), forged.size());
    if (i >= record_header_bytes) {
      EXPECT_TRUE(err) << "byte " << i << " flipped was accepted";
    }
    EXPECT_EQ(q->server.take_plaintext(), "") << "byte " << i;
  }
}

TEST(tls_channel_test, certificates_of_the_job_authority_naming_the_host_are_accepted) {
  tls_certificates certs;
  ASSERT_EQ(certs.error(), "");
  auto p = make_pair(certs.config(), "", certs.config(), "");
  ASSERT_TRUE(p) << describe(p.error());
  ASSERT_FALSE(pump(*p));
  expect_both_ways(*p);
}

TEST(tls_channel_test, a_certificate_of_another_authority_is_refused) {
  tls_certificates certs;
  ASSERT_EQ(certs.error(), "");
  auto p = make_pair(certs.config_of_other_authority(), "", certs.config(), "");
  ASSERT_TRUE(p) << describe(p.error());
  auto err = pump(*p);
  EXPECT_EQ(err, make_error(errc::refused)) << describe(err);
}

TEST(tls_channel_test, a_service_certificate_for_another_host_is_refused) {
  tls_certificates certs{false};
  ASSERT_EQ(certs.error(), "");
  auto p = make_pair(certs.config(), "", certs.config(), "");
  ASSERT_TRUE(p) << describe(p.error());
  auto err = pump(*p);
  EXPECT_EQ(err, make_error(errc::refused)) << describe(err);
  EXPECT_NE(describe(err).find("certificate"), std::string::npos) << describe(err);
}

}  // namespace
