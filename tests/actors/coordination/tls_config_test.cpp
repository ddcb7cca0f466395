#include "actors/coordination/tls_config.hpp"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "messages/errors.hpp"

using namespace lifeboat;

namespace {

using env_map = std::map<std::string, std::string>;

caf::expected<tls_config> read(const env_map& env, bool spans_hosts) {
  return read_tls_config(
      [&env](const char* name) -> const char* {
        auto i = env.find(name);
        return i == env.end() ? nullptr : i->second.c_str();
      },
      spans_hosts);
}

TEST(tls_config_test, tls_is_on_by_default_exactly_when_the_job_spans_hosts) {
  auto one_host = read({}, false);
  auto across = read({}, true);
  ASSERT_TRUE(one_host && across);
  EXPECT_FALSE(one_host->enabled);
  EXPECT_TRUE(across->enabled);
  EXPECT_FALSE(across->uses_certificates());
}

TEST(tls_config_test, the_variable_overrides_the_default_either_way) {
  auto on = read({{tls_env, "on"}}, false);
  auto off = read({{tls_env, "0"}}, true);
  ASSERT_TRUE(on && off);
  EXPECT_TRUE(on->enabled);
  EXPECT_FALSE(off->enabled);
}

TEST(tls_config_test, a_value_that_is_no_boolean_is_a_configuration_error_naming_the_variable) {
  auto cfg = read({{tls_env, "maybe"}}, false);
  ASSERT_FALSE(cfg);
  EXPECT_EQ(cfg.error(), make_error(errc::invalid_config));
  EXPECT_NE(describe(cfg.error()).find(tls_env), std::string::npos);
}

TEST(tls_config_test, certificate_files_come_all_three_or_none) {
  auto all = read({{tls_cert_env, "c.pem"}, {tls_key_env, "k.pem"}, {tls_ca_env, "ca.pem"}}, true);
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->uses_certificates());
  EXPECT_EQ(all->ca_file, "ca.pem");
  auto part = read({{tls_cert_env, "c.pem"}}, true);
  ASSERT_FALSE(part);
  EXPECT_NE(describe(part.error()).find(tls_key_env), std::string::npos);
}

TEST(tls_config_test, loopback_names_and_addresses_keep_a_job_on_one_host) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("10.0.0.7"));
  EXPECT_FALSE(is_loopback_host("node-0"));
}

}  // namespace
