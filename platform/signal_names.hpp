#pragma once

#include <optional>
#include <string>

namespace lifeboat {

/// "SIGTERM", "TERM" or "15" -> 15; nothing for a name that is not a signal a
/// notice may come by (SIGKILL and SIGSTOP cannot be caught and are refused).
std::optional<int> signal_number(const std::string& name);

/// "SIGTERM" for 15, "SIGKILL" for 9: the name of any signal, "signal N"
/// for a number that is none.
std::string signal_name(int number);

/// The accepted names, for error messages: "SIGTERM, SIGINT, ...".
std::string known_signal_names();

}  // namespace lifeboat
