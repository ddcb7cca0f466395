// The status endpoint of running lifeboat-demo workers (DESIGN "Status
// endpoint"), started through lifeboat-launch --status-port 0: every worker
// picks a free port and logs it; /status, /metrics, /healthz and / answer
// with what the demo is doing.

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/status_client.hpp"
#include "tests/support/build_tree.hpp"

namespace {

using namespace std::chrono_literals;
using namespace lifeboat::test;

constexpr int workers = 2;
// /status is asked again until the step moved, at most this long.
constexpr auto progress_deadline = 30s;
const std::vector<std::string> worker_actors{"signal_watcher",    "poll_watcher",
                                             "cluster_watcher",   "step_resolver",
                                             "checkpoint_writer", "exit_controller"};

// rank -> port of "lifeboat[rank R] status_endpoint: status endpoint listening on 127.0.0.1:P".
std::map<int, uint16_t> status_ports(const output_log& log) {
  std::map<int, uint16_t> out;
  for (const auto& l : log.lines()) {
    int rank = -1;
    if (l.find(worker_status_listening) != std::string::npos &&
        std::sscanf(l.c_str(), "lifeboat[rank %d]", &rank) == 1)
      out[rank] = listening_port(l);
  }
  return out;
}

// What lifeboat-status prints for the endpoint at `port`; it must exit 0.
std::string status_table(uint16_t port) {
  child_process table{{lifeboat::test::built(LIFEBOAT_STATUS), "--port", std::to_string(port)}};
  output_log log{table};
  log.read_all();
  EXPECT_EQ(exit_code(table), 0) << log.text();
  return log.text();
}

TEST(demo_status_test, endpoints_of_a_running_demo_follow_its_progress) {
  scratch_dir dir{"apps-status"};
  // Training outlasts the test, which ends it with a SIGTERM to the launcher.
  child_process run{status_job_command(lifeboat::test::built(LIFEBOAT_LAUNCH),
                                       lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt", workers),
                    true, environment_with({{"LIFEBOAT_PLATFORM", "generic"}})};
  output_log log{run};
  // The endpoint starts after the worker joined and restored, when its actors run.
  ASSERT_TRUE(log.read_until_count(worker_status_listening, workers)) << log.text();
  auto ports = status_ports(log);
  ASSERT_EQ(ports.size(), static_cast<size_t>(workers)) << log.text();

  int64_t highest_step = 0;
  for (auto [rank, port] : ports) {
    SCOPED_TRACE("rank " + std::to_string(rank) + " on port " + std::to_string(port));
    ASSERT_NE(port, 0);
    std::string raw;
    auto first = fetch_status(port, &raw);
    ASSERT_TRUE(first) << raw;
    // The contract's keys are in the JSON itself, not only defaults of the parse.
    for (const char* key : {"\"rank\":", "\"world_size\":", "\"step\":", "\"phase\":",
                            "\"last_checkpoint\":", "\"actors\":"})
      EXPECT_NE(raw.find(key), std::string::npos) << key << " in " << raw;
    EXPECT_EQ(first->rank(), rank);
    EXPECT_EQ(first->world_size(), workers);
    EXPECT_EQ(first->phase(), "training");
    EXPECT_TRUE(first->healthy());
    EXPECT_GE(first->step(), 0);
    std::set<std::string> names;
    for (const auto& actor : first->actors()) names.insert(actor.name());
    for (const auto& name : worker_actors) EXPECT_EQ(names.count(name), 1u) << name << " " << raw;
    EXPECT_EQ(names.count("status_endpoint"), 1u) << raw;
    // The launcher hosts the service: no worker runs one.
    EXPECT_EQ(names.count("coordination_service"), 0u) << raw;

    // Training goes on: the step moves past the first answer's.
    auto latest = await_step_past(port, first->step(), progress_deadline);
    ASSERT_TRUE(latest);
    EXPECT_GT(latest->step(), first->step());
    EXPECT_LT(latest->step(), endless_steps);
    EXPECT_EQ(latest->phase(), "training");
    highest_step = std::max(highest_step, latest->step());

    auto metrics = http_get(port, "/metrics");
    EXPECT_EQ(metrics.status, 200);
    for (const auto& sample : std::vector<std::string>{
             "lifeboat_rank " + std::to_string(rank), "lifeboat_world_size 2", "lifeboat_step ",
             "lifeboat_phase{phase=\"training\"} 1", "lifeboat_healthy 1"})
      EXPECT_NE(metrics.body.find(sample), std::string::npos) << sample << " in\n" << metrics.body;
    for (const auto& name : worker_actors)
      EXPECT_NE(metrics.body.find("actor=\"" + name + "\""), std::string::npos) << name << " in\n"
                                                                                << metrics.body;

    auto health = http_get(port, "/healthz");
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, "ok\n");

    auto page = http_get(port, "/");
    EXPECT_EQ(page.status, 200);
    EXPECT_NE(page.body.find("<title>lifeboat status</title>"), std::string::npos);

    EXPECT_EQ(http_get(port, "/no-such-page").status, 404);
  }

  // The launcher's own endpoint (BASE 0: a free port) has a row per worker,
  // both alive, with the steps their heartbeats carry.
  // It listens before any worker starts, so its line was read already.
  auto launcher_port = launcher_status_port(log);
  ASSERT_NE(launcher_port, 0) << log.text();
  std::string raw;
  auto view = fetch_status(launcher_port, &raw);
  ASSERT_TRUE(view) << raw;
  EXPECT_EQ(view->rank(), -1) << raw;
  EXPECT_EQ(view->phase(), "training") << raw;
  ASSERT_EQ(view->workers_size(), workers) << raw;
  for (const auto& worker : view->workers()) {
    EXPECT_EQ(worker.state(), "alive") << raw;
    EXPECT_EQ(worker.phase(), "training") << raw;
    EXPECT_GE(worker.last_heartbeat_ms(), 0) << raw;
  }
  EXPECT_TRUE(view->healthy()) << raw;
  // lifeboat-status names it the coordinator, not "rank -1".
  auto table = status_table(launcher_port);
  EXPECT_NE(table.find("coordinator of " + std::to_string(workers) + " workers"), std::string::npos)
      << table;

  // The step the cluster agrees on is past every step the endpoints reported.
  run.kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(run), restart_exit_code) << log.text();
  auto agreed = log.agreed_steps();
  ASSERT_EQ(agreed.size(), static_cast<size_t>(workers)) << log.text();
  EXPECT_EQ(agreed[0], agreed[1]) << log.text();
  EXPECT_GE(agreed[0], highest_step) << log.text();
}

