#include "apps/flags.hpp"

#include <cerrno>
#include <cstdlib>

namespace lifeboat::apps {

std::optional<flags> flags::parse(int argc, char** argv, const std::set<std::string>& known,
                                  std::string& error) {
  flags result;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      result.rest_.assign(argv + i + 1, argv + argc);
      return result;
    }
    if (arg.compare(0, 2, "--") != 0 || known.count(arg.substr(2)) == 0) {
      error = "unknown argument '" + arg + "'";
      return std::nullopt;
    }
    if (i + 1 >= argc) {
      error = "flag '" + arg + "' needs a value";
      return std::nullopt;
    }
    result.values_[arg.substr(2)] = argv[++i];
  }
  return result;
}

std::optional<int64_t> flags::integer(const std::string& name, int64_t fallback, int64_t min,
                                      int64_t max, std::string& error) const {
  auto i = values_.find(name);
  if (i == values_.end()) return fallback;
  const char* text = i->second.c_str();
  char* end = nullptr;
  errno = 0;
  auto value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    error = "--" + name + " expects an integer in [" + std::to_string(min) + ", " +
            std::to_string(max) + "], got '" + i->second + "'";
    return std::nullopt;
  }
  return value;
}

std::string flags::text(const std::string& name, const std::string& fallback) const {
  auto i = values_.find(name);
  return i == values_.end() ? fallback : i->second;
}

bool flags::asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc && std::string{argv[i]} != "--"; ++i)
    if (std::string{argv[i]} == "--help" || std::string{argv[i]} == "-h") return true;
  return false;
}

}  // namespace lifeboat::apps
