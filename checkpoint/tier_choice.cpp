#include "checkpoint/tier_choice.hpp"

#include <algorithm>

namespace lifeboat::checkpoint {

namespace {

// The weight of the newest measurement in the moving average.
constexpr double newest_weight = 0.5;

}  // namespace

bool memory_only(const std::vector<std::string>& votes) {
  bool all_in_memory = std::none_of(votes.begin(), votes.end(),
                                    [](const std::string& v) { return v == vote_no_memory; });
  bool one_too_slow = std::any_of(votes.begin(), votes.end(),
                                  [](const std::string& v) { return v == vote_directory_slow; });
  return all_in_memory && one_too_slow;
}

void bandwidth_meter::record(uint64_t bytes, double seconds) {
  if (bytes == 0 || seconds <= 0) return;
  double rate = static_cast<double>(bytes) / seconds;
  rate_ = rate_ ? newest_weight * rate + (1 - newest_weight) * *rate_ : rate;
}

std::optional<double> bandwidth_meter::seconds_for(uint64_t bytes) const {
  if (!rate_) return std::nullopt;
  return static_cast<double>(bytes) / *rate_;
}

bool ends_in_time(const bandwidth_meter& meter, uint64_t bytes, int64_t deadline_unix_ms,
                  int64_t now_unix_ms) {
  auto needed = meter.seconds_for(bytes);
  if (!needed) return true;
  double left_s = static_cast<double>(deadline_unix_ms - deadline_reserve_ms - now_unix_ms) / 1000;
  return *needed <= left_s;
}

std::string tier_vote(bool in_memory, const bandwidth_meter& meter, uint64_t bytes,
                      int64_t deadline_unix_ms, int64_t now_unix_ms) {
  if (!in_memory) return vote_no_memory;
  return ends_in_time(meter, bytes, deadline_unix_ms, now_unix_ms) ? vote_directory_fits
                                                                   : vote_directory_slow;
}

}  // namespace lifeboat::checkpoint
