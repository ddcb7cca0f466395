#pragma once

#include <map>
#include <string>

#include "platform/environment.hpp"

namespace lifeboat::testing {

/// An environment made of a table, so tests never touch the process environment.
/// The returned lookup refers to `table`, which must outlive it.
inline env_lookup table_env(const std::map<std::string, std::string>& table) {
  return [&table](const char* name) -> const char* {
    auto i = table.find(name);
    return i == table.end() ? nullptr : i->second.c_str();
  };
}

}  // namespace lifeboat::testing
