#pragma once

// Headless Chromium for the tests of the status page: where it is, and the
// command line that loads one URL with a fresh profile, runs its script for
// a budget of virtual time, then dumps the DOM or takes a screenshot.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace lifeboat::test {

/// The browser the tests look for in PATH.
constexpr const char* chromium_name = "chromium";

/// What a test that needs the browser says when it is absent.
constexpr const char* chromium_missing =
    "chromium is not installed (apt-get install -y chromium): the status page was NOT checked "
    "in a browser";

/// The executable `name` in PATH; empty when there is none.
inline std::string find_in_path(const std::string& name) {
  namespace fs = std::filesystem;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    auto end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    fs::path candidate = fs::path{dirs.substr(start, end - start)} / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return {};
}

/// Chromium on `url` with the profile in `profile_dir` (made fresh by the
/// caller), a 1200 x `height` window, `budget_ms` of virtual time for the
/// page's script, and `extra` (--dump-dom, --screenshot=PATH).
inline std::vector<std::string> chromium_command(const std::string& chromium,
                                                 const std::string& profile_dir,
                                                 const std::string& url,
                                                 const std::vector<std::string>& extra,
                                                 int budget_ms = 3000, int height = 800) {
  std::vector<std::string> argv{chromium,
                                "--headless",
                                "--no-sandbox",
                                "--disable-gpu",
                                "--disable-quic",
                                "--no-first-run",
                                "--disable-background-networking",
                                "--disable-component-update",
                                "--disable-sync",
                                "--user-data-dir=" + profile_dir,
                                "--window-size=1200," + std::to_string(height),
                                "--virtual-time-budget=" + std::to_string(budget_ms)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(url);
  return argv;
}

}  // namespace lifeboat::test
