#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "checkpoint/shard_reader.hpp"
#include "checkpoint/shard_writer.hpp"
#include "checkpoint/snapshot.hpp"
#include "checkpoint/staging.hpp"
#include "checkpoint/state_registry.hpp"

namespace lifeboat::checkpoint {

constexpr int default_max_to_keep = 2;

/// Room left in prepared staging memory for callback state that grows.
constexpr std::size_t staging_headroom = std::size_t{1} << 20;

struct store_config {
  std::string dir;
  int rank = 0;
  int world_size = 1;
  int max_to_keep = default_max_to_keep;  // committed checkpoints kept (>= 1)
  int commit_rank = 0;                    // writes manifests, applies retention
  // Of the files and directories the store creates: owner-only by default.
  mode_t file_mode = private_file_mode;
  mode_t dir_mode = private_dir_mode;
  // What every save writes, syncs and renames through (file_system.hpp;
  // tests stand in one that fails on purpose).
  std::shared_ptr<file_system> files = posix_file_system();
};

/// One tier that holds (or gave) a checkpoint, and the seconds its write
/// (or read) of this rank's shard took.
struct tier_time {
  std::string name;  // tier_memory, tier_peer, tier_directory
  double seconds = 0;
};

struct checkpoint_info {
  int64_t step = 0;
  int64_t total_run_calls = 0;
  std::string path;   // the step directory
  int64_t bytes = 0;  // this rank's shard
  double seconds = 0;
  write_breakdown breakdown;  // of this rank's shard files (write_shard)
  // The tiers that hold it after a save, or the one it was read from at a restore.
  std::vector<tier_time> tiers;
};

/// The names of the tiers in checkpoint_info::tiers, logs and /status.
constexpr const char* tier_memory = "memory";
constexpr const char* tier_peer = "peer";
constexpr const char* tier_directory = "directory";

/// The steps committed (their MANIFEST there) in `dir`, oldest first, read
/// without a store; errc::io_error where it cannot be listed.
caf::expected<std::vector<int64_t>> committed_steps_in(const std::string& dir);

/// The newest step committed (its MANIFEST there) in `dir`, a checkpoint
/// directory or a memory tier's rank directory, read without a store (nothing
/// is made or written); none where it holds none or cannot be listed.
std::optional<int64_t> newest_committed_step_in(const std::string& dir);

/// "memory (0.012 s), directory (0.4 s)": the tiers of a log line.
std::string describe_tiers(const std::vector<tier_time>& tiers);

/// The checkpoint store of one rank (DESIGN "Checkpoint layout"):
///   <dir>/step-<12 digits>/shard-RRRRR-of-WWWWW.{data,index} and MANIFEST.
/// A save is: take_snapshot (training thread), write_shard (every rank, any
/// thread), the checkpoint-ready barrier (outside the store), commit (the
/// commit rank). MANIFEST is written only by commit; its presence is the commit.
///
/// Clean-up rule: directories without MANIFEST are crash leftovers. The commit
/// rank removes them at start (remove_partial, before the first save of the
/// run, so no peer can be writing into them) and, at each commit, those of
/// older steps; retention keeps the newest `max_to_keep` committed checkpoints
/// and never removes the one just committed.
///
/// take_snapshot may run on one thread while write_shard/commit run on another.
class store {
 public:
  /// Creates `dir` if needed and checks that files can be created in it.
  static caf::expected<store> open(store_config cfg);

  /// A store of `dir` as it is, for reading it: neither creates nor writes
  /// anything (the directory of a job that may be training). Only its
  /// restore_latest, restore_step and the listings are meant to be called.
  static caf::expected<store> open_existing(store_config cfg);

  const store_config& config() const { return cfg_; }

  /// The newest committed checkpoint that verifies, loaded into `registry`.
  /// A corrupt one is logged ("corrupt", the file, the chunk) and the one
  /// before it is tried. No checkpoint: an empty optional (a fresh start).
  /// errc::invalid_config when the registry or world size does not match; errc::corrupt
  /// when none verified after buffers were already partly overwritten.
  /// `max_step` limits the search (ranks that disagree restore the common step).
  /// `match`: whether `registry` must hold every buffer of the checkpoint.
  caf::expected<std::optional<checkpoint_info>> restore_latest(
      state_registry& registry, std::optional<int64_t> max_step = std::nullopt,
      buffer_match match = buffer_match::exact);

  /// Loads the committed checkpoint of exactly `step` into `registry`, verified.
  /// `touched`: whether registered buffers were (partly) overwritten.
  caf::expected<checkpoint_info> restore_step(int64_t step, state_registry& registry, bool& touched,
                                              buffer_match match = buffer_match::exact);

  /// Maps and pre-faults staging memory for `registry` now (at start-up, off
  /// the training path), so that even the first save's stall is only the copy.
  /// Callback state is not saved for it: staging_headroom stands for it.
  caf::error prepare(const state_registry& registry);

  /// Copies the registered state into reusable staging memory.
  caf::expected<snapshot> take_snapshot(const state_registry& registry);

  /// Writes this rank's shard of `step` durably; into `preallocated` when
  /// given (shard_write_options::preallocated).
  caf::expected<checkpoint_info> write_shard(const snapshot& snap, int64_t step,
                                             const std::string& preallocated = {});

  /// Commit rank only, after every rank's write_shard returned: writes the
  /// MANIFEST durably, then applies retention (write_manifest, apply_retention).
  caf::error commit(int64_t step, int64_t total_run_calls);

  /// The commit itself (commit rank only): the MANIFEST written durably.
  caf::error write_manifest(int64_t step, int64_t total_run_calls);

  /// The rest of a commit: removes the committed checkpoints beyond
  /// `max_to_keep` and the crash leftovers of steps before `committed_step`.
  /// Apart from write_manifest so that savers can run it once the peers were
  /// told of the commit: removing a 1 GiB checkpoint took 0.35-0.61 s here.
  caf::error apply_retention(int64_t committed_step);

  /// Removes manifest-less step directories (the commit rank, at start).
  caf::error remove_partial();

  /// The steps of committed checkpoints (with MANIFEST), oldest first.
  caf::expected<std::vector<int64_t>> committed_steps() const;

  /// The newest committed step not after `max_step`; none when there is none
  /// (or the directory cannot be read).
  std::optional<int64_t> newest_committed_step(std::optional<int64_t> max_step) const;

  std::string step_path(int64_t step) const;

  staging_pool& pool() { return *pool_; }

 private:
  explicit store(store_config cfg);

  // errc::invalid_config for a config no store can have.
  static caf::error check_config(const store_config& cfg);

  // errc::invalid_argument on every rank but the commit rank.
  caf::error check_commit_rank() const;

  store_config cfg_;
  std::shared_ptr<staging_pool> pool_;
};

}  // namespace lifeboat::checkpoint
