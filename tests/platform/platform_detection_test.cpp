#include "platform/platform_detection.hpp"

#include <csignal>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/platform/fake_env.hpp"
#include "tests/platform/mock_server.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
using env_table = std::map<std::string, std::string>;
using testing::mock_server;
using testing::table_env;

TEST(platform_detection, this_machine_is_generic_within_a_second) {
  env_table env;  // no overrides: the real link-local metadata address is probed
  auto start = std::chrono::steady_clock::now();
  auto found = detect_platform(table_env(env));
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(found) << describe(found.error());
  EXPECT_EQ(found->name, "generic");
  EXPECT_EQ(found->restart_exit_code, 42);
  EXPECT_EQ(found->grace_period, 0s);
  EXPECT_EQ(found->signals, std::vector<int>{SIGTERM});
  EXPECT_TRUE(found->notice_sources.empty());
  EXPECT_LT(elapsed, 1500ms);
}

TEST(platform_detection, hanging_metadata_servers_cost_at_most_the_budget) {
  mock_server mock{{"--delay-ms", "10000"}};
  env_table env{{"GCE_METADATA_HOST", mock.address()},
                {"LIFEBOAT_AWS_METADATA", mock.address()},
                {"LIFEBOAT_AZURE_METADATA", mock.address()}};
  auto start = std::chrono::steady_clock::now();
  auto found = detect_platform(table_env(env));
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(found) << describe(found.error());
  EXPECT_EQ(found->name, "generic");
  EXPECT_GE(elapsed, kDetectionBudget);
  EXPECT_LT(elapsed, 1500ms);
}

TEST(platform_detection, platform_variable_skips_probes) {
  env_table env{{"LIFEBOAT_PLATFORM", "aws"}, {"LIFEBOAT_AWS_METADATA", "127.0.0.1:1"}};
  auto start = std::chrono::steady_clock::now();
  auto found = detect_platform(table_env(env));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 200ms);
  ASSERT_TRUE(found) << describe(found.error());
  EXPECT_EQ(found->name, "aws");
  EXPECT_EQ(found->notice_sources, std::vector<std::string>{"aws"});
  EXPECT_EQ(found->grace_period, 120s);
}

TEST(platform_detection, unknown_platform_variable_is_invalid_config) {
  env_table env{{"LIFEBOAT_PLATFORM", "borg"}};
  auto found = detect_platform(table_env(env));
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error(), make_error(errc::invalid_config));
  EXPECT_NE(describe(found.error()).find("LIFEBOAT_PLATFORM"), std::string::npos);
}

TEST(platform_detection, kubernetes_grace_comes_from_the_environment) {
  env_table env{{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}};
  auto found = detect_platform(table_env(env));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "kubernetes");
  EXPECT_EQ(found->grace_period, 30s);
  env["LIFEBOAT_GRACE_PERIOD_S"] = "45";
  EXPECT_EQ(detect_platform(table_env(env))->grace_period, 45s);
  env["LIFEBOAT_GRACE_PERIOD_S"] = "-1";
  EXPECT_FALSE(detect_platform(table_env(env)));
}

// What lifeboat-launch gives its workers beats the platform's default
// (GCE's 143), so the code they exit with is the one it restarts them on.
TEST(platform_detection, restart_code_variable_overrides_the_platform_default) {
  env_table env;
  EXPECT_EQ(platform_defaults_for("gce", table_env(env))->restart_exit_code, 143);
  env[kRestartCodeVariable] = "7";
  EXPECT_EQ(platform_defaults_for("gce", table_env(env))->restart_exit_code, 7);
  EXPECT_EQ(platform_defaults_for("generic", table_env(env))->restart_exit_code, 7);
  for (const char* bad : {"1", "2", "3", "0", "256", "-42", "42x", "forty-two"}) {
    env[kRestartCodeVariable] = bad;
    auto found = platform_defaults_for("generic", table_env(env));
    ASSERT_FALSE(found) << bad;
    EXPECT_EQ(found.error(), make_error(errc::invalid_config)) << bad;
    EXPECT_EQ(describe(found.error()), "invalid_config: " + restart_code_variable_refusal(bad))
        << bad;
    EXPECT_NE(describe(found.error())
                  .find(std::string{kRestartCodeVariable} + " expects an exit code in [4, 255] ("),
              std::string::npos)
        << describe(found.error());
  }
}

TEST(platform_detection, slurm_watches_sigterm_and_sigusr1) {
  env_table env{{"SLURM_JOB_ID", "7"}};
  auto found = detect_platform(table_env(env));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "slurm");
  EXPECT_EQ(found->signals, (std::vector<int>{SIGTERM, SIGUSR1}));
}

