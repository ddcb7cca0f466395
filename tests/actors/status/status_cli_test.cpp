// lifeboat-status (apps/lifeboat_status.cpp) against a real endpoint.

#include <gtest/gtest.h>

#include "tests/actors/status/status_endpoint_fixture.hpp"
#include "tests/actors/status/status_test_support.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/loopback_port.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

constexpr auto cli_timeout = 20s;

class status_cli_test : public test::status_endpoint_fixture {
 protected:
  void SetUp() override { start(test::saving_cluster()); }

  std::string port() const { return std::to_string(port_); }
};

TEST_F(status_cli_test, prints_a_readable_table) {
  auto run = test::run_process(
      {lifeboat::test::built(LIFEBOAT_STATUS_CLI), "--host", "127.0.0.1", "--port", port()},
      cli_timeout);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* part :
       {"rank 0 of 2", "step 120", "phase saving", "healthy",
        "last checkpoint: step 100, 5.6 GiB, 0.75 s, in memory + peer + directory, "
        "/ckpt/step-100",
        "restored at start: step 40, 5.6 GiB, from memory in 0.50 s, "
        "/dev/shm/job/step-40",
        "step_resolver", "coordination_service", "status_endpoint", "WORKER", "PHASE", "15 ms ago",
        "alive", "checkpoint_scheduled", "STEP TIME", "P99", "0.022 s", "0.025 s",
        "\n1       119   0.066 s    0.070 s  16 ms ago       alive (straggler)  "
        "checkpoint_scheduled\n"}) {
    EXPECT_NE(run.out.find(part), std::string::npos) << part << "\n" << run.out;
  }
}

// A state longer than any fixed column ("notice from the coordinator",
// "waiting for workers to exit") used to run into the mailbox beside it.
class status_cli_long_state_test : public test::status_endpoint_fixture {
 protected:
  void SetUp() override {
    auto watcher = test::actor_status("preemption_watcher", "waiting for workers to exit", 7);
    auto* notice = watcher.mutable_preemption();
    notice->set_state("waiting for workers to exit");
    notice->set_message("rank 1: SIGTERM received (source signal:SIGTERM, deadline in 25 s)");
    start({watcher});
  }
};

TEST_F(status_cli_long_state_test, columns_are_as_wide_as_their_widest_cell) {
  auto run = test::run_process(
      {lifeboat::test::built(LIFEBOAT_STATUS_CLI), "--port", std::to_string(port_)}, cli_timeout);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("\npreemption_watcher  waiting for workers to exit  7\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("\nACTOR               STATE                        MAILBOX\n"),
            std::string::npos)
      << run.out;
  // The earliest notice, as the launcher prints it.
  EXPECT_NE(run.out.find("\npreemption: rank 1: SIGTERM received (source signal:SIGTERM, "
                         "deadline in 25 s)\n"),
            std::string::npos)
      << run.out;
}

// A coordinator right after a restart: the job's checkpoint is the one the
// workers restored, whose save's seconds nobody knows; the table leaves them
// out rather than print 0.00 s.
class status_cli_restored_job_test : public test::status_endpoint_fixture {
 protected:
  void SetUp() override {
    auto service = test::actor_status("coordination_service", "running", 0);
    auto* ckpt = service.mutable_last_checkpoint();
    ckpt->set_step(40);
    ckpt->set_path("/ckpt/step-40");
    ckpt->set_bytes(2048);
    start({service});
  }
};

TEST_F(status_cli_restored_job_test, leaves_out_the_seconds_nobody_knows) {
  auto run = test::run_process(
      {lifeboat::test::built(LIFEBOAT_STATUS_CLI), "--port", std::to_string(port_)}, cli_timeout);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("last checkpoint: step 40, 2.0 KiB, /ckpt/step-40\n"), std::string::npos)
      << run.out;
}

TEST_F(status_cli_test, prints_the_raw_json_with_numbers) {
  auto run = test::run_process(
      {lifeboat::test::built(LIFEBOAT_STATUS_CLI), "--port", port(), "--json"}, cli_timeout);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("{", 0), 0u) << run.out;
  EXPECT_NE(run.out.find("\"step\":120"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"bytes\":6000000000"), std::string::npos) << run.out;
}

TEST_F(status_cli_test, fails_clearly_when_nothing_answers) {
  std::string closed_port;
  {
    auto probe = status_http_server::bind(0, {});
    ASSERT_TRUE(probe);
    closed_port = std::to_string((*probe)->port());
  }
  auto run = test::run_process({lifeboat::test::built(LIFEBOAT_STATUS_CLI), "--port", closed_port},
                               cli_timeout);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(
      run.err.find("lifeboat-status: cannot reach http://127.0.0.1:" + closed_port + "/status"),
      std::string::npos)
      << run.err;
  EXPECT_EQ(run.out, "");
}

// An endpoint bound to ::1 (LIFEBOAT_STATUS_HOST), named bare or in brackets.
class status_cli_ipv6_test : public test::status_endpoint_fixture {
 protected:
  void SetUp() override {
    if (test::unused_port(AF_INET6) == 0) GTEST_SKIP() << "no IPv6 loopback (::1) here";
    status_endpoint_config cfg;
    cfg.host = "::1";
    start(test::saving_cluster(), cfg);
  }
};

TEST_F(status_cli_ipv6_test, an_ipv6_address_is_reached_bare_or_in_brackets) {
  for (const char* host : {"::1", "[::1]"}) {
    auto run = test::run_process({lifeboat::test::built(LIFEBOAT_STATUS_CLI), "--host", host,
                                  "--port", std::to_string(port_)},
                                 cli_timeout);
    EXPECT_EQ(run.exit_code, 0) << host << ": " << run.err;
    EXPECT_NE(run.out.find("rank 0 of 2"), std::string::npos) << host << ": " << run.out;
  }
  // What it cannot reach it names as a URL does: the address in brackets.
  auto closed = test::unused_port(AF_INET6);
  auto run = test::run_process({lifeboat::test::built(LIFEBOAT_STATUS_CLI), "--host", "::1",
                                "--port", std::to_string(closed)},
                               cli_timeout);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("cannot reach http://[::1]:" + std::to_string(closed) + "/status"),
            std::string::npos)
      << run.err;
}

TEST_F(status_cli_test, rejects_a_missing_port) {
  auto run = test::run_process({lifeboat::test::built(LIFEBOAT_STATUS_CLI), "--json"}, cli_timeout);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--port is required"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace lifeboat
