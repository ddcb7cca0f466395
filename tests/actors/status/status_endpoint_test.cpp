#include "actors/status/status_endpoint.hpp"

#include <gtest/gtest.h>

#include <random>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "platform/http_client.hpp"
#include "tests/actors/status/status_endpoint_fixture.hpp"
#include "tests/actors/status/status_test_support.hpp"
#include "tests/support/actor_probe.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
using route = status_endpoint_state::route;
using test::actor_status;
using test::clock_type;
using test::raw_connection;
using test::saving_cluster;

google::protobuf::Struct parse_json(const std::string& text) {
  google::protobuf::Struct out;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &out).ok()) << text;
  return out;
}

const google::protobuf::Value& field(const google::protobuf::Struct& s, const std::string& name) {
  static const google::protobuf::Value missing;
  auto i = s.fields().find(name);
  EXPECT_NE(i, s.fields().end()) << "no field " << name;
  return i == s.fields().end() ? missing : i->second;
}

double number(const google::protobuf::Struct& s, const std::string& name) {
  const auto& v = field(s, name);
  EXPECT_EQ(v.kind_case(), google::protobuf::Value::kNumberValue) << name << " is not a number";
  return v.number_value();
}

std::string text(const google::protobuf::Struct& s, const std::string& name) {
  const auto& v = field(s, name);
  EXPECT_EQ(v.kind_case(), google::protobuf::Value::kStringValue) << name << " is not a string";
  return v.string_value();
}

// -- the plain state, without scheduler or socket -----------------------------

TEST(status_endpoint_state, routes_by_method_and_path) {
  EXPECT_EQ(status_endpoint_state::classify("GET", "/status"), route::status);
  EXPECT_EQ(status_endpoint_state::classify("GET", "/status?pretty=1"), route::status);
  EXPECT_EQ(status_endpoint_state::classify("GET", "/metrics"), route::metrics);
  EXPECT_EQ(status_endpoint_state::classify("GET", "/healthz"), route::healthz);
  EXPECT_EQ(status_endpoint_state::classify("GET", "/"), route::page);
  EXPECT_EQ(status_endpoint_state::classify("GET", "/statusx"), route::not_found);
  EXPECT_EQ(status_endpoint_state::classify("POST", "/status"), route::method_not_allowed);
  EXPECT_EQ(status_endpoint_state::classify("HEAD", "/"), route::method_not_allowed);
  EXPECT_TRUE(status_endpoint_state::needs_answers(route::status));
  EXPECT_FALSE(status_endpoint_state::needs_answers(route::page));
}

