// Bad configuration is refused at construction with a clear config_error,
// before anything is written: the checkpoint directory is never created.

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"
#include "tests/support/loopback_port.hpp"

namespace lifeboat::test {
namespace {

constexpr int local = 0;

class config_test : public testing::Test {
 protected:
  // Runs one worker with `args` and `env`; expects the refusal and returns
  // the config_error text.
  std::string refused(const std::string& checkpoint_dir, std::vector<std::string> args,
                      std::vector<std::string> env = {}, std::vector<std::string> launcher = {}) {
    args.insert(args.begin(), {"--steps", "10"});
    auto opts = make_options(local, checkpoint_dir, args);
    opts.extra_env = std::move(env);
    opts.launcher = std::move(launcher);
    worker_cluster c{opts};
    auto codes = c.finish();
    EXPECT_EQ(codes, std::vector<int>{config_exit_code}) << c.transcript();
    auto errors = c.lines_containing(0, "config_error=");
    EXPECT_EQ(errors.size(), 1u) << c.transcript();
    EXPECT_TRUE(c.values(0, "step").empty()) << c.transcript();
    return errors.empty() ? std::string{} : errors.front();
  }

  // A checkpoint directory that does not exist yet, and must not afterwards.
  std::string fresh_dir() const { return (root_.path() / "ckpt").string(); }
  void expect_nothing_written() const {
    EXPECT_EQ(entries(root_.path()), std::vector<std::string>{})
        << "a refused configuration wrote something";
  }

  temp_dir root_{"config"};
};

TEST_F(config_test, negative_grace_period) {
  auto error = refused(fresh_dir(), {"--grace-ms", "-5"});
  EXPECT_NE(error.find("grace_period must be >= 0"), std::string::npos) << error;
  expect_nothing_written();
}

TEST_F(config_test, unknown_signal_name) {
  auto error = refused(fresh_dir(), {"--signal", "SIGBOGUS"});
  EXPECT_NE(error.find("unknown signal 'SIGBOGUS'"), std::string::npos) << error;
  expect_nothing_written();
}

TEST_F(config_test, malformed_rank) {
  auto error = refused(fresh_dir(), {},
                       {"LIFEBOAT_RANK=one", "LIFEBOAT_WORLD_SIZE=2",
                        "LIFEBOAT_COORDINATOR=127.0.0.1:" + std::to_string(unused_port())});
  EXPECT_NE(error.find("LIFEBOAT_RANK"), std::string::npos) << error;
  expect_nothing_written();
}

TEST_F(config_test, rank_outside_the_world) {
  auto error = refused(fresh_dir(), {},
                       {"LIFEBOAT_RANK=2", "LIFEBOAT_WORLD_SIZE=2",
                        "LIFEBOAT_COORDINATOR=127.0.0.1:" + std::to_string(unused_port())});
  EXPECT_NE(error.find("LIFEBOAT_RANK"), std::string::npos) << error;
  expect_nothing_written();
}

TEST_F(config_test, malformed_status_port) {
  auto error = refused(fresh_dir(), {}, {"LIFEBOAT_STATUS_PORT=80x"});
  EXPECT_NE(error.find("LIFEBOAT_STATUS_PORT"), std::string::npos) << error;
  expect_nothing_written();
}

TEST_F(config_test, malformed_status_host_and_hang_timeout) {
  auto error = refused(fresh_dir(), {}, {"LIFEBOAT_STATUS_HOST=localhost:80"});
  EXPECT_NE(error.find("LIFEBOAT_STATUS_HOST='localhost:80'"), std::string::npos) << error;
  error = refused(fresh_dir(), {}, {"LIFEBOAT_HANG_TIMEOUT=-1"});
  EXPECT_NE(error.find("LIFEBOAT_HANG_TIMEOUT='-1'"), std::string::npos) << error;
  expect_nothing_written();
}

// Rank 0 hosts the service unless told that another process does: where one
// already listens (a lifeboat-coordinator the worker was not told of), the
// refusal names the variable that tells it.
TEST_F(config_test, rank_0_cannot_host_the_service_on_a_port_taken_and_names_the_way_out) {
  held_port taken;
  ASSERT_NE(taken.port(), 0);
  auto error = refused(fresh_dir(), {},
                       {"LIFEBOAT_RANK=0", "LIFEBOAT_WORLD_SIZE=2",
                        "LIFEBOAT_COORDINATOR=127.0.0.1:" + std::to_string(taken.port())});
  EXPECT_NE(error.find("cannot host the coordination service at 127.0.0.1:" +
                       std::to_string(taken.port())),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("unless LIFEBOAT_COORDINATOR_EXTERNAL=1 says"), std::string::npos) << error;
}

// Checked with the rest of the environment: a worker of a cluster used to
// find it only when it joined, after its checkpoint directory and memory
// tier were made, and a worker alone not at all.
TEST_F(config_test, malformed_tls_setting) {
  auto error = refused(fresh_dir(), {}, {"LIFEBOAT_TLS=maybe"});
  EXPECT_NE(error.find("LIFEBOAT_TLS=maybe"), std::string::npos) << error;
  error = refused(
      fresh_dir(), {},
      {"LIFEBOAT_RANK=1", "LIFEBOAT_WORLD_SIZE=2",
       "LIFEBOAT_COORDINATOR=127.0.0.1:" + std::to_string(unused_port()), "LIFEBOAT_TLS=maybe"});
  EXPECT_NE(error.find("LIFEBOAT_TLS=maybe"), std::string::npos) << error;
  expect_nothing_written();
}

// The checkpoint directory cannot be made: its parent is a regular file.
TEST_F(config_test, checkpoint_dir_under_a_file) {
  auto file = root_.path() / "file";
  std::ofstream{file} << "not a directory\n";
  auto dir = (file / "ckpt").string();
  auto error = refused(dir, {});
  EXPECT_NE(error.find("checkpoint_dir '" + dir + "'"), std::string::npos) << error;
  EXPECT_EQ(entries(root_.path()), std::vector<std::string>{"file"});
}

// The checkpoint directory is a regular file.
TEST_F(config_test, checkpoint_dir_is_a_file) {
  auto file = root_.path() / "file";
  std::ofstream{file} << "not a directory\n";
  auto error = refused(file.string(), {});
  EXPECT_NE(error.find("checkpoint_dir '" + file.string() + "'"), std::string::npos) << error;
  EXPECT_EQ(entries(root_.path()), std::vector<std::string>{"file"});
  EXPECT_EQ(std::filesystem::file_size(file), std::string{"not a directory\n"}.size());
}

// Permissions mean nothing to root, who runs these tests in containers and
// CI, through two capabilities: as root the worker runs without them
// (util-linux's setpriv drops them from the bounding set before it starts
// the worker), so the permission bits stop it as they stop any other user.
TEST_F(config_test, unreadable_checkpoint_dir) {
  std::vector<std::string> launcher;
  if (::geteuid() == 0)
    launcher = {"/usr/bin/setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"};
  auto dir = root_.path() / "locked";
  std::filesystem::create_directory(dir);
  ::chmod(dir.c_str(), 0);
  auto error = refused(dir.string(), {}, {}, launcher);
  ::chmod(dir.c_str(), S_IRWXU);
  EXPECT_NE(error.find("checkpoint_dir '" + dir.string() + "'"), std::string::npos) << error;
  EXPECT_EQ(entries(dir), std::vector<std::string>{});
}

}  // namespace
}  // namespace lifeboat::test
