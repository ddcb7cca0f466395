#pragma once

#include <chrono>
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

/// The rounds of a save's tier agreement: a final save's vote before its
/// directory write; every save's report after it.
constexpr const char* vote_round = "vote";
constexpr const char* written_round = "written";
/// A final save's vote waits for every rank's shard in memory, no longer.
constexpr std::chrono::seconds vote_timeout{60};

/// Every rank publishes what it says in `round` of `step` and gets what
/// every rank said, by rank (itself included; "" for a rank that said
/// nothing readable); an error when the exchange fails or `timeout` passes.
/// The runtime's goes through the coordination service; null for one worker.
using tier_vote_exchange = std::function<caf::expected<std::vector<std::string>>(
    const std::string& round, int64_t step, const std::string& said,
    std::chrono::milliseconds timeout)>;

/// Whether the directory write is left out: every rank has the shard in
/// memory and at least one rank's directory write would end too late.
bool memory_only(const std::vector<std::string>& votes);

/// What a rank reports in the written round, after its shard's directory write.
struct directory_report {
  bool in_memory = false;  // its memory tier holds the shard
  std::string error;       // empty: the shard is in the directory
};

std::string encode(const directory_report& report);

/// The report `text` holds; one that is none (a rank that said nothing)
/// reads as a failed write without the shard in memory.
directory_report decode_directory_report(const std::string& text);

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