TEST(status_endpoint_state, merges_each_part_from_the_actor_that_owns_it) {
  status_endpoint_state state{1, 4};
  auto answers = saving_cluster();
  auto merged = state.merge(answers);
  EXPECT_EQ(merged.rank(), 1);
  EXPECT_EQ(merged.world_size(), 4);
  EXPECT_EQ(merged.step(), 120);
  EXPECT_EQ(merged.phase(), "saving");
  EXPECT_EQ(merged.last_checkpoint().path(), "/ckpt/step-100");
  EXPECT_EQ(merged.last_checkpoint().bytes(), 6'000'000'000);
  EXPECT_EQ(merged.restored().step(), 40);
  EXPECT_EQ(merged.restored().path(), "/dev/shm/job/step-40");
  ASSERT_EQ(merged.restored().tiers_size(), 1);
  EXPECT_EQ(merged.restored().tiers(0).name(), "memory");
  ASSERT_EQ(merged.workers_size(), 2);
  EXPECT_EQ(merged.workers(1).step(), 119);
  ASSERT_EQ(merged.actors_size(), 4);
  EXPECT_EQ(merged.actors(1).name(), "step_resolver");
  EXPECT_EQ(merged.actors(1).mailbox(), 2);
  EXPECT_TRUE(merged.healthy());
}

TEST(status_endpoint_state, reports_training_and_no_checkpoint_when_nobody_knows_better) {
  status_endpoint_state state{0, 1};
  auto merged = state.merge({actor_status("signal_watcher", "running", 0)});
  EXPECT_EQ(merged.phase(), "training");
  EXPECT_EQ(merged.step(), 0);
  EXPECT_TRUE(merged.has_last_checkpoint());
  // A worker that started from scratch restored nothing, and says so.
  EXPECT_TRUE(merged.has_restored());
  EXPECT_EQ(merged.restored().path(), "");
  EXPECT_EQ(merged.workers_size(), 0);
}

TEST(status_endpoint_state, is_unhealthy_when_an_actor_is_silent_down_or_failed) {
  for (const char* bad : {"unresponsive", "down", "error"}) {
    EXPECT_FALSE(status_endpoint_state::healthy(
        {actor_status("a", "running", 0), actor_status("b", bad, 0)}))
        << bad;
  }
  EXPECT_TRUE(status_endpoint_state::healthy({actor_status("a", "saving", 0)}));
}

TEST(status_endpoint_state, renders_integers_as_json_numbers_and_leaves_strings_alone) {
  wire::Status status;
  status.set_step(9'007'199'254);
  status.set_phase("training");
  // A path that looks like an integer field must stay a string.
  status.mutable_last_checkpoint()->set_path(R"(/ck"step":"5")");
  status.mutable_last_checkpoint()->set_bytes(-3);
  auto* actor = status.add_actors();
  actor->set_name("step");
  actor->set_mailbox(7);
  auto* worker = status.add_workers();
  worker->set_last_heartbeat_ms(1234);
  auto json = parse_json(status_to_json(status));
  EXPECT_EQ(number(json, "step"), 9'007'199'254);
  EXPECT_EQ(number(json, "rank"), 0);
  EXPECT_FALSE(field(json, "healthy").bool_value());
  const auto& ckpt = field(json, "last_checkpoint").struct_value();
  EXPECT_EQ(text(ckpt, "path"), R"(/ck"step":"5")");
  EXPECT_EQ(number(ckpt, "bytes"), -3);
  EXPECT_EQ(number(ckpt, "seconds"), 0);
  const auto& a = field(json, "actors").list_value().values(0).struct_value();
  EXPECT_EQ(text(a, "name"), "step");
  EXPECT_EQ(number(a, "mailbox"), 7);
  const auto& w = field(json, "workers").list_value().values(0).struct_value();
  EXPECT_EQ(number(w, "last_heartbeat_ms"), 1234);
  EXPECT_EQ(text(w, "state"), "");
}

TEST(status_endpoint_state, names_a_silent_actor_by_what_it_said_before) {
  status_endpoint_state state{0, 1};
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto target = sys.spawn(test::fixed_status_actor, actor_status("poll_watcher", "running", 0));
  auto addr = target.address();
  EXPECT_EQ(state.missing_answer(addr, "down").name(), "actor#" + std::to_string(addr.id()));
  state.learn_name(addr, "poll_watcher");
  auto missing = state.missing_answer(addr, "unresponsive");
  EXPECT_EQ(missing.name(), "poll_watcher");
  EXPECT_EQ(missing.state(), "unresponsive");
  caf::anon_send_exit(target, caf::exit_reason::user_shutdown);
}

TEST(status_endpoint_state, renders_fixed_routes_without_answers) {
  status_endpoint_state state{0, 1};
  EXPECT_EQ(state.render(route::not_found, {}).status, 404u);
  auto not_allowed = state.render(route::method_not_allowed, {});
  EXPECT_EQ(not_allowed.status, 405u);
  ASSERT_EQ(not_allowed.headers.size(), 1u);
  EXPECT_EQ(not_allowed.headers[0].second, "GET");
  EXPECT_NE(state.render(route::page, {}).body.find("<html"), std::string::npos);
  auto sick = state.render(route::healthz, {actor_status("exit_controller", "unresponsive", 0)});
  EXPECT_EQ(sick.status, 503u);
  EXPECT_NE(sick.body.find("exit_controller=unresponsive"), std::string::npos);
}

// -- the endpoint over a real socket -------------------------------------------

class status_endpoint_test : public test::status_endpoint_fixture {};

TEST_F(status_endpoint_test, serves_the_merged_status_as_json_with_numbers) {
  start(saving_cluster());
  auto res = get("/status");
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(res.header("Content-Type").value_or(""), "application/json");
  auto json = parse_json(res.body);
  EXPECT_EQ(number(json, "rank"), 0);
  EXPECT_EQ(number(json, "world_size"), 2);
  EXPECT_EQ(number(json, "step"), 120);
  EXPECT_EQ(text(json, "phase"), "saving");
  const auto& ckpt = field(json, "last_checkpoint").struct_value();
  EXPECT_EQ(number(ckpt, "step"), 100);
  EXPECT_EQ(text(ckpt, "path"), "/ckpt/step-100");
  EXPECT_EQ(number(ckpt, "bytes"), 6'000'000'000);
  EXPECT_EQ(number(ckpt, "seconds"), 0.75);
  const auto& actors = field(json, "actors").list_value();
  std::vector<std::string> names;
  for (const auto& a : actors.values()) {
    names.push_back(text(a.struct_value(), "name"));
    EXPECT_EQ(text(a.struct_value(), "state"), "running");
    number(a.struct_value(), "mailbox");
  }
  EXPECT_EQ(names, (std::vector<std::string>{"signal_watcher", "step_resolver", "checkpoint_writer",
                                             "coordination_service", "status_endpoint"}));
  EXPECT_EQ(number(actors.values(1).struct_value(), "mailbox"), 2);
  const auto& workers = field(json, "workers").list_value();
  ASSERT_EQ(workers.values_size(), 2);
  const auto& w1 = workers.values(1).struct_value();
  EXPECT_EQ(number(w1, "rank"), 1);
  EXPECT_EQ(number(w1, "step"), 119);
  EXPECT_EQ(number(w1, "last_heartbeat_ms"), 16);
  EXPECT_EQ(text(w1, "state"), "alive");
}

TEST_F(status_endpoint_test, serves_metrics_health_page_and_errors) {
  start(saving_cluster());
  auto metrics = get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.header("Content-Type").value_or("").find("version=0.0.4"), std::string::npos);
  for (const char* line :
       {"lifeboat_step 120\n", "lifeboat_phase{phase=\"saving\"} 1\n",
        "lifeboat_phase{phase=\"training\"} 0\n", "lifeboat_last_checkpoint_step 100\n",
        "lifeboat_last_checkpoint_bytes 6000000000\n", "lifeboat_last_checkpoint_seconds 0.75\n",
        "lifeboat_saves{actor=\"checkpoint_writer\"} 3\n",
        "lifeboat_notices{actor=\"step_resolver\"} 1\n",
        "lifeboat_actor_mailbox{actor=\"step_resolver\"} 2\n",
        "lifeboat_status_requests_total{actor=\"status_endpoint\"} 1\n",
        "# TYPE lifeboat_status_requests_total counter\n", "# TYPE lifeboat_step gauge\n"}) {
    EXPECT_NE(metrics.body.find(line), std::string::npos) << line << "\n" << metrics.body;
  }
  auto health = get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  auto page = get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.header("Content-Type").value_or(""), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("fetch(\"/status\""), std::string::npos);
  EXPECT_EQ(get("/nothing-here").status, 404);
  auto post = get("/status", "POST");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.header("Allow").value_or(""), "GET");
}

TEST_F(status_endpoint_test, logs_the_port_it_listens_on) {
  testing::internal::CaptureStderr();
  start({actor_status("signal_watcher", "running", 0)});
  auto err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("status_endpoint: status endpoint listening on 127.0.0.1:" +
                     std::to_string(port_) + "\n"),
            std::string::npos)
      << err;
}

