#include "actors/status/status_metrics.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "actors/status/status_endpoint.hpp"
#include "tests/actors/status/status_test_support.hpp"

namespace lifeboat {
namespace {

using test::actor_status;

std::string render(const std::vector<wire::ActorStatus>& answers) {
  status_endpoint_state state{0, 2};
  return render_metrics(state.merge(answers), answers);
}

bool contains_line(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(status_metrics, renders_the_merged_status_as_gauges) {
  auto text = render(test::saving_cluster());
  for (const char* line : {
           "lifeboat_rank 0",
           "lifeboat_world_size 2",
           "lifeboat_step 120",
           "lifeboat_healthy 1",
           "lifeboat_phase{phase=\"saving\"} 1",
           "lifeboat_phase{phase=\"grace_countdown\"} 0",
           "lifeboat_last_checkpoint_step 100",
           "lifeboat_last_checkpoint_bytes 6000000000",
           "lifeboat_last_checkpoint_seconds 0.75",
           "lifeboat_actor_mailbox{actor=\"coordination_service\"} 1",
           "lifeboat_worker_step{rank=\"1\"} 119",
           "lifeboat_worker_last_heartbeat_ms{rank=\"0\"} 15",
           "lifeboat_worker_state{rank=\"1\",state=\"alive\"} 1",
           "lifeboat_worker_phase{rank=\"1\",phase=\"checkpoint_scheduled\"} 1",
           "lifeboat_save_seconds{actor=\"checkpoint_writer\"} 0.75",
           "lifeboat_heartbeats_missed{actor=\"coordination_service\"} 0",
       }) {
    EXPECT_TRUE(contains_line(text, line)) << line << "\n" << text;
  }
}

TEST(status_metrics, gives_the_seconds_of_each_tier_of_the_last_save_and_the_restore) {
  auto answers = test::saving_cluster();
  wire::ActorStatus writer;
  writer.set_name("checkpoint_writer");
  for (auto [name, seconds] : {std::pair{"memory", 0.5}, std::pair{"directory", 2.0}}) {
    auto* tier = writer.mutable_last_checkpoint()->add_tiers();
    tier->set_name(name);
    tier->set_seconds(seconds);
  }
  writer.mutable_last_checkpoint()->set_step(200);
  auto* restored = writer.mutable_restored()->add_tiers();
  restored->set_name("memory");
  restored->set_seconds(0.25);
  answers.insert(answers.begin(), writer);
  auto text = render(answers);
  for (const char* line : {
           "lifeboat_last_checkpoint_tier_seconds{tier=\"memory\"} 0.5",
           "lifeboat_last_checkpoint_tier_seconds{tier=\"directory\"} 2",
           "lifeboat_restore_seconds{tier=\"memory\"} 0.25",
       }) {
    EXPECT_TRUE(contains_line(text, line)) << line << "\n" << text;
  }
}

TEST(status_metrics, gives_every_family_one_help_and_type_line_before_its_samples) {
  auto answers = test::saving_cluster();
  // The same metric name from two actors stays one family with two samples.
  (*answers[0].mutable_metrics())["notices"] = 2;
  auto text = render(answers);
  std::map<std::string, int> help;
  std::map<std::string, int> type;
  std::string current;
  std::istringstream lines{text};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words{line};
    std::string first;
    std::string second;
    std::string name;
    words >> first >> second >> name;
    if (first == "#" && second == "HELP") {
      ++help[name];
      current = name;
    } else if (first == "#" && second == "TYPE") {
      ++type[name];
      EXPECT_EQ(name, current);
      auto kind = name.size() > 6 && name.substr(name.size() - 6) == "_total" ? "counter" : "gauge";
      EXPECT_EQ(line, "# TYPE " + name + " " + kind);
    } else {
      auto metric = first.substr(0, first.find('{'));
      EXPECT_EQ(metric, current) << line;
    }
  }
  for (const auto& [name, count] : help) {
    EXPECT_EQ(count, 1) << name;
    EXPECT_EQ(type[name], 1) << name;
  }
  EXPECT_TRUE(contains_line(text, "lifeboat_notices{actor=\"signal_watcher\"} 2"));
  EXPECT_TRUE(contains_line(text, "lifeboat_notices{actor=\"step_resolver\"} 1"));
}

// Prometheus's rule: a counter's name ends in _total; rate() over a gauge
// that only grows would still work, but the TYPE line would say otherwise.
TEST(status_metrics, names_ending_in_total_are_counters_and_the_rest_gauges) {
  auto writer = actor_status("checkpoint_writer", "running", 0);
  (*writer.mutable_metrics())["saves_total"] = 3;
  (*writer.mutable_metrics())["totals"] = 1;
  (*writer.mutable_metrics())["_total"] = 1;
  auto text = render({writer});
  EXPECT_TRUE(contains_line(text, "# TYPE lifeboat_saves_total counter")) << text;
  EXPECT_TRUE(contains_line(text, "lifeboat_saves_total{actor=\"checkpoint_writer\"} 3")) << text;
  EXPECT_TRUE(contains_line(text, "# TYPE lifeboat_totals gauge")) << text;
  EXPECT_TRUE(contains_line(text, "# TYPE lifeboat__total counter")) << text;
  EXPECT_TRUE(contains_line(text, "# TYPE lifeboat_step gauge")) << text;
}

TEST(status_metrics, sanitizes_names_and_escapes_labels) {
  auto odd = actor_status("we\"ird\\actor\n", "running", 0);
  (*odd.mutable_metrics())["bytes/s-peak"] = 1.5;
  auto text = render({odd});
  EXPECT_TRUE(contains_line(text, "lifeboat_bytes_s_peak{actor=\"we\\\"ird\\\\actor\\n\"} 1.5"))
      << text;
}

TEST(status_metrics, reports_an_unhealthy_cluster_and_an_unknown_phase) {
  auto resolver = actor_status("step_resolver", "unresponsive", 0);
  resolver.set_phase("warming_up");
  auto text = render({resolver});
  EXPECT_TRUE(contains_line(text, "lifeboat_healthy 0"));
  EXPECT_TRUE(contains_line(text, "lifeboat_phase{phase=\"warming_up\"} 1"));
  EXPECT_TRUE(contains_line(text, "lifeboat_phase{phase=\"training\"} 0"));
}

}  // namespace
}  // namespace lifeboat