// Right after a restart a worker has saved nothing of its own: its /status
// shows the checkpoint it went on from (`restored`: the step every worker
// agreed on before the restart, read from its memory tier, and the path),
// and so does lifeboat-status. A first start restored nothing and says so.
// The launcher's /status shows the job's last checkpoint, the one every
// worker went on from: its step, and the bytes of all their shards.
TEST(demo_status_test, a_restarted_worker_shows_the_checkpoint_it_restored) {
  scratch_dir dir{"apps-status-restored"};
  auto command = status_job_command(lifeboat::test::built(LIFEBOAT_LAUNCH),
                                    lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt", workers);
  auto env = environment_with({{"LIFEBOAT_PLATFORM", "generic"}});
  int64_t saved_step = 0;
  {
    child_process run{command, true, env};
    output_log log{run};
    ASSERT_TRUE(log.read_until_count(worker_status_listening, workers)) << log.text();
    for (auto [rank, port] : status_ports(log)) {
      std::string raw;
      auto first = fetch_status(port, &raw);
      ASSERT_TRUE(first) << "rank " << rank << ": " << raw;
      EXPECT_NE(raw.find("\"restored\":"), std::string::npos) << raw;
      EXPECT_EQ(first->restored().path(), "") << raw;
    }
    run.kill(SIGTERM);
    log.read_all();
    ASSERT_EQ(exit_code(run), restart_exit_code) << log.text();
    auto agreed = log.agreed_steps();
    ASSERT_EQ(agreed.size(), static_cast<size_t>(workers)) << log.text();
    saved_step = agreed[0];
  }

  child_process again{command, true, env};
  output_log log{again};
  ASSERT_TRUE(log.read_until_count(worker_status_listening, workers)) << log.text();
  auto ports = status_ports(log);
  ASSERT_EQ(ports.size(), static_cast<size_t>(workers)) << log.text();
  int64_t shard_bytes = 0;
  for (auto [rank, port] : ports) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    std::string raw;
    auto status = fetch_status(port, &raw);
    ASSERT_TRUE(status) << raw;
    const auto& restored = status->restored();
    EXPECT_EQ(restored.step(), saved_step) << raw;
    EXPECT_NE(restored.path().find("step-"), std::string::npos) << raw;
    EXPECT_GT(restored.bytes(), 0) << raw;
    ASSERT_EQ(restored.tiers_size(), 1) << raw;
    EXPECT_EQ(restored.tiers(0).name(), "memory") << raw;
    shard_bytes += restored.bytes();
  }
  // Each worker records it as it starts: the launcher shows it once all did.
  auto launcher_port = launcher_status_port(log);
  ASSERT_NE(launcher_port, 0) << log.text();
  auto job = await_status(
      launcher_port,
      [&](const lifeboat::wire::Status& s) { return s.last_checkpoint().bytes() == shard_bytes; },
      progress_deadline);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->last_checkpoint().step(), saved_step);
  EXPECT_EQ(job->last_checkpoint().bytes(), shard_bytes);
  EXPECT_NE(job->last_checkpoint().path().find("step-"), std::string::npos);
  // Every worker read its shard from memory; the directory holds them too.
  ASSERT_EQ(job->last_checkpoint().tiers_size(), 2);
  EXPECT_EQ(job->last_checkpoint().tiers(0).name(), "memory");
  EXPECT_EQ(job->last_checkpoint().tiers(1).name(), "directory");
  auto table = status_table(ports.begin()->second);
  EXPECT_NE(table.find("restored at start: step " + std::to_string(saved_step) + ", "),
            std::string::npos)
      << table;
  auto job_table = status_table(launcher_port);
  EXPECT_NE(job_table.find("last checkpoint: step " + std::to_string(saved_step) + ", "),
            std::string::npos)
      << job_table;
  EXPECT_NE(job_table.find(", in memory + directory, "), std::string::npos) << job_table;
  again.kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(again), restart_exit_code) << log.text();
}

}  // namespace
