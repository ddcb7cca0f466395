// resolve_worker_settings: the termination_config, a table of environment
// variables and a fixed platform in, the settings or the first problem out;
// no process, socket or metadata server is involved.

#include "runtime/worker_settings.hpp"

#include <algorithm>
#include <csignal>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "platform/platform_detection.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

constexpr const char* some_dir = "/checkpoints";

class worker_settings_test : public testing::Test {
 protected:
  worker_settings_test() {
    platform_.name = "test";
    platform_.restart_exit_code = 42;
    platform_.grace_period = 30s;
    platform_.signals = {SIGTERM};
  }

  caf::expected<worker_settings> resolve(const std::string& dir = some_dir) {
    env_lookup env = [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
    return resolve_worker_settings(config_, dir, env, [this](const cluster_spec& cluster) {
      seen_rank_ = cluster.rank;
      return caf::expected<platform_defaults>{platform_};
    });
  }

  // The error of a refused configuration, as the runtime reports it.
  std::string refusal() {
    auto settings = resolve();
    EXPECT_FALSE(settings) << "accepted";
    return settings ? std::string{} : describe(settings.error());
  }

  termination_config config_;
  std::map<std::string, std::string> env_;
  platform_defaults platform_;
  int seen_rank_ = -1;
};

TEST_F(worker_settings_test, takes_the_platform_defaults_where_the_config_leaves_them_unset) {
  platform_.notice_sources = {"file:/tmp/notice"};
  auto settings = resolve();
  ASSERT_TRUE(settings) << describe(settings.error());
  EXPECT_EQ(settings->platform_name, "test");
  EXPECT_EQ(settings->restart_code, 42);
  EXPECT_EQ(settings->grace_period, 30000ms);
  EXPECT_EQ(settings->notice_sources, std::vector<std::string>{"file:/tmp/notice"});
  EXPECT_EQ(settings->cluster.world_size, 1);
  EXPECT_FALSE(settings->status_port);
  EXPECT_EQ(settings->status_host, "127.0.0.1");
}

TEST_F(worker_settings_test, the_config_overrides_the_platform) {
  config_.restart_code = 7;
  config_.grace_period = 1500ms;
  config_.notice_sources = std::vector<std::string>{};
  platform_.notice_sources = {"file:/tmp/notice"};
  auto settings = resolve();
  ASSERT_TRUE(settings) << describe(settings.error());
  EXPECT_EQ(settings->restart_code, 7);
  EXPECT_EQ(settings->grace_period, 1500ms);
  EXPECT_TRUE(settings->notice_sources.empty());
}

// SIGHUP's action in this process while it lives (the test's own runner may
// ignore it, as nohup does), then the one before.
class hangup_action {
 public:
  explicit hangup_action(void (*handler)(int)) { previous_ = std::signal(SIGHUP, handler); }
  ~hangup_action() { std::signal(SIGHUP, previous_); }

