// launch_options: lifeboat-launch's command line as it is read, without
// starting anything: the worker command after the first "--", the checks
// that involve several flags, --coordinator in both address families, and the
// control port a multi-node job derives from it.
#include "apps/launch_options.hpp"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lifeboat::apps {
namespace {

constexpr int usage_exit_code = 2;

// Parses `args` (after the program name) with `env` as the environment; the
// usage error's text goes to `error` when there is one.
parsed_launch_options parse(std::vector<std::string> args, std::string* error = nullptr,
                            const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), "lifeboat-launch");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  env_lookup lookup = [&env](const char* name) -> const char* {
    auto i = env.find(name);
    return i == env.end() ? nullptr : i->second.c_str();
  };
  testing::internal::CaptureStderr();
  auto out = parse_launch_options(static_cast<int>(argv.size()), argv.data(), lookup);
  auto err = testing::internal::GetCapturedStderr();
  if (error != nullptr) *error = err;
  return out;
}

// The usage error that `args` must end with, and the text it must name.
void expect_usage_error(const std::vector<std::string>& args, const std::string& named) {
  std::string error;
  auto out = parse(args, &error);
  EXPECT_FALSE(out.options);
  EXPECT_EQ(out.exit_code, usage_exit_code);
  EXPECT_NE(error.find(named), std::string::npos) << error;
}

TEST(launch_options, a_single_node_job_has_the_defaults_of_design) {
  auto out = parse({"--nproc", "3", "--", "python3", "train.py"});
  ASSERT_TRUE(out.options);
  auto& o = *out.options;
  EXPECT_EQ(o.nproc, 3);
  EXPECT_EQ(o.world_size(), 3);
  EXPECT_FALSE(o.multi_node());
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 0);
  EXPECT_EQ(o.restart_code, 42);
  EXPECT_EQ(o.max_restarts, 0);
  EXPECT_FALSE(o.status_port_base);
  EXPECT_FALSE(o.tls);
  EXPECT_EQ(o.command, (std::vector<std::string>{"python3", "train.py"}));
}

// LIFEBOAT_RESTART_CODE in the launcher's environment is the job's restart
// code, as a worker's is; --restart-code wins; a malformed one is a usage
// error naming it. Before, the launcher set 42 for its workers over it.
TEST(launch_options, the_restart_code_comes_from_the_environment_unless_the_flag_gives_one) {
  const std::map<std::string, std::string> fifty{{"LIFEBOAT_RESTART_CODE", "50"}};
  auto out = parse({"--nproc", "1", "--", "run"}, nullptr, fifty);
  ASSERT_TRUE(out.options);
  EXPECT_EQ(out.options->restart_code, 50);
  out = parse({"--nproc", "1", "--restart-code", "60", "--", "run"}, nullptr, fifty);
  ASSERT_TRUE(out.options);
  EXPECT_EQ(out.options->restart_code, 60);
  for (auto* bad : {"abc", "1", "2", "3", "0", "256"}) {
    std::string error;
    out = parse({"--nproc", "1", "--", "run"}, &error, {{"LIFEBOAT_RESTART_CODE", bad}});
    EXPECT_FALSE(out.options) << bad;
    EXPECT_EQ(out.exit_code, usage_exit_code) << bad;
    EXPECT_NE(error.find("LIFEBOAT_RESTART_CODE expects an exit code in [4, 255] ("),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("3 a failure), got '" + std::string{bad} + "'"), std::string::npos)
        << error;
  }
}

TEST(launch_options, everything_after_the_first_double_dash_is_the_worker_command_untouched) {
  auto out = parse({"--nproc", "1", "--", "run", "--nproc", "9", "--", "--help"});
  ASSERT_TRUE(out.options);
  EXPECT_EQ(out.options->nproc, 1);
  EXPECT_EQ(out.options->command,
            (std::vector<std::string>{"run", "--nproc", "9", "--", "--help"}));
}

TEST(launch_options, status_port_base_zero_is_any_free_port_and_the_range_must_end_by_65535) {
  auto zero = parse({"--nproc", "2", "--status-port", "0", "--", "w"});
  ASSERT_TRUE(zero.options);
  EXPECT_EQ(zero.options->status_port_base, uint16_t{0});
  // Ranks 0 and 1 on 65533 and 65534, the launcher on 65535.
  auto last = parse({"--nproc", "2", "--status-port", "65533", "--", "w"});
  ASSERT_TRUE(last.options);
  EXPECT_EQ(last.options->status_port_base, uint16_t{65533});
  expect_usage_error({"--nproc", "2", "--status-port", "65534", "--", "w"},
                     "--status-port 65534 runs past port 65535");
}