// What a launcher forwards as notices: the workers' signals as far as the
// environment tells, never probing a metadata server (no cloud adds one).
TEST(platform_detection, default_notice_signals_come_from_the_environment_alone) {
  using signals = std::vector<int>;
  EXPECT_EQ(default_notice_signals(table_env(env_table{})), signals{SIGTERM});
  EXPECT_EQ(default_notice_signals(table_env(env_table{{"SLURM_JOB_ID", "7"}})),
            (signals{SIGTERM, SIGUSR1}));
  EXPECT_EQ(default_notice_signals(table_env(env_table{{"LIFEBOAT_PLATFORM", "slurm"}})),
            (signals{SIGTERM, SIGUSR1}));
  // The platform named outright wins over SLURM's variables, as in detection.
  EXPECT_EQ(default_notice_signals(
                table_env(env_table{{"LIFEBOAT_PLATFORM", "generic"}, {"SLURM_JOB_ID", "7"}})),
            signals{SIGTERM});
  EXPECT_EQ(default_notice_signals(table_env(env_table{{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}})),
            signals{SIGTERM});
  EXPECT_EQ(default_notice_signals(table_env(env_table{{"LIFEBOAT_PLATFORM", "mainframe"}})),
            signals{SIGTERM});
}

// What a launcher or a coordinator takes as the job's notice, and which of
// SIGUSR1 and SIGUSR2 it ignores: SIGHUP is a notice unless it is ignored
// (nohup), SIGUSR1 under SLURM.
TEST(platform_detection, job_signals_add_the_hangup_and_ignore_the_user_signals_that_are_none) {
  using signals = std::vector<int>;
  auto previous = std::signal(SIGHUP, SIG_DFL);
  auto generic = job_signals_for(table_env(env_table{}));
  auto slurm = job_signals_for(table_env(env_table{{"SLURM_JOB_ID", "7"}}));
  std::signal(SIGHUP, SIG_IGN);
  auto under_nohup = job_signals_for(table_env(env_table{}));
  std::signal(SIGHUP, previous);
  EXPECT_EQ(generic.notices, (signals{SIGTERM, SIGHUP}));
  EXPECT_EQ(generic.ignored, (signals{SIGUSR1, SIGUSR2}));
  EXPECT_EQ(slurm.notices, (signals{SIGTERM, SIGUSR1, SIGHUP}));
  EXPECT_EQ(slurm.ignored, signals{SIGUSR2});
  EXPECT_TRUE(slurm.is_notice(SIGUSR1));
  EXPECT_FALSE(generic.is_notice(SIGUSR1));
  EXPECT_TRUE(generic.is_ignored(SIGUSR1));
  EXPECT_EQ(under_nohup.notices, signals{SIGTERM});
  EXPECT_EQ(ignored_signal_message(SIGUSR2),
            "SIGUSR2 received: no notice to this job's workers (SIGUSR1 is one under SLURM); "
            "ignored");
}

TEST(platform_detection, gce_metadata_server_means_gce) {
  mock_server mock;
  env_table env{{"GCE_METADATA_HOST", mock.address()},
                {"LIFEBOAT_AWS_METADATA", mock.address()},
                {"LIFEBOAT_AZURE_METADATA", mock.address()}};
  auto found = detect_platform(table_env(env));
  ASSERT_TRUE(found) << describe(found.error());
  EXPECT_EQ(found->name, "gce");
  EXPECT_EQ(found->notice_sources, std::vector<std::string>{"gce"});
  EXPECT_EQ(found->restart_exit_code, 143);
}

TEST(platform_detection, aws_and_azure_are_found_by_their_probes) {
  mock_server mock;
  mock.control("gce/flavor", "0");  // the GCE probe now fails at once
  env_table env{{"GCE_METADATA_HOST", mock.address()},
                {"LIFEBOAT_AWS_METADATA", mock.address()},
                {"LIFEBOAT_AZURE_METADATA", mock.address()}};
  auto found = detect_platform(table_env(env));
  ASSERT_TRUE(found) << describe(found.error());
  EXPECT_EQ(found->name, "aws");
  env.erase("LIFEBOAT_AWS_METADATA");  // back to 169.254.169.254, which fails here
  found = detect_platform(table_env(env));
  ASSERT_TRUE(found) << describe(found.error());
  EXPECT_EQ(found->name, "azure");
  EXPECT_EQ(found->grace_period, 30s);
}

TEST(platform_detection, defaults_table) {
  env_table env;
  auto gce = platform_defaults_for("gce", table_env(env));
  ASSERT_TRUE(gce);
  EXPECT_EQ(gce->restart_exit_code, 143);
  EXPECT_FALSE(platform_defaults_for("nowhere", table_env(env)));
}

}  // namespace
}  // namespace lifeboat
