#pragma once

// Reading a job's checkpoints outside the job: the trained state for an
// evaluation or an export, and a check of a whole checkpoint, without a
// handler, a cluster or a launcher.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lifeboat/checkpoint_state.hpp"

namespace lifeboat {

/// The checkpoint restore_checkpoint read.
struct restored_checkpoint {
  int64_t step = 0;
  int64_t total_run_calls = 0;
  std::string path;  // its step directory
};

/// The steps of the committed checkpoints in `checkpoint_dir`, oldest first:
/// what an evaluator beside the training polls for new ones. Throws
/// config_error when the directory does not exist, checkpoint_error when it
/// cannot be listed.
std::vector<int64_t> committed_steps(const std::string& checkpoint_dir);

/// Loads rank `rank`'s shard of the newest committed checkpoint in
/// `checkpoint_dir` that verifies (or of `step`, and no other, when given)
/// into `state`, after `state`'s checks (add_check). `state` may register
/// part of what the job registered (a model without its optimizer), by name
/// and in any order, in host or device memory whichever the job saved it
/// from; the rest of the shard is dropped (what shares no chunk with a
/// registered buffer is not even read). It joins no
/// cluster and writes nothing, so it may read the directory of a job that is
/// training: a checkpoint that retention removes meanwhile is skipped,
/// logged, for the one before it (when that one went too: checkpoint_error,
/// and a second call finds the newer ones). It reads the checkpoint
/// directory, not the memory tiers: a checkpoint committed in memory only
/// reaches the directory at the next start.
///
/// Returns none when the directory holds no committed checkpoint. Throws
/// config_error when the directory does not exist, `rank` is not one of the
/// checkpoint's ranks, `state` registers a buffer the checkpoint lacks or
/// holds in another size, or a check throws; checkpoint_error when no
/// committed checkpoint verifies (each is logged as "corrupt", with its
/// file), `step`'s is not committed or does not verify, or the directory
/// cannot be read. What a restore callback throws passes through. On the
/// calling thread; `state` must not be used by a handler meanwhile.
std::optional<restored_checkpoint> restore_checkpoint(checkpoint_state& state,
                                                      const std::string& checkpoint_dir,
                                                      int rank = 0,
                                                      std::optional<int64_t> step = std::nullopt);

/// A committed checkpoint that verify_checkpoint found whole.
struct verified_checkpoint {
  int64_t step = 0;
  int64_t total_run_calls = 0;
  int world_size = 0;
  uint64_t bytes = 0;  // every rank's data
  std::string path;    // its step directory
};

/// Checks every rank's shard of the newest committed checkpoint in
/// `checkpoint_dir` (or of `step`) as each rank's restore would: the
/// manifest, each index, each data file's size and every chunk's checksum,
/// into no state, 1 MiB of memory per thread whatever the shards' sizes. Before a
/// checkpoint is copied, archived or exported: a restore reads one rank's
/// shard and falls back to an older checkpoint where it is corrupt, this
/// names what is wrong with this one. Writes nothing. Throws config_error
/// when the directory does not exist; checkpoint_error when it holds no
/// committed checkpoint (of `step`), the checkpoint does not verify (the
/// file, and the chunk), or a running job's retention removed it during the
/// check ("was removed during the check"): without `step`, the newest one
/// committed since is checked instead (checkpoint::verify_newest), and only
/// the last of those removed is an error. Blocks the calling thread, which
/// checks with one more thread per further core, each on a shard or on a
/// part of one.
verified_checkpoint verify_checkpoint(const std::string& checkpoint_dir,
                                      std::optional<int64_t> step = std::nullopt);

}  // namespace lifeboat
