#include "actors/status/history_routes.hpp"

#include <chrono>
#include <utility>

namespace lifeboat {

namespace {

// The history answers from memory; the endpoint does not wait longer.
constexpr auto history_ask_timeout = std::chrono::milliseconds{500};
constexpr const char* json_type = "application/json";
constexpr const char* text_type = "text/plain; charset=utf-8";

}  // namespace

std::optional<history_view> history_view_of(const std::string& method, const std::string& target) {
  if (method != "GET") return std::nullopt;
  auto path = target.substr(0, target.find('?'));
  if (path == "/rates") return history_view::rates;
  if (path == "/timeline") return history_view::timeline;
  if (path == "/checkpoints") return history_view::checkpoints;
  return std::nullopt;
}

void answer_history(caf::event_based_actor* self, const caf::actor& history, history_view view,
                    std::function<void(status_http_reply)> done) {
  if (!history) {
    done({404, text_type, "no history here\n", {}});
    return;
  }
  self->request(history, history_ask_timeout, history_atom::value, static_cast<int32_t>(view))
      .then(
          [done](const std::string& json) {
            done({200, json_type, json, {}});
          },
          [done](caf::error&) {
            done({503, text_type, "history unavailable\n", {}});
          });
}

}  // namespace lifeboat
