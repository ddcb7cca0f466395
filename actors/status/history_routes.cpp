#include "actors/status/history_routes.hpp"

namespace lifeboat {

namespace {

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

status_http_reply history_reply(const caf::expected<std::string>& answer) {
  if (!answer) return {503, text_type, "history unavailable\n", {}};
  return {200, json_type, *answer, {}};
}

status_http_reply no_history_reply() { return {404, text_type, "no history here\n", {}}; }

}  // namespace lifeboat