TEST_F(status_endpoint_test, marks_a_silent_actor_unresponsive_and_turns_unhealthy) {
  status_endpoint_config cfg;
  cfg.ask_timeout = 200ms;
  actors_.push_back(sys_.spawn(test::silent_status_actor, "step_resolver"));
  cfg.observed.push_back(actors_.back());
  start(saving_cluster(), cfg);
  auto json = parse_json(get("/status").body);
  const auto& first = field(json, "actors").list_value().values(0).struct_value();
  EXPECT_EQ(text(first, "state"), "unresponsive");
  EXPECT_EQ(number(json, "step"), 120);
  EXPECT_FALSE(field(json, "healthy").bool_value());
  auto health = get("/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_NE(health.body.find("=unresponsive"), std::string::npos);
}

TEST_F(status_endpoint_test, observes_actors_added_later_and_reports_dead_ones_as_down) {
  start({actor_status("signal_watcher", "running", 0)});
  auto late = spawn_fixed(actor_status("exit_controller", "idle", 0));
  caf::anon_send(endpoint_, caf::add_atom::value, late);
  auto json = parse_json(get("/status").body);
  const auto& actors = field(json, "actors").list_value();
  ASSERT_EQ(actors.values_size(), 3);
  EXPECT_EQ(text(actors.values(1).struct_value(), "name"), "exit_controller");
  EXPECT_EQ(text(actors.values(1).struct_value(), "state"), "idle");
  {
    caf::scoped_actor self{sys_};
    caf::anon_send_exit(late, caf::exit_reason::user_shutdown);
    self->wait_for(late);
  }
  json = parse_json(get("/status").body);
  const auto& after = field(json, "actors").list_value().values(1).struct_value();
  EXPECT_EQ(text(after, "name"), "exit_controller");
  EXPECT_EQ(text(after, "state"), "down");
}

TEST_F(status_endpoint_test, answers_its_own_status_request) {
  start({});
  get("/status");
  caf::scoped_actor self{sys_};
  auto own = test::status_of(self, endpoint_);
  EXPECT_EQ(own.name(), "status_endpoint");
  EXPECT_EQ(own.state(), "running");
  EXPECT_EQ(own.metrics().at("status_requests_total"), 1);
}

TEST_F(status_endpoint_test, stops_listening_promptly_when_stopped) {
  start(saving_cluster());
  raw_connection idle{port_};
  ASSERT_TRUE(idle.connected());
  auto port = port_;
  stop_status_endpoint(endpoint_);
  EXPECT_TRUE(test::port_closed_before(port, clock_type::now() + 5s));
  EXPECT_TRUE(idle.read_until_close(clock_type::now() + 5s));
}

TEST_F(status_endpoint_test, keeps_serving_after_a_thousand_malformed_requests) {
  constexpr int random_requests = 700;
  constexpr int huge_headers = 150;
  constexpr int huge_bodies = 50;
  constexpr int slow_requests = 100;
  constexpr int slow_batch = 50;
  status_endpoint_config cfg;
  cfg.limits.read_timeout = 300ms;
  start(saving_cluster(), cfg);
  auto started = clock_type::now();
  auto close_deadline = [] { return clock_type::now() + 5s; };
  // A malformed request is answered 400 and closed; the client may also see
  // the close (or a reset) before the 400 when it had sent more than was read.
  auto bad_or_closed = [](const std::optional<std::string>& reply) {
    return reply && (reply->empty() || reply->rfind("HTTP/1.1 400", 0) == 0);
  };
  std::mt19937 rng{20261122};
  std::uniform_int_distribution<int> byte{0, 255};
  std::uniform_int_distribution<int> length{1, 2048};
  for (int i = 0; i < random_requests; ++i) {
    raw_connection c{port_};
    ASSERT_TRUE(c.connected());
    std::string junk(static_cast<std::size_t>(length(rng)), '\0');
    for (auto& ch : junk) ch = static_cast<char>(byte(rng));
    c.send(junk);
    c.shutdown_send();
    ASSERT_TRUE(bad_or_closed(c.read_until_close(close_deadline()))) << "random request " << i;
  }
  const std::string big_header =
      "GET /status HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(16 * 1024, 'a') + "\r\n\r\n";
  for (int i = 0; i < huge_headers; ++i) {
    raw_connection c{port_};
    c.send(big_header);
    ASSERT_TRUE(bad_or_closed(c.read_until_close(close_deadline()))) << "huge header " << i;
  }
  const std::string big_body = "GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n";
  for (int i = 0; i < huge_bodies; ++i) {
    raw_connection c{port_};
    c.send(big_body);
    ASSERT_TRUE(bad_or_closed(c.read_until_close(close_deadline()))) << "huge body " << i;
  }
  // Slowloris: requests that never finish, many at once; each is cut off at
  // the read timeout.
  for (int batch = 0; batch < slow_requests / slow_batch; ++batch) {
    std::vector<std::unique_ptr<raw_connection>> slow;
    for (int i = 0; i < slow_batch; ++i) {
      slow.push_back(std::make_unique<raw_connection>(port_));
      slow.back()->send("GET /status HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    }
    for (auto& c : slow) ASSERT_TRUE(c->read_until_close(close_deadline()));
  }
  auto res = get("/status");
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(number(parse_json(res.body), "step"), 120);
  auto metrics = get("/metrics").body;
  auto value_of = [&](const std::string& name) {
    auto key = name + "{actor=\"status_endpoint\"} ";
    auto pos = metrics.find(key);
    EXPECT_NE(pos, std::string::npos) << key;
    return pos == std::string::npos ? 0.0 : std::stod(metrics.substr(pos + key.size()));
  };
  EXPECT_EQ(value_of("lifeboat_status_bad_requests_total"),
            random_requests + huge_headers + huge_bodies);
  EXPECT_EQ(value_of("lifeboat_status_read_timeouts_total"), slow_requests);
  EXPECT_LT(clock_type::now() - started, 30s);
}

}  // namespace
}  // namespace lifeboat