 private:
  void (*previous_)(int) = SIG_DFL;
};

TEST_F(worker_settings_test, signals_of_the_platform_and_the_config_are_merged_once_each) {
  hangup_action hangup{SIG_DFL};
  platform_.signals = {SIGUSR1, SIGTERM};
  config_.signals = {"SIGTERM", "SIGUSR2", "SIGUSR1", "SIGHUP"};
  auto settings = resolve();
  ASSERT_TRUE(settings) << describe(settings.error());
  std::vector<int> expected{SIGTERM, SIGUSR1, SIGUSR2, SIGHUP};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(settings->signals, expected);
}

// A terminal that hangs up (an SSH session lost) signals SIGHUP: a notice,
// unless the job was started to outlive its terminal (nohup ignores it).
TEST_F(worker_settings_test, sighup_is_a_notice_unless_it_is_ignored) {
  {
    hangup_action hangup{SIG_DFL};
    auto settings = resolve();
    ASSERT_TRUE(settings) << describe(settings.error());
    EXPECT_EQ(settings->signals, (std::vector<int>{SIGHUP, SIGTERM}));
  }
  hangup_action nohup{SIG_IGN};
  auto settings = resolve();
  ASSERT_TRUE(settings) << describe(settings.error());
  EXPECT_EQ(settings->signals, std::vector<int>{SIGTERM});
}

TEST_F(worker_settings_test, the_platform_is_looked_up_for_the_discovered_rank) {
  env_ = {{"LIFEBOAT_RANK", "2"},
          {"LIFEBOAT_WORLD_SIZE", "4"},
          {"LIFEBOAT_COORDINATOR", "127.0.0.1:5000"}};
  auto settings = resolve();
  ASSERT_TRUE(settings) << describe(settings.error());
  EXPECT_EQ(seen_rank_, 2);
  EXPECT_EQ(settings->cluster.rank, 2);
  EXPECT_EQ(settings->cluster.world_size, 4);
}

TEST_F(worker_settings_test, an_empty_checkpoint_dir_needs_a_save_fn) {
  auto refused = resolve("");
  ASSERT_FALSE(refused);
  EXPECT_NE(describe(refused.error()).find("checkpoint_dir is empty"), std::string::npos);
  config_.save_fn = [](int64_t, const std::string&) {};
  EXPECT_TRUE(resolve(""));
}

TEST_F(worker_settings_test, a_bad_config_is_refused_before_the_environment_is_read) {
  config_.grace_period = -5ms;
  env_ = {{"LIFEBOAT_RANK", "x"}};
  EXPECT_NE(refusal().find("grace_period must be >= 0"), std::string::npos);
  EXPECT_EQ(seen_rank_, -1);
}

TEST_F(worker_settings_test, a_malformed_cluster_variable_is_refused) {
  env_ = {{"LIFEBOAT_RANK", "one"}, {"LIFEBOAT_WORLD_SIZE", "2"}};
  EXPECT_NE(refusal().find("LIFEBOAT_RANK"), std::string::npos);
}

TEST_F(worker_settings_test, the_platforms_error_is_passed_on) {
  auto settings = resolve_worker_settings(
      config_, some_dir, [](const char*) { return nullptr; },
      [](const cluster_spec&) -> caf::expected<platform_defaults> {
        return make_error(errc::invalid_config, "no such platform");
      });
  ASSERT_FALSE(settings);
  EXPECT_NE(describe(settings.error()).find("no such platform"), std::string::npos);
}

TEST_F(worker_settings_test, the_status_port_is_a_number_up_to_65535) {
  env_["LIFEBOAT_STATUS_PORT"] = "0";
  auto settings = resolve();
  ASSERT_TRUE(settings) << describe(settings.error());
  EXPECT_EQ(settings->status_port, std::optional<uint16_t>{0});
  env_["LIFEBOAT_STATUS_PORT"] = "65536";
  EXPECT_NE(refusal().find("LIFEBOAT_STATUS_PORT"), std::string::npos);
  env_["LIFEBOAT_STATUS_PORT"] = "80x";
  EXPECT_NE(refusal().find("LIFEBOAT_STATUS_PORT"), std::string::npos);
}

TEST_F(worker_settings_test, the_status_host_is_a_numeric_address) {
  env_["LIFEBOAT_STATUS_HOST"] = "::1";
  auto settings = resolve();
  ASSERT_TRUE(settings) << describe(settings.error());
  EXPECT_EQ(settings->status_host, "::1");
  env_["LIFEBOAT_STATUS_HOST"] = "localhost:80";
  EXPECT_NE(refusal().find("LIFEBOAT_STATUS_HOST='localhost:80'"), std::string::npos);
}

TEST_F(worker_settings_test, the_log_level_is_one_of_four_names) {
  for (auto level : {"debug", "info", "warning", "error", ""}) {
    env_["LIFEBOAT_LOG_LEVEL"] = level;
    auto settings = resolve();
    EXPECT_TRUE(settings) << level << ": " << describe(settings.error());
  }
  env_["LIFEBOAT_LOG_LEVEL"] = "warn";
  EXPECT_NE(refusal().find("LIFEBOAT_LOG_LEVEL='warn': expected debug, info, warning or error"),
            std::string::npos);
}

// An empty variable is an unset one, here as for every variable: the default
// memory tier.
TEST_F(worker_settings_test, the_local_dir_is_taken_as_given_and_empty_is_unset) {
  env_["LIFEBOAT_LOCAL_DIR"] = "/run/lifeboat";
  auto given = resolve();
  ASSERT_TRUE(given) << describe(given.error());
  EXPECT_EQ(given->local_dir, "/run/lifeboat");
  env_["LIFEBOAT_LOCAL_DIR"] = "";
  auto empty = resolve();
  ASSERT_TRUE(empty) << describe(empty.error());
  EXPECT_EQ(empty->local_dir, std::nullopt);
}

TEST_F(worker_settings_test,
       the_hang_timeout_comes_from_the_config_the_environment_or_is_adaptive) {
  auto adaptive = resolve();
  ASSERT_TRUE(adaptive) << describe(adaptive.error());
  EXPECT_EQ(adaptive->hang_timeout_ms, -1);
  env_["LIFEBOAT_HANG_TIMEOUT"] = "2.5";
  auto from_env = resolve();
  ASSERT_TRUE(from_env) << describe(from_env.error());
  EXPECT_EQ(from_env->hang_timeout_ms, 2500);
  config_.hang_timeout = 0ms;
  auto from_config = resolve();
  ASSERT_TRUE(from_config) << describe(from_config.error());
  EXPECT_EQ(from_config->hang_timeout_ms, 0);
  config_.hang_timeout.reset();
  env_["LIFEBOAT_HANG_TIMEOUT"] = "soon";
  EXPECT_NE(refusal().find("LIFEBOAT_HANG_TIMEOUT"), std::string::npos);
}

TEST_F(worker_settings_test, an_unknown_notice_source_is_refused) {
  config_.notice_sources = std::vector<std::string>{"carrier-pigeon"};
  EXPECT_NE(refusal().find("carrier-pigeon"), std::string::npos);
}

TEST_F(worker_settings_test, tls_is_on_beyond_loopback_by_default_and_off_for_a_worker_alone) {
  env_ = {{"LIFEBOAT_RANK", "1"},
          {"LIFEBOAT_WORLD_SIZE", "2"},
          {"LIFEBOAT_COORDINATOR", "10.0.0.5:4000"},
          {"LIFEBOAT_CLUSTER_TOKEN", "token"}};
  auto across_hosts = resolve();
  ASSERT_TRUE(across_hosts) << describe(across_hosts.error());
  EXPECT_TRUE(across_hosts->tls.enabled);
  env_["LIFEBOAT_COORDINATOR"] = "127.0.0.1:4000";
  auto on_one_host = resolve();
  ASSERT_TRUE(on_one_host) << describe(on_one_host.error());
  EXPECT_FALSE(on_one_host->tls.enabled);
  env_["LIFEBOAT_TLS"] = "1";
  auto asked_for = resolve();
  ASSERT_TRUE(asked_for) << describe(asked_for.error());
  EXPECT_TRUE(asked_for->tls.enabled);
  env_ = {{"LIFEBOAT_TLS", "1"}};
  auto alone = resolve();
  ASSERT_TRUE(alone) << describe(alone.error());
  EXPECT_FALSE(alone->tls.enabled);
}

// A worker alone runs without TLS, yet a malformed setting is a mistake all
// the same: refused before anything is written, as in a cluster.
TEST_F(worker_settings_test, a_malformed_tls_setting_is_refused_even_for_a_worker_alone) {
  env_ = {{"LIFEBOAT_TLS", "maybe"}};
  EXPECT_NE(refusal().find("LIFEBOAT_TLS=maybe"), std::string::npos);
  env_ = {{"LIFEBOAT_TLS_CERT", "/etc/lifeboat/cert.pem"}};
  EXPECT_NE(refusal().find("set all three or none"), std::string::npos);
  env_ = {{"LIFEBOAT_RANK", "1"},
          {"LIFEBOAT_WORLD_SIZE", "2"},
          {"LIFEBOAT_COORDINATOR", "127.0.0.1:4000"},
          {"LIFEBOAT_TLS", "yes please"}};
  EXPECT_NE(refusal().find("LIFEBOAT_TLS=yes please"), std::string::npos);
}

}  // namespace
}  // namespace lifeboat
