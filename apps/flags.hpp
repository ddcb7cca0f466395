#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lifeboat::apps {

/// `--name value` command-line flags. Unknown flags, missing values and
/// malformed numbers are errors that name the flag and what was expected.
class flags {
 public:
  /// Parses argv[1..argc) up to a lone "--"; what follows it is `rest()`.
  /// On error returns nothing and sets `error`.
  static std::optional<flags> parse(int argc, char** argv, const std::set<std::string>& known,
                                    std::string& error);

  /// Whether argv[1..argc), up to a lone "--", asks for the usage (--help or
  /// -h): the app then prints it on stdout and exits 0.
  static bool asks_for_help(int argc, char** argv);

  bool has(const std::string& name) const { return values_.count(name) > 0; }

  /// The integer value of --name within [min, max], or `fallback` when absent.
  std::optional<int64_t> integer(const std::string& name, int64_t fallback, int64_t min,
                                 int64_t max, std::string& error) const;

  std::string text(const std::string& name, const std::string& fallback = {}) const;

  const std::vector<std::string>& rest() const { return rest_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> rest_;
};

}  // namespace lifeboat::apps
