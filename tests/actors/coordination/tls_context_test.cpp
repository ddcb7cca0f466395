#include "actors/coordination/tls_context.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"

using namespace lifeboat;

namespace {

TEST(tls_context_test, a_pre_shared_key_needs_a_token) {
  tls_config cfg;
  cfg.enabled = true;
  auto ctx = tls_context::make(cfg, "", tls_role::server);
  ASSERT_FALSE(ctx);
  EXPECT_EQ(ctx.error(), make_error(errc::invalid_config));
}

TEST(tls_context_test, the_key_depends_on_the_token_only) {
  tls_config cfg;
  cfg.enabled = true;
  auto a = tls_context::make(cfg, "token-a", tls_role::server);
  auto a_again = tls_context::make(cfg, "token-a", tls_role::client);
  auto b = tls_context::make(cfg, "token-b", tls_role::client);
  ASSERT_TRUE(a && a_again && b);
  EXPECT_EQ((*a)->psk().size(), 32u);
  EXPECT_EQ((*a)->psk(), (*a_again)->psk());
  EXPECT_NE((*a)->psk(), (*b)->psk());
  EXPECT_EQ((*a)->psk().find("token-a"), std::string::npos);
}

TEST(tls_context_test, a_missing_certificate_file_is_a_configuration_error_naming_it) {
  tls_config cfg;
  cfg.enabled = true;
  cfg.cert_file = "/nonexistent/cert.pem";
  cfg.key_file = "/nonexistent/key.pem";
  cfg.ca_file = "/nonexistent/ca.pem";
  auto ctx = tls_context::make(cfg, "token", tls_role::client);
  ASSERT_FALSE(ctx);
  EXPECT_EQ(ctx.error(), make_error(errc::invalid_config));
  EXPECT_NE(describe(ctx.error()).find("/nonexistent/cert.pem"), std::string::npos);
}

TEST(tls_context_test, shared_makes_one_context_per_configuration_token_and_role) {
  tls_config cfg;
  cfg.enabled = true;
  auto first = tls_context::shared(cfg, "shared-token-a", tls_role::client);
  auto again = tls_context::shared(cfg, "shared-token-a", tls_role::client);
  auto server = tls_context::shared(cfg, "shared-token-a", tls_role::server);
  auto other_token = tls_context::shared(cfg, "shared-token-b", tls_role::client);
  ASSERT_TRUE(first && again && server && other_token);
  EXPECT_EQ(first->get(), again->get());
  EXPECT_NE(first->get(), server->get());
  EXPECT_EQ((*server)->role(), tls_role::server);
  EXPECT_NE(first->get(), other_token->get());
  EXPECT_NE((*first)->psk(), (*other_token)->psk());
}

TEST(tls_context_test, shared_keeps_no_failure) {
  tls_config cfg;
  cfg.enabled = true;
  ASSERT_FALSE(tls_context::shared(cfg, "", tls_role::client));
  auto failed_again = tls_context::shared(cfg, "", tls_role::client);
  ASSERT_FALSE(failed_again);
  EXPECT_EQ(failed_again.error(), make_error(errc::invalid_config));
}

}  // namespace
