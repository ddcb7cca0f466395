#include "checkpoint/layout.hpp"

#include <cctype>
#include <cstdio>

namespace lifeboat::checkpoint {

namespace {

constexpr const char step_prefix[] = "step-";
constexpr size_t step_digits = 12;

std::string shard_name(int rank, int world_size, const char* ext) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "shard-%05d-of-%05d.%s", rank, world_size, ext);
  return buf;
}

}  // namespace

std::string step_dir_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%012lld", step_prefix, static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> parse_step_dir_name(const std::string& name) {
  const std::string prefix = step_prefix;
  if (name.size() != prefix.size() + step_digits || name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  int64_t step = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::string shard_data_name(int rank, int world_size) {
  return shard_name(rank, world_size, "data");
}

std::string shard_index_name(int rank, int world_size) {
  return shard_name(rank, world_size, "index");
}

}  // namespace lifeboat::checkpoint
