// The standalone lifeboat-coordinator process.

#include <csignal>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/tls_config.hpp"
#include "actors/preemption/cluster_phase.hpp"
#include "actors/preemption/protocol.hpp"
#include "actors/status/status_endpoint.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"
#include "messages/preemption.pb.h"
#include "platform/clock.hpp"
#include "tests/actors/preemption/raised_notice.hpp"
#include "tests/apps/status_client.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/loopback_port.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

constexpr std::chrono::seconds deadline{20};
const std::string service_listening = "lifeboat-coordinator: listening on 127.0.0.1:";
// Logged before the service's line, when --status-port is given.
const std::string status_listening = "status endpoint listening on 127.0.0.1:";

// Reads the child's output until a line holds `marker`: every line read,
// that one last, or none when it never came.
std::vector<std::string> lines_until(child_process& child, const std::string& marker) {
  std::vector<std::string> lines;
  while (auto line = child.read_line(deadline)) {
    lines.push_back(*line);
    if (line->find(marker) != std::string::npos) return lines;
  }
  return {};
}

// Reads the child's output until a line holds `marker`: that line, or none.
std::optional<std::string> wait_for_line(child_process& child, const std::string& marker) {
  auto lines = lines_until(child, marker);
  if (lines.empty()) return std::nullopt;
  return lines.back();
}

// Reads the child's output until a line holds `marker`; returns the port
// that line names (0: none came).
uint16_t wait_for_port(child_process& child, const std::string& marker = service_listening) {
  auto line = wait_for_line(child, marker);
  return line ? listening_port(*line) : 0;
}

// The coordinator's line when a SIGTERM (or another notice signal) finds
// one worker still joined.
const std::string serving_one = "SIGTERM received: serving the 1 worker(s) still here";
const std::string serving_one_after_any_signal = " received: serving the 1 worker(s) still here";

// Rank 1 of a job of two, with the token the tests give the coordinator.
agent_config rank_one_of_two(uint16_t port) {
  agent_config acfg;
  acfg.port = port;
  acfg.rank = 1;
  acfg.world_size = 2;
  acfg.token = "t";
  acfg.join_timeout = std::chrono::seconds(5);
  return acfg;
}

TEST(lifeboat_coordinator, serves_workers_and_stops_cleanly_on_sigterm) {
  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                             "--world-size", "2", "--token", "t", "--heartbeat-timeout-ms", "500"},
                            true};
  auto port = wait_for_port(coordinator);
  ASSERT_NE(port, 0);
  {
    system_config cfg;
    caf::actor_system sys{cfg};
    auto acfg = rank_one_of_two(port);
    auto client = coordination_client::connect(sys, acfg);
    ASSERT_TRUE(client) << describe(client.error());
    ASSERT_FALSE((*client)->insert("k", "v"));
    acfg.token = "other";
    acfg.rank = 0;
    auto refused = coordination_client::connect(sys, acfg);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), make_error(errc::refused));
  }
  coordinator.kill(SIGTERM);
  auto status = coordinator.wait_exit(deadline);
  ASSERT_TRUE(status) << "lifeboat-coordinator hangs on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

// The token given as --token (or --token=) leaves the process's arguments,
// which every local user reads (ps, /proc/PID/cmdline), once they are parsed.
TEST(lifeboat_coordinator, the_token_on_its_command_line_is_hidden_from_other_users) {
  for (std::string form : {"--token", "--token="}) {
    std::vector<std::string> args{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                                  "--world-size", "2"};
    if (form == "--token") {
      args.push_back(form);
      args.push_back("sekrit-token-123");
    } else {
      args.push_back(form + "sekrit-token-123");
    }
    child_process coordinator{args, true};
    ASSERT_NE(wait_for_port(coordinator), 0) << form;
    std::ifstream file{"/proc/" + std::to_string(coordinator.pid()) + "/cmdline"};
    std::string cmdline{std::istreambuf_iterator<char>{file}, {}};
    EXPECT_EQ(cmdline.find("sekrit"), std::string::npos) << form;
    EXPECT_NE(cmdline.find("xxxxxxxxxxxxxxxx"), std::string::npos) << form;
    coordinator.kill(SIGINT);
    ASSERT_TRUE(coordinator.wait_exit(deadline)) << form;
  }
}

