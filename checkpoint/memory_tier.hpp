#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "checkpoint/directory_lock.hpp"
#include "checkpoint/store.hpp"

namespace lifeboat::checkpoint {

/// The parent of every job's memory tier unless LIFEBOAT_LOCAL_DIR says otherwise.
constexpr const char* default_memory_root = "/dev/shm";

/// LIFEBOAT_LOCAL_DIR's value that turns the memory tier off.
constexpr const char* memory_tier_off = "off";

/// Committed checkpoints the memory tier keeps at most (fewer when they do not fit).
constexpr int memory_tier_max_to_keep = 2;

/// The file a memory tier allocates ahead of its next shard (prepare_spare).
constexpr const char* memory_tier_spare_name = "spare.data";

/// The subdirectory of a job's memory directory where a worker keeps the
/// replicas it holds, one memory tier per rank: `<dir>/peer/rank-RRRRR-of-WWWWW`.
constexpr const char* peer_tier_dir_name = "peer";

/// The rank directories (`rank-RRRRR-of-WWWWW`, each laid out as the
/// checkpoint directory of one worker) directly in `dir`, a job's memory
/// directory or its peer_tier_dir_name subdirectory, sorted; none where
/// `dir` cannot be read.
std::vector<std::string> memory_tier_rank_dirs(const std::string& dir);

/// Why `dir` holds no committed checkpoint to look at: "no committed
/// checkpoint in DIR", and where it is a job's memory directory (which holds
/// a checkpoint directory per rank of its host, and no checkpoint itself)
/// the rank directories to look into.
std::string none_committed_in(const std::string& dir);

/// "/dev/shm/lifeboat-<16 hex digits>": the memory tier of the job whose
/// checkpoint directory is `checkpoint_dir` (which must exist). The digits
/// hash its absolute path, device, inode and birth time, so a directory
/// removed and made again (a fresh start) never finds the checkpoints of the
/// one before. On a file system without birth times (NFS) the inode alone
/// tells them apart, and not when the new directory got the old one's.
caf::expected<std::string> default_memory_dir(const std::string& checkpoint_dir);

/// "lifeboat-<16 hex digits>": the last component of default_memory_dir,
/// which tells one checkpoint directory from every other.
caf::expected<std::string> memory_dir_name(const std::string& checkpoint_dir);

/// Claims `dir` (LIFEBOAT_LOCAL_DIR, which holds the ranks' tiers directly)
/// for the job of `checkpoint_dir`: the first start records the checkpoint
/// directory there (CHECKPOINT_DIR, and its memory_dir_name in CHECKPOINT_ID),
/// later starts of that job find their own record. A `dir` that holds the
/// tiers of another checkpoint directory is errc::refused, naming it:
/// restored, they would start this job from another job's state. Unless that
/// checkpoint directory is gone or was made again: then no start can restore
/// its tiers, and they are removed. A record of another checkpoint
/// directory without tiers (that job ended) is replaced by this job's.
/// errc::refused too where another user could have made or could change
/// `dir` (as memory_tier::open).
caf::error claim_local_memory_dir(const std::string& dir, const std::string& checkpoint_dir);

/// Records `checkpoint_dir` in `dir` (a job's default memory directory,
/// made by memory_tier::open) and removes, beside it, the memory tiers of
/// this user's other jobs that no start can restore from, which hold host
/// memory for nothing: their checkpoint directory is gone or was made again
/// (a job that ended for good without a clean end, a test's removed
/// directory), or holds a newer checkpoint than any in the tier (a restore
/// prefers it: the job went on on another host, or a tier that never got a
/// checkpoint, only its spare). Tiers a worker holds (directory_lock), and
/// tiers without a record (made by LIFEBOAT_LOCAL_DIR, or being made), stay.
caf::error remove_orphaned_memory_tiers(const std::string& dir, const std::string& checkpoint_dir);

/// The removal alone: the memory tiers in `root` (default_memory_root, or
/// the parent of a job's memory directory) of this user's jobs that no start
/// can restore from (as above), but the one named `keep` (empty: none). What a test or benchmark
/// calls once it removed its checkpoint directories: a job that exited with the restart code keeps
/// its tier for a restart that never comes.
caf::error remove_orphaned_memory_tiers_in(const std::string& root, const std::string& keep = {});

/// Tier 0: this rank's shards in host memory (a tmpfs), which outlives the
/// worker process but not the host. It is a store of its own per rank,
/// `<dir>/rank-RRRRR-of-WWWWW`, holding world-of-one checkpoints: the same
/// framed, checksummed files and its own MANIFEST as commit, written by the
/// rank itself as soon as its shard is there (ranks on other hosts cannot see
/// it); the restore agreement makes sure every rank restores the same step.
///
/// Retention: the newest memory_tier_max_to_keep committed checkpoints, and
/// only as many as the file system's free space holds: a save drops the older
/// ones when the new shard would not fit (in the free space, or in the bound
/// given to open), and fails (errc::io_error, "does not
/// fit") when it does not fit even then. A spare (prepare_spare) is never
/// kept at the cost of a checkpoint: a save that cannot use it drops it
/// first. A checkpoint that retention drops after a commit becomes the
/// spare when none is there and its data file would be one for the new
/// shard. A spare of another size is cut to the next shard's, or grown by at most
/// 1 MiB (state saved through callbacks changes the size from save to
/// save); one further off is dropped.
/// Thread-safety: as store.
class memory_tier {
 public:
  static constexpr uint64_t unbounded = ~uint64_t{0};

