#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "messages/checkpoint.pb.h"

namespace lifeboat::checkpoint {

/// What verify_checkpoint read: the manifest (world size, run calls, when it
/// was committed) and how many data bytes it checked, every rank's.
struct verified_checkpoint {
  wire::CheckpointManifest manifest;
  uint64_t bytes = 0;
};

/// Checks every rank's shard of the committed checkpoint of `step` in `dir`
/// as a restore of each rank would (the manifest, each index against it,
/// each data file's size and every chunk's checksum), outside any job: no
/// registry, no store, nothing written; a thread per core, each on a shard
/// or, with fewer shards than cores, on a part of one, each in 1 MiB of
/// memory (verify_shard_chunks).
/// Errors: errc::not_found when `dir` holds no committed checkpoint of
/// `step`; errc::corrupt naming the first bad file (and chunk);
/// errc::version_mismatch for a manifest of another schema; errc::io_error
/// where a file cannot be read.
/// A step removed while it is checked (a running job's retention removes its
/// older checkpoints as it saves, manifest first) is errc::not_found saying
/// so, not a corrupt one: see verify_shards.
caf::expected<verified_checkpoint> verify_checkpoint(const std::string& dir, int64_t step);

/// The steps of the committed checkpoints in a directory, oldest first
/// (committed_steps_in, or a test's listing).
using step_listing = std::function<caf::expected<std::vector<int64_t>>()>;

/// How many times verify_newest checks a newest checkpoint, the first one
/// and those committed while the one before was checked.
constexpr int newest_check_attempts = 4;

/// verify_checkpoint of the newest committed checkpoint of `dir`, as `list`
/// finds them. Beside a running job the newest is removed while it is
/// checked when the job commits newer ones meanwhile (its retention keeps
/// the newest few): then the newest committed since is checked, up to
/// newest_check_attempts checks in all; a step that is not newer than the
/// one removed ends the search. The manifest's step says which was checked.
/// Errors: `list`'s; errc::not_found when `dir` holds no committed
/// checkpoint, or the last one checked was removed; verify_checkpoint's.
caf::expected<verified_checkpoint> verify_newest(const std::string& dir, const step_listing& list);

/// What verify_checkpoint does once it has read `manifest`, the manifest of
/// `step` in `dir`. When a check fails and the step's manifest is gone, the
/// step was removed during the check and the missing file says nothing about
/// its bytes: errc::not_found, "was removed during the check"; the other
/// errors are verify_checkpoint's.
caf::expected<verified_checkpoint> verify_shards(const std::string& dir, int64_t step,
                                                 wire::CheckpointManifest manifest);

}  // namespace lifeboat::checkpoint
