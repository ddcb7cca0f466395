#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace lifeboat::checkpoint {

/// A final save keeps this much of the time before the notice's deadline for
/// the commit, the exit and the launcher: a directory write must end before.
constexpr int64_t deadline_reserve_ms = 1000;

/// What a rank says in the tier agreement of a final save.
constexpr const char* vote_no_memory = "no-memory";      // its memory tier lacks the shard
constexpr const char* vote_directory_fits = "fits";      // its directory write ends in time
constexpr const char* vote_directory_slow = "too-slow";  // it would not

/// Every rank publishes its vote for `step` and gets every rank's (itself
/// included); an error when the exchange fails. The runtime's goes through
/// the coordination service; null for one worker.
using tier_vote_exchange =
    std::function<caf::expected<std::vector<std::string>>(int64_t step, const std::string& vote)>;

/// Whether the directory write is left out: every rank has the shard in
/// memory and at least one rank's directory write would end too late.
bool memory_only(const std::vector<std::string>& votes);

/// The write bandwidth of one tier, from the writes it measured (the newest
/// counts most: an exponential moving average).
class bandwidth_meter {
 public:
  void record(uint64_t bytes, double seconds);

  /// Bytes per second; none before a write was measured.
  std::optional<double> bytes_per_second() const { return rate_; }

  /// Seconds that writing `bytes` should take; none before a measurement.
  std::optional<double> seconds_for(uint64_t bytes) const;

 private:
  std::optional<double> rate_;
};

/// Whether writing `bytes` at `meter`'s rate ends deadline_reserve_ms before
/// `deadline_unix_ms` (it does when nothing was measured yet).
bool ends_in_time(const bandwidth_meter& meter, uint64_t bytes, int64_t deadline_unix_ms,
                  int64_t now_unix_ms);

/// This rank's vote: no_memory without the shard in memory; else whether
/// writing `bytes` at `meter`'s rate ends deadline_reserve_ms before
/// `deadline_unix_ms` (it fits when nothing was measured yet).
std::string tier_vote(bool in_memory, const bandwidth_meter& meter, uint64_t bytes,
                      int64_t deadline_unix_ms, int64_t now_unix_ms);

}  // namespace lifeboat::checkpoint
