#include "actors/status/history_routes.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "platform/http_client.hpp"
#include "tests/actors/status/status_endpoint_fixture.hpp"

namespace lifeboat {
namespace {

TEST(history_routes_test, names_the_three_views_of_a_get_and_nothing_else) {
  EXPECT_EQ(history_view_of("GET", "/rates"), history_view::rates);
  EXPECT_EQ(history_view_of("GET", "/timeline?x=1"), history_view::timeline);
  EXPECT_EQ(history_view_of("GET", "/checkpoints"), history_view::checkpoints);
  EXPECT_EQ(history_view_of("POST", "/rates"), std::nullopt);
  EXPECT_EQ(history_view_of("GET", "/status"), std::nullopt);
  EXPECT_EQ(history_view_of("GET", "/rates/more"), std::nullopt);
}

// Answers every view with its name and number, as the preemption module's
// history actors answer with JSON. (CAF 0.17 dereferences a null argument
// tuple when it spawns a function of no arguments: each takes one.)
caf::behavior numbered_history(std::string name) {
  return {
      [name](history_atom, int32_t view) {
        return "{\"" + name + "\":" + std::to_string(view) + "}";
      },
  };
}

// Takes the question and never answers; `held` keeps the promises unkept.
caf::behavior silent_history(caf::event_based_actor* self,
                             std::shared_ptr<std::vector<caf::response_promise>> held) {
  return {
      [self, held](history_atom, int32_t) -> caf::result<std::string> {
        held->push_back(self->make_response_promise());
        return caf::delegated<std::string>{};
      },
  };
}

class history_routes_endpoint_test : public test::status_endpoint_fixture {};

TEST_F(history_routes_endpoint_test, an_endpoint_without_a_history_answers_404) {
  start({});
  EXPECT_EQ(get("/rates").status, 404);
  EXPECT_EQ(get("/checkpoints").status, 404);
}

TEST_F(history_routes_endpoint_test, the_history_given_answers_each_view_as_json) {
  status_endpoint_config cfg;
  cfg.history = sys_.spawn(numbered_history, std::string{"view"});
  start({}, cfg);
  auto timeline = get("/timeline");
  EXPECT_EQ(timeline.status, 200);
  EXPECT_EQ(timeline.header("Content-Type").value_or(""), "application/json");
  EXPECT_EQ(timeline.body, "{\"view\":1}");
  EXPECT_EQ(get("/checkpoints").body, "{\"view\":2}");
}

TEST_F(history_routes_endpoint_test, a_history_that_does_not_answer_gives_503) {
  status_endpoint_config cfg;
  cfg.history = sys_.spawn(silent_history, std::make_shared<std::vector<caf::response_promise>>());
  start({}, cfg);
  auto rates = get("/rates");
  EXPECT_EQ(rates.status, 503);
  EXPECT_EQ(rates.body, "history unavailable\n");
}

}  // namespace
}  // namespace lifeboat
