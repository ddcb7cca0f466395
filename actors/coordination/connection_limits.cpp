#include "actors/coordination/connection_limits.hpp"

#include <algorithm>

namespace lifeboat {

connection_limits::connection_limits(int64_t join_bound_ms, size_t max_unjoined)
    : join_bound_ms_(join_bound_ms), max_unjoined_(max_unjoined) {}

bool connection_limits::admit(conn_id conn, int64_t now_ms) {
  if (deadlines_.size() >= max_unjoined_) return false;
  deadlines_[conn] = now_ms + join_bound_ms_;
  return true;
}

void connection_limits::forget(conn_id conn) { deadlines_.erase(conn); }

std::vector<conn_id> connection_limits::take_expired(int64_t now_ms) {
  std::vector<conn_id> result;
  for (auto i = deadlines_.begin(); i != deadlines_.end();) {
    if (i->second <= now_ms) {
      result.push_back(i->first);
      i = deadlines_.erase(i);
    } else {
      ++i;
    }
  }
  return result;
}

std::optional<int64_t> connection_limits::next_deadline_ms() const {
  if (deadlines_.empty()) return std::nullopt;
  return std::min_element(deadlines_.begin(), deadlines_.end(),
                          [](const auto& x, const auto& y) { return x.second < y.second; })
      ->second;
}

}  // namespace lifeboat