// A coordinator of a job of two with rank 1 joined. A SIGTERM usually
// reaches a job's every process at once, and the workers then save through
// the service; one that reaches the coordinator alone gives them a notice.
class coordinator_with_a_worker : public ::testing::Test {
 protected:
  coordinator_with_a_worker() : coordinator_with_a_worker(std::nullopt) {}
  // The coordinator gets exactly `env` (none: this process's environment).
  explicit coordinator_with_a_worker(const std::optional<std::vector<std::string>>& env)
      : coordinator_{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0", "--world-size",
                      "2", "--token", "t"},
                     true,
                     env} {
    hangup_.restore();
  }

  void SetUp() override {
    auto port = wait_for_port(coordinator_);
    ASSERT_NE(port, 0);
    auto client = coordination_client::connect(sys_, rank_one_of_two(port));
    ASSERT_TRUE(client) << describe(client.error());
    client_ = std::move(*client);
  }

  // Rank 1's notice, as its step resolver records it when the SIGTERM
  // reaches it too.
  void record_notice() {
    wire::Notice notice;
    notice.set_rank(1);
    notice.set_source("signal:SIGTERM");
    ASSERT_FALSE(client_->insert(notice_key_prefix + std::string{"1"}, notice.SerializeAsString()));
  }

  // It exited 0 within the deadline.
  void expect_a_clean_exit(const char* otherwise) {
    auto status = coordinator_.wait_exit(deadline);
    ASSERT_TRUE(status) << otherwise;
    EXPECT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), 0);
  }

  // Sends `signo` to the coordinator: rank 1 gets its notice, named after
  // the signal and due in `due` (`why`, as the coordinator's line says),
  // and the coordinator says it serves the worker until it leaves.
  void expect_a_notice_for(int signo, const std::string& source,
                           std::chrono::seconds due = std::chrono::seconds{120},
                           const std::string& why = "the longest it serves them") {
    caf::scoped_actor self{sys_};
    client_->subscribe(self);
    auto sent_ms = unix_now_ms();
    coordinator_.kill(signo);
    bool raised = false;
    self->receive(
        [&](const peer_message& msg) {
          auto deadline_ms = expect_raised_notice(msg, source);
          auto due_ms = std::chrono::milliseconds{due}.count();
          EXPECT_GE(deadline_ms, sent_ms + due_ms);
          EXPECT_LE(deadline_ms, unix_now_ms() + due_ms);
          raised = true;
        },
        caf::after(deadline) >> [] {});
    ASSERT_TRUE(raised) << "no notice reached the worker";
    ASSERT_TRUE(wait_for_line(coordinator_, "gave the 1 worker(s) here one, due in " +
                                                std::to_string(due.count()) + " s (" + why + ")"));
    ASSERT_TRUE(wait_for_line(coordinator_, serving_one_after_any_signal));
  }

  // SIGHUP's default action for the coordinator while it starts: a test run
  // under nohup would give it an ignored SIGHUP, which stays ignored.
  struct default_hangup {
    default_hangup() : previous(std::signal(SIGHUP, SIG_DFL)) {}
    void restore() { std::signal(SIGHUP, previous); }
    sighandler_t previous;
  };
  default_hangup hangup_;
  child_process coordinator_;
  system_config cfg_;
  caf::actor_system sys_{cfg_};
  std::unique_ptr<coordination_client> client_;
};

TEST_F(coordinator_with_a_worker, a_sigterm_the_worker_got_too_is_served_until_it_leaves) {
  record_notice();
  coordinator_.kill(SIGTERM);
  auto lines = lines_until(coordinator_, serving_one);
  ASSERT_FALSE(lines.empty()) << "the coordinator did not say it serves the worker";
  for (auto& line : lines)
    EXPECT_EQ(line.find("gave the"), std::string::npos) << "a second notice was raised: " << line;
  // Still serving: the worker's save goes on through it.
  EXPECT_FALSE(client_->insert("saved", "step 7"));
  auto saved = client_->try_get("saved");
  ASSERT_TRUE(saved) << describe(saved.error());
  EXPECT_EQ(*saved, std::optional<std::string>{"step 7"});
  EXPECT_FALSE(coordinator_.wait_exit(std::chrono::milliseconds{0}));
  EXPECT_FALSE(client_->leave());
  expect_a_clean_exit("lifeboat-coordinator still serves after its workers left");
}

