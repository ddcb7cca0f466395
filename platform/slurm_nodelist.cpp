#include "platform/slurm_nodelist.hpp"

#include <string_view>

#include "messages/errors.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

namespace {

// Large enough for any real allocation, small enough that a typo such as
// "n[1-99999999]" fails instead of filling memory.
constexpr size_t kMaxHosts = 65536;
constexpr int64_t kMaxIndex = 999999999;

caf::error bad_list(const std::string& nodelist, const std::string& why) {
  return make_error(errc::invalid_config,
                    "SLURM_JOB_NODELIST='" + nodelist + "': " + why +
                        " (expected names and ranges such as 'node[01-04,07],login1')");
}

// Splits at commas outside brackets.
std::vector<std::string_view> split_top_level(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']') --depth;
    if (text[i] == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

// Expands the first bracket group of `name` and recurses on the rest, so that
// several groups give every combination in order.
caf::error expand_name(const std::string& nodelist, std::string_view name,
                       std::vector<std::string>& out) {
  auto open = name.find('[');
  if (open == std::string_view::npos) {
    if (name.find(']') != std::string_view::npos) return bad_list(nodelist, "unbalanced ']'");
    if (out.size() >= kMaxHosts) return bad_list(nodelist, "more than 65536 hosts");
    out.emplace_back(name);
    return caf::none;
  }
  auto close = name.find(']', open);
  if (close == std::string_view::npos) return bad_list(nodelist, "unclosed '['");
  auto prefix = name.substr(0, open);
  auto ranges = name.substr(open + 1, close - open - 1);
  auto suffix = name.substr(close + 1);
  if (ranges.empty()) return bad_list(nodelist, "empty '[]'");
  for (auto range : split_top_level(ranges)) {
    auto dash = range.find('-');
    auto low_text = range.substr(0, dash);
    auto high_text = dash == std::string_view::npos ? low_text : range.substr(dash + 1);
    auto low = parse_integer(low_text, "SLURM_JOB_NODELIST range bound", 0, kMaxIndex);
    auto high = parse_integer(high_text, "SLURM_JOB_NODELIST range bound", 0, kMaxIndex);
    if (!low || !high)
      return bad_list(nodelist, "range '" + std::string{range} + "' is not N or N-M");
    if (*low > *high)
      return bad_list(nodelist, "range '" + std::string{range} + "' runs backwards");
    for (auto index = *low; index <= *high; ++index) {
      auto digits = std::to_string(index);
      if (digits.size() < low_text.size()) digits.insert(0, low_text.size() - digits.size(), '0');
      auto name_with_index = std::string{prefix} + digits + std::string{suffix};
      if (auto err = expand_name(nodelist, name_with_index, out)) return err;
    }
  }
  return caf::none;
}

}  // namespace

caf::expected<std::vector<std::string>> expand_slurm_nodelist(const std::string& nodelist) {
  std::vector<std::string> hosts;
  for (auto item : split_top_level(nodelist)) {
    if (item.empty() || item.front() == '[') return bad_list(nodelist, "empty host name");
    if (auto err = expand_name(nodelist, item, hosts)) return err;
  }
  return hosts;
}

}  // namespace lifeboat
