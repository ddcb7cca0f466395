#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/status.pb.h"

namespace lifeboat {

// What each worker records in the coordination service of the checkpoint it
// holds committed last, and the job's last checkpoint a coordinator shows
// from those records: a launcher has no checkpoint writer of its own, and
// its status page read "none yet" for the whole job.

/// KV key prefix of the records: "lifeboat/checkpoint/<step>/<rank>", both
/// zero-padded, each a serialized wire::CheckpointInfo of that rank's shard.
/// A worker records each committed save, and at its start the checkpoint it
/// restored (the service drops every key at a new generation); it then
/// drops its previous record.
constexpr const char* checkpoint_key_prefix = "lifeboat/checkpoint/";

/// The key of `rank`'s record of `step`. The rank's fixed width makes the key
/// no prefix of another, so erasing it as a prefix erases it alone.
std::string checkpoint_record_key(int64_t step, int32_t rank);

/// `record` with `tier` added (0 s), for a tier that came to hold its
/// checkpoint after it was recorded (the directory, once a checkpoint that
/// was in memory only is written there); none when `record` is empty, is of
/// another step than `step` (a later save replaced it), or names `tier`.
std::optional<wire::CheckpointInfo> record_with_tier(const wire::CheckpointInfo& record,
                                                     int64_t step, const std::string& tier);

/// The job's last checkpoint from `records` (key -> value, as the service's
/// snapshot of checkpoint_key_prefix gives them): the highest step any rank
/// recorded, with the lowest recording rank's path, the sum of the ranks'
/// bytes, the slowest rank's seconds, and the tiers every recording rank
/// holds it in (the slowest rank's seconds in each). A record is written
/// after its commit, so a step a rank recorded is committed; for a moment
/// after a commit the ranks that did not record it yet are missing from its
/// sum. Empty (no path) without a readable record.
wire::CheckpointInfo job_checkpoint(const std::map<std::string, std::string>& records);

/// The keys of one worker's records that may be in the service, so that each
/// is erased once a newer record is in. Why more than the last: an insert
/// that failed (its answer timed out, say) may still land after the failure
/// was reported, and an erasure that failed may have left its record, so
/// each would stay for the job's generation. A plain value; the checkpoint
/// writer's actor owns it. Thread-safety: none.
class record_keys {
 public:
  /// The record under `key` is in the service: returns the keys of this
  /// worker's other records that may be there, to erase, and forgets them.
  std::vector<std::string> inserted(const std::string& key);

  /// A request on `key` failed: an insert, which may land later, or an
  /// erasure, whose record may still be there. Erased with the next record's
  /// returned keys unless it is current().
  void may_be_there(const std::string& key);

  /// The key of the record last known to be in; empty: none yet.
  const std::string& current() const { return current_; }

 private:
  std::string current_;
  std::set<std::string> stale_;
};

}  // namespace lifeboat