// A SIGTERM that reached the coordinator before any worker's notice (or
// alone: its host is going away) gives every worker a notice on the
// preemption protocol's channel, due when the coordinator stops serving
// (120 s at most), and the service stays until they have saved and left.
// Before, the notice had no deadline, and a worker whose grace period was
// longer trained on past the coordinator's end.
TEST_F(coordinator_with_a_worker, a_sigterm_to_the_coordinator_alone_gives_the_workers_a_notice) {
  expect_a_notice_for(SIGTERM, "signal:SIGTERM");
  EXPECT_FALSE(client_->insert("saved", "step 7")) << "the service went before the worker left";
  EXPECT_FALSE(client_->leave());
  expect_a_clean_exit("lifeboat-coordinator still serves after its workers left");
}

// A terminal that hangs up (an SSH session lost) is a notice, as to the
// launcher and the workers; before, SIGHUP killed the coordinator at once.
TEST_F(coordinator_with_a_worker, a_hangup_gives_the_workers_a_notice_as_a_sigterm_does) {
  expect_a_notice_for(SIGHUP, "signal:SIGHUP");
  EXPECT_FALSE(client_->leave());
  expect_a_clean_exit("lifeboat-coordinator still serves after its workers left");
}

// SIGUSR1 and SIGUSR2 from outside (a scheduler signalling every process)
// are no notice here: ignored with a line, where they used to kill it.
TEST_F(coordinator_with_a_worker, sigusr1_and_sigusr2_are_ignored_where_they_are_no_notice) {
  coordinator_.kill(SIGUSR1);
  ASSERT_TRUE(wait_for_line(coordinator_, "SIGUSR1 received: no notice to this job's workers"));
  coordinator_.kill(SIGUSR2);
  ASSERT_TRUE(wait_for_line(coordinator_, "SIGUSR2 received: no notice to this job's workers"));
  EXPECT_FALSE(client_->insert("still", "served"));
  EXPECT_FALSE(client_->leave());
  coordinator_.kill(SIGTERM);
  expect_a_clean_exit("lifeboat-coordinator did not stop on SIGTERM");
}

// This process's environment with `name` set to `value`.
std::vector<std::string> environment_with(const std::string& name, const std::string& value) {
  std::vector<std::string> env{name + "=" + value};
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string{*e}.rfind(name + "=", 0) != 0) env.emplace_back(*e);
  return env;
}

// Under SLURM (--signal=USR1@N reaches every process of a job step)
// SIGUSR1 is the workers' notice, and the coordinator's too.
class slurm_coordinator_with_a_worker : public coordinator_with_a_worker {
 protected:
  slurm_coordinator_with_a_worker()
      : coordinator_with_a_worker(environment_with("SLURM_JOB_ID", "5")) {}
};

// A coordinator with a grace period of its own (a pod's, given as
// LIFEBOAT_GRACE_PERIOD_S) is killed when it ends: its notice is due then.
class coordinator_with_a_grace_period : public coordinator_with_a_worker {
 protected:
  coordinator_with_a_grace_period()
      : coordinator_with_a_worker(environment_with("LIFEBOAT_GRACE_PERIOD_S", "7")) {}
};

TEST_F(coordinator_with_a_grace_period, its_notice_is_due_when_its_grace_period_ends) {
  expect_a_notice_for(SIGTERM, "signal:SIGTERM", std::chrono::seconds{7},
                      "this process's grace period");
  EXPECT_FALSE(client_->leave());
  expect_a_clean_exit("lifeboat-coordinator still serves after its workers left");
}