  /// Creates `<dir>/rank-RRRRR-of-WWWWW` (owner-only) and checks it is
  /// writable. errc::refused where another user could have made or could
  /// change what it reads: `dir` neither this user's nor root's, or writable
  /// by others without being sticky; the rank's directory there already and
  /// a link, another user's, or writable by others. errc::already_exists
  /// where another memory_tier holds the rank's directory (directory_lock),
  /// in this process or another: the same job started twice on one host,
  /// whose second start would remove the first's save in progress and
  /// overwrite its checkpoints (a lock found taken is tried again for about
  /// 100 ms: another job's start probes it for an instant, see
  /// remove_orphaned_memory_tiers). `max_bytes` bounds what this rank's tier
  /// holds, below the file system's free space.
  static caf::expected<memory_tier> open(const std::string& dir, int rank, int world_size,
                                         uint64_t max_bytes = unbounded,
                                         std::shared_ptr<file_system> files = posix_file_system());

  /// Writes `snap` as the checkpoint of `step` and commits it; into the
  /// spare, resized to the snapshot's size (take_spare).
  caf::expected<checkpoint_info> save(const snapshot& snap, int64_t step, int64_t total_run_calls);

  /// Allocates a data file of `data_bytes` now (memory_tier_spare_name), so
  /// that the next shard of that size, saved or adopted, is written into
  /// pages the tmpfs has already: writing 256 MiB into a new tmpfs file took
  /// twice as long here as into an allocated one, and on a preemption that
  /// write is on the way to the exit. Made only where it fits beside what
  /// the tier keeps (errc::io_error otherwise, and nothing is dropped for
  /// it); one of that size already there is kept. For the saver's thread,
  /// off the training path.
  caf::error prepare_spare(uint64_t data_bytes);

  /// The two files of one shard in this tier.
  struct shard_files {
    std::string index;
    std::string data;
  };

  /// The files of `step`'s shard (whether or not the step is committed).
  shard_files files_of(int64_t step) const;

  /// Commits, as this tier's checkpoint of `step`, a shard that another tier
  /// holds (a peer's copy): makes room for its files (`index_bytes` and
  /// `data_bytes`), replaces any copy of `step` here, lets `fill` write both
  /// files of files_of(step), then writes the manifest. Until then the step
  /// is uncommitted, so a failure or a crash in `fill` leaves nothing a
  /// restore reads. The checksums are those of the files `fill` wrote: they
  /// are verified when the step is restored. A spare of `data_bytes` is
  /// already at files_of(step).data when `fill` starts: `fill` writes over
  /// it from its start, without truncating it.
  caf::expected<checkpoint_info> adopt(int64_t step, int64_t total_run_calls, uint64_t index_bytes,
                                       uint64_t data_bytes,
                                       const std::function<caf::error(const shard_files&)>& fill);

  /// The newest committed step not after `max_step`; none when there is none.
  std::optional<int64_t> newest_step(std::optional<int64_t> max_step) const;

  /// Loads the checkpoint of `step`, verified; `touched` as store::restore_step.
  caf::expected<checkpoint_info> restore_step(int64_t step, state_registry& registry,
                                              bool& touched);

  /// Removes this rank's memory tier (at a clean end of training); the last
  /// rank of a host to go removes the job's record and its directory too,
  /// unless files of others are there (then the directory stays).
  caf::error remove();

  const std::string& path() const { return store_.config().dir; }

  /// What this tier's files are written through.
  file_system& files() const { return *store_.config().files; }

 private:
  memory_tier(store st, directory_lock lock, uint64_t max_bytes)
      : store_(std::move(st)), lock_(std::move(lock)), max_bytes_(max_bytes) {}

  // What the tier may still take, and what bounds it: the file system's free
  // space, the memory a RAM-backed tier leaves the host, or max_bytes_.
  struct room_left {
    uint64_t bytes;
    const char* bound;
  };
  caf::expected<room_left> room() const;

  // Drops committed checkpoints, oldest first, until `bytes` more fit or
  // none is left; errc::io_error naming the sizes when they still do not fit.
  caf::error make_room(uint64_t bytes, int64_t step);

  // The manifest of `step`, whose data file has `data_bytes`, then retention.
  caf::error commit(int64_t step, int64_t total_run_calls, uint64_t data_bytes);

  std::string spare_path() const;

  // Whether the spare has `data_bytes`, once resized to it where it was
  // larger or at most the index allowance smaller; another one is removed
  // (its room goes to the shard about to be written).
  bool take_spare(uint64_t data_bytes);

  store store_;
  directory_lock lock_;
  uint64_t max_bytes_;
};

}  // namespace lifeboat::checkpoint
