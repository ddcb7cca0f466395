// The coordinator's status page after a preemption, in headless Chromium: a
// real 2-worker lifeboat-demo job under lifeboat-launch --status-port 0, a
// SIGTERM to one worker (a notice), the save, the restart. The launcher's
// page must then draw the last decision with every rank's lane, the
// checkpoint at the agreed step, and every rank's steps per second; its
// screenshots are kept under the build directory for a person to look at.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/status_client.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/headless_chromium.hpp"

namespace {

using namespace std::chrono_literals;
using namespace lifeboat;
using namespace lifeboat::test;
namespace fs = std::filesystem;

constexpr int workers = 2;
constexpr int noticed_rank = 1;
// The history is read once a second: a view is asked for again until it
// shows what the test waits for, at most this long.
constexpr auto history_deadline = 30s;
// Steps the workers train before the notice, so that /rates has samples.
constexpr int64_t steps_before_notice = 150;
// Tall enough for every section of the coordinator's page.
constexpr int page_height = 1500;
// Chromium starts slowly on a loaded machine: its own virtual-time budget
// plus the start, at most this long.
constexpr auto browser_deadline = 90s;

// Asks `target` until `done` holds for its parse, at most history_deadline.
template <class Message, class Done>
Message await_view(uint16_t port, const std::string& target, Done done) {
  Message view;
  auto until = std::chrono::steady_clock::now() + history_deadline;
  for (;;) {
    auto reply = http_get(port, target);
    view.Clear();
    if (reply.status == 200 && !parse_json(reply.body, view, target) && done(view)) return view;
    if (std::chrono::steady_clock::now() >= until) return view;
    std::this_thread::sleep_for(status_poll_pace);
  }
}

bool lane_has(const wire::TimelineLane& lane, const std::string& event) {
  for (const auto& e : lane.events())
    if (e.event() == event) return true;
  return false;
}

// Headless Chromium's run on `url` with `extra`, its output merged.
std::pair<int, std::string> browse(const std::string& chromium, const fs::path& profile,
                                   const std::string& url, const std::vector<std::string>& extra) {
  child_process browser{chromium_command(chromium, profile.string(), url, extra, 4000, page_height),
                        true};
  output_log out{browser};
  out.read_all(browser_deadline);
  return {exit_code(browser, browser_deadline), out.text()};
}

TEST(status_page_job_test, the_coordinators_page_draws_the_last_decision_after_a_restart) {
  auto chromium = find_in_path(chromium_name);
  if (chromium.empty()) GTEST_SKIP() << chromium_missing;
  scratch_dir dir{"apps-status-page"};
  child_process run{status_job_command(lifeboat::test::built(LIFEBOAT_LAUNCH),
                                       lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt", workers),
                    true, environment_with({{"LIFEBOAT_PLATFORM", "generic"}})};
  output_log log{run};
  ASSERT_TRUE(log.read_until_count(worker_status_listening, workers)) << log.text();
  auto port = launcher_status_port(log);
  ASSERT_NE(port, 0) << log.text();

  // Training shows in /rates before the notice.
  auto rates = await_view<wire::StepRates>(port, "/rates", [](const wire::StepRates& r) {
    if (r.ranks_size() != workers) return false;
    for (const auto& lane : r.ranks())
      if (lane.steps_per_s_size() == 0 || lane.steps_per_s(lane.steps_per_s_size() - 1) <= 0)
        return false;
    return true;
  });
  ASSERT_EQ(rates.ranks_size(), workers) << log.text();
  auto first = fetch_status(port);
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->has_preemption());
  EXPECT_EQ(first->preemption().state(), "no notice");

  auto pids = log.pids(0);
  ASSERT_EQ(pids.size(), static_cast<size_t>(workers)) << log.text();
  auto trained = await_view<wire::Status>(port, "/status", [](const wire::Status& st) {
    if (st.workers_size() != workers) return false;
    for (const auto& w : st.workers())
      if (w.step() < steps_before_notice) return false;
    return true;
  });
  ASSERT_EQ(trained.workers_size(), workers) << log.text();
  ::kill(pids[noticed_rank], SIGTERM);
  ASSERT_TRUE(log.read_until_count("lifeboat-launch: rank=", 2 * workers)) << log.text();
  auto agreed = log.agreed_steps();
  ASSERT_EQ(agreed.size(), static_cast<size_t>(workers)) << log.text();

  // Generation 0's decision: every rank's lane, from the notice to the exit.
  auto timeline = await_view<wire::Timeline>(port, "/timeline", [](const wire::Timeline& t) {
    if (t.lanes_size() != workers) return false;
    for (const auto& lane : t.lanes())
      if (!lane_has(lane, "exit")) return false;
    return true;
  });
  ASSERT_EQ(timeline.lanes_size(), workers) << log.text();
  EXPECT_EQ(timeline.generation(), 0u);
  for (const auto& lane : timeline.lanes()) {
    SCOPED_TRACE("rank " + std::to_string(lane.rank()));
    for (const char* event : {"agreement", "snapshot", "shard durable", "commit", "exit"})
      EXPECT_TRUE(lane_has(lane, event)) << event;
    for (const auto& e : lane.events()) EXPECT_GE(e.ms(), 0) << e.event();
  }
  EXPECT_TRUE(lane_has(timeline.lanes(noticed_rank), "notice"));
  EXPECT_TRUE(lane_has(timeline.lanes(0), "report"));
  auto checkpoints = await_view<wire::CheckpointList>(
      port, "/checkpoints", [](const wire::CheckpointList& c) { return c.checkpoints_size() > 0; });
  ASSERT_GT(checkpoints.checkpoints_size(), 0) << log.text();
  const auto& saved = checkpoints.checkpoints(checkpoints.checkpoints_size() - 1);
  EXPECT_EQ(saved.step(), static_cast<double>(agreed[0]));
  EXPECT_TRUE(saved.after_notice());
  EXPECT_EQ(saved.shards(), workers);
  EXPECT_GT(saved.mb_per_s(), 0);
  // The job's last checkpoint, which the restarted workers went on from.
  auto job = await_view<wire::Status>(port, "/status", [&](const wire::Status& st) {
    return st.last_checkpoint().step() == agreed[0];
  });
  EXPECT_EQ(job.last_checkpoint().step(), agreed[0]) << log.text();

  // The page, as a browser draws it from these views.
  fs::path shots = lifeboat::test::build_tree() / "screenshots";
  fs::create_directories(shots);
  auto url = "http://127.0.0.1:" + std::to_string(port) + "/";
  auto [dumped, dom] = browse(chromium, dir / "profile-dom", url, {"--dump-dom"});
  ASSERT_EQ(dumped, 0) << dom;
  auto step_row = "<tr data-step=\"" + std::to_string(agreed[0]) + "\" data-kind=\"after notice\">";
  for (const std::string& part :
       {std::string{"coordinator of 2 workers"}, std::string{"data-lane=\"0\""},
        std::string{"data-lane=\"1\""}, std::string{"data-event=\"notice\""},
        std::string{"data-event=\"exit\""}, step_row, std::string{"<polyline"},
        std::string{"data-actor=\"preemption_watcher\""}, std::string{"<div id=\"error\"></div>"}})
    EXPECT_NE(dom.find(part), std::string::npos) << part << "\n" << dom;
  // Its card names the step (the path is the directory's until the new
  // generation's workers record the copy they restored).
  auto card = dom.find("id=\"checkpoint\"");
  ASSERT_NE(card, std::string::npos) << dom;
  auto card_text = dom.substr(card, dom.find("</div>", card) - card);
  EXPECT_NE(card_text.find("\">step " + std::to_string(agreed[0]) + " "), std::string::npos)
      << card_text;
  auto png = shots / "status-coordinator.png";
  auto [shot, shot_out] =
      browse(chromium, dir / "profile-shot", url, {"--screenshot=" + png.string()});
  EXPECT_EQ(shot, 0) << shot_out;
  EXPECT_TRUE(fs::exists(png)) << shot_out;
  RecordProperty("screenshot", png.string());

  run.kill(SIGINT);
  log.read_all();
  exit_code(run);
}

}  // namespace
