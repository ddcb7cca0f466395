#include "checkpoint/memory_budget.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "platform/text_parse.hpp"

namespace lifeboat::checkpoint {

namespace {

// cgroup v1 reports "no limit" as the page counter's maximum, rounded to a
// page: anything this large is none.
constexpr uint64_t no_v1_limit = uint64_t{1} << 62;

// A cgroup file's one number and its newline.
std::optional<uint64_t> parse_bytes(const std::string& text) {
  auto end = text.find_last_not_of('\n');
  if (end == std::string::npos) return std::nullopt;
  auto value = parse_integer(std::string_view{text}.substr(0, end + 1), "a cgroup's memory figure",
                             0, std::numeric_limits<int64_t>::max());
  if (!value) return std::nullopt;
  return static_cast<uint64_t>(*value);
}

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// This process's cgroup files: v2's unified hierarchy ("0::/path"), else
// v1's memory controller ("N:memory:/path").
std::optional<memory_state> cgroup_memory() {
  std::istringstream lines{read_text("/proc/self/cgroup")};
  std::string line;
  while (std::getline(lines, line)) {
    auto first = line.find(':');
    auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    auto controllers = line.substr(first + 1, second - first - 1);
    auto path = line.substr(second + 1);
    if (controllers.empty()) {
      auto dir = "/sys/fs/cgroup" + path;
      if (auto state = parse_cgroup_memory(read_text(dir + "/memory.max"),
                                           read_text(dir + "/memory.current")))
        return state;
    } else if (controllers == "memory") {
      auto dir = "/sys/fs/cgroup/memory" + path;
      if (auto state = parse_cgroup_memory(read_text(dir + "/memory.limit_in_bytes"),
                                           read_text(dir + "/memory.usage_in_bytes")))
        return state;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<memory_state> parse_meminfo(const std::string& text) {
  std::optional<uint64_t> available;
  std::optional<uint64_t> total;
  std::istringstream lines{text};
  std::string name;
  uint64_t kib = 0;
  std::string unit;
  while (lines >> name >> kib) {
    std::getline(lines, unit);
    if (name == "MemAvailable:") available = kib * 1024;
    if (name == "MemTotal:") total = kib * 1024;
  }
  if (!available || !total) return std::nullopt;
  return memory_state{*available, *total};
}

std::optional<memory_state> parse_cgroup_memory(const std::string& limit,
                                                const std::string& usage) {
  auto max = parse_bytes(limit);
  auto used = parse_bytes(usage);
  if (!max || !used || *max >= no_v1_limit) return std::nullopt;
  return memory_state{*max > *used ? *max - *used : 0, *max};
}

uint64_t ram_room(const memory_state& state) {
  auto reserve = std::max(state.total / 100 * ram_reserve_percent, ram_reserve_floor);
  return state.available > reserve ? state.available - reserve : 0;
}

std::optional<uint64_t> host_ram_room() {
  std::optional<uint64_t> room;
  for (auto state : {parse_meminfo(read_text("/proc/meminfo")), cgroup_memory()}) {
    if (!state) continue;
    auto this_room = ram_room(*state);
    room = room ? std::min(*room, this_room) : this_room;
  }
  return room;
}

bool ram_backed(const std::string& dir) {
  struct statfs fs {};
  return ::statfs(dir.c_str(), &fs) == 0 && (static_cast<uint64_t>(fs.f_type) == TMPFS_MAGIC ||
                                             static_cast<uint64_t>(fs.f_type) == RAMFS_MAGIC);
}

}  // namespace lifeboat::checkpoint