// A grace period that is no number is refused at start, named.
TEST(lifeboat_coordinator, a_malformed_grace_period_is_refused_at_start) {
  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                             "--world-size", "2", "--token", "t"},
                            true,
                            environment_with("LIFEBOAT_GRACE_PERIOD_S", "soon")};
  auto status = coordinator.wait_exit(deadline);
  ASSERT_TRUE(status) << "lifeboat-coordinator started with LIFEBOAT_GRACE_PERIOD_S=soon";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0);
  EXPECT_TRUE(wait_for_line(coordinator, "LIFEBOAT_GRACE_PERIOD_S"));
}

TEST_F(slurm_coordinator_with_a_worker, sigusr1_gives_the_workers_a_notice) {
  expect_a_notice_for(SIGUSR1, "signal:SIGUSR1");
  EXPECT_FALSE(client_->leave());
  expect_a_clean_exit("lifeboat-coordinator still serves after its workers left");
}

// A person's SIGINT stops it at once, even while it waits for workers.
TEST_F(coordinator_with_a_worker, a_sigint_ends_the_wait_for_the_workers) {
  record_notice();
  coordinator_.kill(SIGTERM);
  ASSERT_TRUE(wait_for_line(coordinator_, serving_one));
  coordinator_.kill(SIGINT);
  expect_a_clean_exit("a SIGINT did not end the wait");
}

// --status-port: the coordinator's own endpoint, with a row per worker
// (DESIGN "Status endpoint"). It is no worker: rank -1, and its step is the
// furthest step a worker reported in its heartbeats.
TEST(lifeboat_coordinator, status_port_serves_the_workers_view) {
  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                             "--world-size", "2", "--token", "t", "--status-port", "0"},
                            true};
  auto status_port = wait_for_port(coordinator, status_listening);
  ASSERT_NE(status_port, 0);
  auto port = wait_for_port(coordinator);
  ASSERT_NE(port, 0);
  constexpr int64_t reported_step = 17;
  system_config cfg;
  caf::actor_system sys{cfg};
  auto acfg = rank_one_of_two(port);
  acfg.heartbeat_interval = std::chrono::milliseconds{50};
  acfg.step_source = [] { return reported_step; };
  acfg.status_source = [] { return heartbeat_status(phase::training); };
  auto client = coordination_client::connect(sys, acfg);
  ASSERT_TRUE(client) << describe(client.error());
  // The step arrives with a heartbeat; ask until it is there.
  auto status = await_step_past(status_port, reported_step - 1, deadline);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->rank(), coordinator_status_rank);
  EXPECT_EQ(status->world_size(), 2);
  EXPECT_EQ(status->step(), reported_step);
  ASSERT_EQ(status->workers_size(), 2);
  EXPECT_EQ(status->workers(0).state(), "joining");
  EXPECT_EQ(status->workers(1).state(), "alive");
  EXPECT_EQ(status->workers(1).step(), reported_step);
  EXPECT_EQ(status->workers(1).phase(), "training");
  EXPECT_EQ(status->workers(0).phase(), "");
  EXPECT_GE(status->workers(1).last_heartbeat_ms(), 0);
  EXPECT_TRUE(status->healthy());
  EXPECT_EQ(status->phase(), "training");
  // The phase follows the cluster: a notice recorded, then a worker gone.
  // Both requests return once the service applied them.
  ASSERT_FALSE((*client)->insert(notice_key_prefix + std::string{"1"}, "notice"));
  status = fetch_status(status_port);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->phase(), "notice_received");
  ASSERT_FALSE((*client)->leave());
  status = fetch_status(status_port);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->phase(), "exiting");
  coordinator.kill(SIGTERM);
  auto exited = coordinator.wait_exit(deadline);
  ASSERT_TRUE(exited) << "lifeboat-coordinator hangs on SIGTERM";
  EXPECT_EQ(WEXITSTATUS(*exited), 0);
}

