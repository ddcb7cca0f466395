#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <caf/expected.hpp>

#include "actors/atoms.hpp"
#include "actors/status/status_http_server.hpp"

namespace lifeboat {

/// The view a GET of `target` asks for, if it is a history route
/// (/rates, /timeline, /checkpoints; a query string is ignored).
std::optional<history_view> history_view_of(const std::string& method, const std::string& target);

/// How long an endpoint waits for its history (an actor answering
/// (history_atom, int32_t view) -> std::string): it answers from memory.
constexpr std::chrono::milliseconds history_ask_timeout{500};

/// The reply to a history route: 200 with the history's JSON, or 503 when it
/// did not answer within history_ask_timeout.
status_http_reply history_reply(const caf::expected<std::string>& answer);

/// The reply of an endpoint given no history: 404.
status_http_reply no_history_reply();

}  // namespace lifeboat