TEST(launch_options,
     a_coordinator_names_the_service_and_a_multi_node_job_derives_its_control_port) {
  auto out = parse({"--nnodes", "2", "--node-rank", "1", "--coordinator", "node0.cluster:29400",
                    "--nproc", "4", "--", "w"});
  ASSERT_TRUE(out.options);
  auto& o = *out.options;
  EXPECT_EQ(o.host, "node0.cluster");
  EXPECT_EQ(o.port, 29400);
  EXPECT_EQ(o.control_port, 29402);
  EXPECT_EQ(o.world_size(), 8);
  EXPECT_TRUE(o.multi_node());
  auto given = parse({"--nnodes", "2", "--node-rank", "0", "--coordinator", "10.0.0.1:29400",
                      "--control-port", "7000", "--nproc", "1", "--", "w"});
  ASSERT_TRUE(given.options);
  EXPECT_EQ(given.options->control_port, 7000);
}

TEST(launch_options, an_ipv6_coordinator_is_given_in_brackets) {
  auto out = parse({"--nproc", "1", "--coordinator", "[::1]:5000", "--", "w"});
  ASSERT_TRUE(out.options);
  EXPECT_EQ(out.options->host, "::1");
  EXPECT_EQ(out.options->port, 5000);
  auto multi = parse({"--nnodes", "2", "--node-rank", "0", "--coordinator", "[fd00::1]:29400",
                      "--nproc", "1", "--", "w"});
  ASSERT_TRUE(multi.options);
  EXPECT_EQ(multi.options->host, "fd00::1");
  EXPECT_EQ(multi.options->control_port, 29402);
  for (auto bad : {"::1:5000", "[::1:5000", "[::1]5000", "[::1]:", "[]:5000"})
    expect_usage_error({"--nproc", "1", "--coordinator", bad, "--", "w"},
                       std::string{"--coordinator expects HOST:PORT"});
}

TEST(launch_options, a_coordinator_without_host_or_port_or_with_port_zero_is_refused) {
  for (auto bad : {":5000", "host", "host:", "host:0", "host:65536", "host:5x", "host:-1"})
    expect_usage_error({"--nproc", "1", "--coordinator", bad, "--", "w"},
                       std::string{"got '"} + bad + "'");
}

TEST(launch_options, flags_that_contradict_each_other_are_usage_errors) {
  expect_usage_error({"--", "w"}, "--nproc N is required");
  expect_usage_error({"--nproc", "1"}, "no worker command after '--'");
  expect_usage_error({"--nproc", "1", "--"}, "no worker command after '--'");
  // 1 and 2 too: a crash or a configuration error taken for the restart
  // code restarted the job for ever, counted against no --max-restarts.
  for (std::string code : {"1", "2", "3"})
    expect_usage_error({"--nproc", "1", "--restart-code", code, "--", "w"},
                       "--restart-code: expects an integer in [4, 255], got '" + code + "'");
  expect_usage_error({"--nproc", "1", "--coordinator", "h:1", "--port", "2", "--", "w"},
                     "--port and --coordinator both name the service's port");
  expect_usage_error({"--nproc", "1", "--nnodes", "2", "--node-rank", "1", "--", "w"},
                     "--nnodes 2 needs --coordinator HOST:PORT");
  expect_usage_error(
      {"--nproc", "1", "--nnodes", "2", "--node-rank", "2", "--coordinator", "h:1", "--", "w"},
      "--node-rank expects an integer in [0, 1], got '2'");
  expect_usage_error(
      {"--nproc", "1", "--nnodes", "2", "--node-rank", "0", "--coordinator", "h:65534", "--", "w"},
      "leaves no room for PORT + 2: give --control-port");
  expect_usage_error({"--nproc", "1", "--nnodes", "2", "--node-rank", "0", "--coordinator",
                      "h:5000", "--control-port", "5000", "--", "w"},
                     "--control-port must differ from the coordinator's port");
}

TEST(launch_options, help_ends_at_once_with_zero) {
  testing::internal::CaptureStdout();
  auto out = parse({"--help"});
  auto help = testing::internal::GetCapturedStdout();
  EXPECT_FALSE(out.options);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_NE(help.find("usage: lifeboat-launch --nproc N"), std::string::npos) << help;
}

}  // namespace
}  // namespace lifeboat::apps