// --host with an IPv6 address, bare or in brackets as LIFEBOAT_COORDINATOR
// has it: the service listens there, says where in brackets, and a worker
// joins it; SIGTERM is named as it stops.
TEST(lifeboat_coordinator, listens_on_an_ipv6_address_given_bare_or_in_brackets) {
  if (unused_port(AF_INET6) == 0) GTEST_SKIP() << "no IPv6 loopback (::1) here";
  for (std::string host : {"::1", "[::1]"}) {
    child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                               "--world-size", "2", "--token", "t", "--host", host},
                              true};
    uint16_t port = 0;
    while (auto line = coordinator.read_line(deadline)) {
      const std::string marker = "lifeboat-coordinator: listening on [::1]:";
      if (auto at = line->find(marker); at != std::string::npos) {
        port = static_cast<uint16_t>(std::stoi(line->substr(at + marker.size())));
        break;
      }
    }
    ASSERT_NE(port, 0) << "--host " << host;
    {
      system_config cfg;
      caf::actor_system sys{cfg};
      auto acfg = rank_one_of_two(port);
      acfg.host = "::1";
      auto client = coordination_client::connect(sys, acfg);
      ASSERT_TRUE(client) << "--host " << host << ": " << describe(client.error());
      EXPECT_FALSE((*client)->insert("k", "v"));
    }
    coordinator.kill(SIGTERM);
    bool named = false;
    while (auto line = coordinator.read_line(deadline))
      if (line->find("stopping on SIGTERM") != std::string::npos) named = true;
    EXPECT_TRUE(named) << "--host " << host;
    auto status = coordinator.wait_exit(deadline);
    ASSERT_TRUE(status);
    EXPECT_EQ(WEXITSTATUS(*status), 0);
  }
}

TEST(lifeboat_coordinator, rejects_missing_flags) {
  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0"}, true};
  auto status = coordinator.wait_exit(deadline);
  ASSERT_TRUE(status);
  EXPECT_EQ(WEXITSTATUS(*status), 2);
}

// A timeout of a few ms would lose every worker as it joins.
TEST(lifeboat_coordinator, rejects_a_heartbeat_timeout_below_100_ms) {
  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                             "--world-size", "2", "--token", "t", "--heartbeat-timeout-ms", "99"},
                            true};
  auto line = coordinator.read_line(deadline);
  ASSERT_TRUE(line);
  EXPECT_NE(line->find("--heartbeat-timeout-ms"), std::string::npos) << *line;
  EXPECT_NE(line->find("[100, "), std::string::npos) << *line;
  auto status = coordinator.wait_exit(deadline);
  ASSERT_TRUE(status);
  EXPECT_EQ(WEXITSTATUS(*status), 2);
}

}  // namespace

// --tls: every connection runs TLS 1.3 with the key derived from the token; a
// worker with TLS joins and one without is refused (it hears no greeting).
TEST(lifeboat_coordinator, tls_flag_encrypts_every_connection) {
  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                             "--world-size", "2", "--token", "t", "--tls"},
                            true};
  uint16_t port = 0;
  bool tls_logged = false;
  while (auto line = coordinator.read_line(deadline)) {
    tls_logged = tls_logged || line->find("TLS 1.3 on every connection") != std::string::npos;
    if (line->find(service_listening) != std::string::npos) {
      port = listening_port(*line);
      break;
    }
  }
  ASSERT_NE(port, 0);
  EXPECT_TRUE(tls_logged);
  {
    system_config cfg;
    caf::actor_system sys{cfg};
    auto acfg = rank_one_of_two(port);
    acfg.tls.enabled = true;
    auto client = coordination_client::connect(sys, acfg);
    ASSERT_TRUE(client) << describe(client.error());
    ASSERT_FALSE((*client)->insert("k", "v"));
    acfg.rank = 0;
    acfg.tls.enabled = false;
    acfg.handshake_timeout = std::chrono::milliseconds(500);
    auto refused = coordination_client::connect(sys, acfg);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), make_error(errc::refused)) << describe(refused.error());
    EXPECT_NE(describe(refused.error()).find(tls_env), std::string::npos)
        << describe(refused.error());
  }
  coordinator.kill(SIGTERM);
  auto status = coordinator.wait_exit(deadline);
  ASSERT_TRUE(status) << "lifeboat-coordinator hangs on SIGTERM";
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}
