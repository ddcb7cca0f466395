#include "runtime/config_check.hpp"

#include <cmath>

#include "actors/coordination/heartbeat_schedule.hpp"
#include "messages/errors.hpp"
#include "platform/signal_names.hpp"

namespace lifeboat {

caf::error check_config(const termination_config& config) {
  auto bad = [](std::string what) { return make_error(errc::invalid_config, std::move(what)); };
  if (config.grace_period && config.grace_period->count() < 0)
    return bad("grace_period must be >= 0, got " + std::to_string(config.grace_period->count()) +
               " ms");
  for (auto& name : config.signals)
    if (!signal_number(name))
      return bad("unknown signal '" + name + "' (known: " + known_signal_names() + ")");
  if (config.restart_code && !is_restart_code(*config.restart_code))
    return bad(std::string{"restart_code must be "} + restart_code_rule + ", got " +
               std::to_string(*config.restart_code));
  if (config.poll_interval.count() <= 0) return bad("poll_interval must be > 0");
  // NaN passes every comparison and an infinity every lower bound; either
  // would make the final save's schedule an undefined cast.
  if (!std::isfinite(config.safety_factor) || config.safety_factor < 1.0)
    return bad("safety_factor must be a finite number >= 1, got " +
               std::to_string(config.safety_factor));
  if (config.max_to_keep < 1)
    return bad("max_to_keep must be >= 1, got " + std::to_string(config.max_to_keep));
  if (config.save_every_steps < 0) return bad("save_every_steps must be >= 0");
  if (config.save_every_seconds.count() < 0) return bad("save_every_seconds must be >= 0");
  if (config.heartbeat_timeout < min_heartbeat_timeout)
    return bad("heartbeat_timeout must be at least " +
               std::to_string(min_heartbeat_timeout.count()) + " ms, got " +
               std::to_string(config.heartbeat_timeout.count()) + " ms");
  if (config.hang_timeout && config.hang_timeout->count() < 0)
    return bad("hang_timeout must be >= 0 (0: off)");
  return caf::none;
}

}  // namespace lifeboat
