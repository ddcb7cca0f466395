#include "checkpoint/tier_choice.hpp"

#include <algorithm>

namespace lifeboat::checkpoint {

namespace {

// The weight of the newest measurement in the moving average.
constexpr double newest_weight = 0.5;

// A directory report: "written" or "failed", " memory" when the rank holds
// the shard in memory, then ": " and the error of a failed write.
constexpr const char* report_written = "written";
constexpr const char* report_failed = "failed";
constexpr const char* report_in_memory = " memory";
constexpr const char* report_error_separator = ": ";

}  // namespace

bool memory_only(const std::vector<std::string>& votes) {
  bool all_in_memory = std::none_of(votes.begin(), votes.end(),
                                    [](const std::string& v) { return v == vote_no_memory; });
  bool one_too_slow = std::any_of(votes.begin(), votes.end(),
                                  [](const std::string& v) { return v == vote_directory_slow; });
  return all_in_memory && one_too_slow;
}

std::string encode(const directory_report& report) {
  std::string out = report.error.empty() ? report_written : report_failed;
  if (report.in_memory) out += report_in_memory;
  if (!report.error.empty()) out += report_error_separator + report.error;
  return out;
}

directory_report decode_directory_report(const std::string& text) {
  auto starts = [&](const std::string& prefix) { return text.rfind(prefix, 0) == 0; };
  directory_report out;
  std::string head = starts(report_written) ? report_written : report_failed;
  if (!starts(head)) {
    out.error = text.empty() ? "no report" : "unreadable report '" + text + "'";
    return out;
  }
  auto rest = text.substr(head.size());
  out.in_memory = rest.rfind(report_in_memory, 0) == 0;
  if (out.in_memory) rest = rest.substr(std::string{report_in_memory}.size());
  if (head == report_failed)
    out.error = rest.rfind(report_error_separator, 0) == 0
                    ? rest.substr(std::string{report_error_separator}.size())
                    : "failed";
  return out;
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
