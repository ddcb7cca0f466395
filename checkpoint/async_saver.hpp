#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "checkpoint/barrier.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/snapshot.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/tier_choice.hpp"

namespace lifeboat::checkpoint {

/// Told on the I/O thread how a save ended: on the commit rank, committed; on
/// the others, their shard durable and (with a barrier) the commit done.
using save_callback = std::function<void(const caf::expected<checkpoint_info>&)>;

constexpr auto default_barrier_timeout = std::chrono::minutes{5};

/// Sends this rank's shard of a step, committed in its memory tier, to the
/// peer that keeps a replica (the peer tier); the seconds it took. `data`:
/// the shard's data bytes (the snapshot's staging memory, alive throughout
/// the call), sent from memory rather than read back from the tier's file.
using replicate_fn = std::function<caf::expected<double>(int64_t step, int64_t total_run_calls,
                                                         std::string_view data)>;

/// The tiers before the checkpoint directory (DESIGN "Checkpoint tiers").
struct saver_tiers {
  memory_tier* memory = nullptr;  // null: no memory tier
  tier_vote_exchange exchange;    // null: one worker
  replicate_fn replicate;         // null: no peer tier
  /// Allocates the files of the next shard (memory_tier::prepare_spare, and
  /// the peer's), run in the background after every save that wrote the
  /// memory tier and is not final; null: none.
  std::function<void()> prepare_next;
};

/// How one save goes beyond its step.
struct save_options {
  /// The notice's deadline of a final save (0: none): when a rank's
  /// directory write would end too late, the save commits in memory only.
  int64_t deadline_unix_ms = 0;
  /// Writes the directory only: the memory tier already holds this step (a
  /// memory-only checkpoint persisted by the next generation).
  bool directory_only = false;
  /// The workers exit after this save: without a deadline, its copy to the
  /// peer runs beside the directory write, so that the exit waits for the
  /// longer of the two, not their sum. Every other save copies first, alone,
  /// and times that copy for the deadline of a later final save.
  bool final_save = false;
};

/// The name of the I/O thread, for tools that tell it from the trainer's.
constexpr const char* saver_thread_name = "lifeboat.saver";
/// The name of the thread that copies a final save to the peer meanwhile.
constexpr const char* replica_thread_name = "lifeboat.replica";

/// Saves in the background: the training thread is blocked only while the
/// state is copied into staging memory; the I/O thread writes the shard, waits
/// at the checkpoint-ready barrier, lets the commit rank commit, and waits at
/// a second barrier so that no rank reports success before the commit.
/// One save at a time: a save submitted while another is in flight waits for
/// it to finish (so every rank saves every step it was asked to, in order,
/// and the staging memory of the previous save is reused).
class async_saver {
 public:
  /// `ready` may be null only for a world of one. With a memory tier, each
  /// shard is written and committed there first (a failure there is a
  /// warning, the directory still gets it), copied to the peer, then written
  /// to the store's directory (save_options::final_save: the copy beside the
  /// directory write).
  async_saver(store& st, barrier* ready,
              std::chrono::milliseconds barrier_timeout = default_barrier_timeout,
              saver_tiers tiers = {});

  /// Waits for the save in flight, then stops the I/O thread.
  ~async_saver();

  async_saver(const async_saver&) = delete;
  async_saver& operator=(const async_saver&) = delete;

  /// Training thread: waits for a save in flight, snapshots `registry` (the
  /// stall) and hands the snapshot to the I/O thread. `done` runs on the I/O
  /// thread and must not submit another save.
  caf::error save(const state_registry& registry, int64_t step, int64_t total_run_calls,
                  save_callback done, save_options options = {});

  /// Hands a snapshot taken with the store to the I/O thread (waits for a save in flight).
  void submit(snapshot&& snap, int64_t step, int64_t total_run_calls, save_callback done,
              save_options options = {});

  /// Runs `work` on the I/O thread after the save in flight (if any), without
  /// waiting for it: a later save, wait() and the destructor wait for it as
  /// for a save. For work that must not hold the caller up but must end before
  /// the next save: the staging memory of the first save, mapped and
  /// pre-faulted while training starts. One at a time: a second replaces a
  /// first that has not started.
  void run_in_background(std::function<void()> work);

  /// Waits until no save (nor background work) is in flight; errc::timeout
  /// naming the step otherwise.
  caf::error wait(std::chrono::milliseconds timeout);

  bool busy() const;

 private:
  struct job {
    snapshot snap;
    int64_t step;
    int64_t total_run_calls;
    save_callback done;
    save_options options;
  };

  void run();
  caf::expected<checkpoint_info> execute(job& next);
  void wait_idle(std::unique_lock<std::mutex>& lock);
  bool idle() const;  // with mtx_ held

  // What the copy to the peer needs of a job.
  struct replica_job {
    int64_t step;
    int64_t total_run_calls;
    uint64_t bytes;
    int64_t deadline_unix_ms;
    std::string_view data;  // the job's staging memory: kept until the copy ends
  };

  // The memory tier's write of `next`; none when there is no memory tier or
  // the write failed (logged).
  std::optional<tier_time> save_memory_tier(const job& next);
  // The copy to the peer; none when it was left out or failed (logged).
  std::optional<tier_time> replicate(const replica_job& copy);
  // Whether the ranks agreed to leave the directory out of `next` (a final
  // save whose directory write would end after the deadline somewhere).
  caf::expected<bool> agree_memory_only(const job& next, bool in_memory);
  // After this rank's directory write (`written`): whether `next` commits in
  // memory only (a rank's write failed and every rank holds its shard in
  // memory); false when every write succeeded, and where a peer's failed
  // but its report to the coordination service ends the save; this rank's
  // own error, or in a directory-only save the first failed rank's.
  caf::expected<bool> agree_directory_written(const job& next, bool in_memory,
                                              const caf::expected<checkpoint_info>& written);

  store& store_;
  barrier* ready_;
  saver_tiers tiers_;
  bandwidth_meter directory_meter_;
  // Whole copies to the peer, for a final save's deadline; used by one copy
  // at a time (on the copy's thread while it runs), never beside another use.
  bandwidth_meter peer_meter_;
  std::chrono::milliseconds barrier_timeout_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::optional<job> pending_;
  std::optional<int64_t> in_flight_step_;
  std::function<void()> chore_;  // run_in_background's work, not started yet
  bool chore_running_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lifeboat::checkpoint
