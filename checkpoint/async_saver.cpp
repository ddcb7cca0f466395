#include "checkpoint/async_saver.hpp"

#include <system_error>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "messages/background_thread.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/clock.hpp"

namespace lifeboat::checkpoint {

namespace {

constexpr const char* component = "checkpoint";
constexpr const char* shards_barrier_prefix = "checkpoint-shards-";
constexpr const char* commit_barrier_prefix = "checkpoint-committed-";

}  // namespace

async_saver::async_saver(store& st, barrier* ready, std::chrono::milliseconds barrier_timeout,
                         saver_tiers tiers)
    : store_(st),
      ready_(ready),
      tiers_(std::move(tiers)),
      barrier_timeout_(barrier_timeout),
      thread_(background_thread([this] { run(); })) {}

async_saver::~async_saver() {
  {
    std::unique_lock<std::mutex> lock{mtx_};
    wait_idle(lock);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool async_saver::idle() const {
  return !pending_ && !in_flight_step_ && !chore_ && !chore_running_;
}

void async_saver::wait_idle(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [this] { return idle(); });
}

void async_saver::run_in_background(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    chore_ = std::move(work);
  }
  cv_.notify_all();
}

caf::error async_saver::save(const state_registry& registry, int64_t step, int64_t total_run_calls,
                             save_callback done, save_options options) {
  {
    // Waiting before the snapshot lets it reuse the staging memory that the
    // previous save returns to the pool.
    std::unique_lock<std::mutex> lock{mtx_};
    wait_idle(lock);
  }
  auto snap = store_.take_snapshot(registry);
  if (!snap) return std::move(snap.error());
  submit(std::move(*snap), step, total_run_calls, std::move(done), options);
  return {};
}

void async_saver::submit(snapshot&& snap, int64_t step, int64_t total_run_calls, save_callback done,
                         save_options options) {
  {
    std::unique_lock<std::mutex> lock{mtx_};
    wait_idle(lock);
    pending_ = job{std::move(snap), step, total_run_calls, std::move(done), options};
  }
  cv_.notify_all();
}

caf::error async_saver::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock{mtx_};
  if (cv_.wait_for(lock, timeout, [this] { return idle(); })) return {};
  if (!pending_ && !in_flight_step_)
    return make_error(errc::timeout, "background work of the saver still running after " +
                                         std::to_string(timeout.count()) + " ms");
  auto step = pending_ ? pending_->step : *in_flight_step_;
  return make_error(errc::timeout, "checkpoint of step " + std::to_string(step) +
                                       " still being written after " +
                                       std::to_string(timeout.count()) + " ms");
}

bool async_saver::busy() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return !idle();
}

void async_saver::run() {
  name_this_thread(saver_thread_name);
  for (;;) {
    std::optional<job> next;
    {
      std::unique_lock<std::mutex> lock{mtx_};
      cv_.wait(lock, [this] { return stopping_ || pending_ || chore_; });
      // A save submitted first goes first: a chore that prepares staging
      // memory then finds the save's buffer back in the pool.
      if (!pending_ && chore_) {
        auto work = std::move(chore_);
        chore_ = nullptr;
        chore_running_ = true;
        lock.unlock();
        work();
        lock.lock();
        chore_running_ = false;
        cv_.notify_all();
        continue;
      }
      if (!pending_) return;
      next = std::move(pending_);
      pending_.reset();
      in_flight_step_ = next->step;
    }
    auto result = execute(*next);
    if (!result)
      log(log_level::error, component, "checkpoint of step ", next->step,
          " failed: ", describe(result.error()));
    if (next->done) next->done(result);
    // The save used up the spares: the next one's are allocated as a chore,
    // after a save already waiting and after a chore not yet run.
    bool prepare = result && tiers_.prepare_next && tiers_.memory != nullptr &&
                   !next->options.final_save && !next->options.directory_only;
    next.reset();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      in_flight_step_.reset();
      if (prepare)
        chore_ = [before = std::move(chore_), after = tiers_.prepare_next] {
          if (before) before();
          after();
        };
    }
    cv_.notify_all();
  }
}

std::optional<tier_time> async_saver::save_memory_tier(const job& next) {
  if (tiers_.memory == nullptr || next.options.directory_only) return std::nullopt;
  auto saved = tiers_.memory->save(next.snap, next.step, next.total_run_calls);
  if (!saved) {
    log(log_level::warning, component, "memory tier: checkpoint of step ", next.step,
        " only in the checkpoint directory: ", describe(saved.error()));
    return std::nullopt;
  }
  return tier_time{tier_memory, saved->seconds};
}

std::optional<tier_time> async_saver::replicate(const replica_job& copy) {
  // A final save copies to the peer only when the copy ends in time: one
  // that would not, would keep the memory-only commit from it too.
  auto now = unix_now_ms();
  if (copy.deadline_unix_ms != 0 &&
      !ends_in_time(peer_meter_, copy.bytes, copy.deadline_unix_ms, now)) {
    log(log_level::warning, component, "peer tier: checkpoint of step ", copy.step,
        " not replicated: the copy would take about ", *peer_meter_.seconds_for(copy.bytes), " s, ",
        static_cast<double>(copy.deadline_unix_ms - now) / 1000, " s are left before the deadline");
    return std::nullopt;
  }
  auto sent = tiers_.replicate(copy.step, copy.total_run_calls, copy.data);
  if (!sent) {
    log(log_level::warning, component, "peer tier: checkpoint of step ", copy.step,
        " has no replica on a peer: ", describe(sent.error()));
    return std::nullopt;
  }
  peer_meter_.record(copy.bytes, *sent);
  return tier_time{tier_peer, *sent};
}

caf::expected<bool> async_saver::agree_memory_only(const job& next, bool in_memory) {
  auto deadline = next.options.deadline_unix_ms;
  if (deadline == 0 || next.options.directory_only) return false;
  auto now = unix_now_ms();
  auto mine = tier_vote(in_memory, directory_meter_, next.snap.size(), deadline, now);
  std::vector<std::string> votes{mine};
  if (tiers_.exchange) {
    auto all = tiers_.exchange(vote_round, next.step, mine, vote_timeout);
    if (!all) return std::move(all.error());
    votes = std::move(*all);
  }
  if (!memory_only(votes)) return false;
  // The one line that says why this preemption checkpoint is not in the
  // directory yet, and when it will be.
  auto needed = directory_meter_.seconds_for(next.snap.size());
  if (mine == vote_directory_slow)
    log(log_level::warning, component, "checkpoint of step ", next.step,
        " committed in memory only: the directory write would take about ", *needed, " s, ",
        static_cast<double>(deadline - now) / 1000,
        " s are left before the deadline; the next start writes it to the directory");
  else
    log(log_level::warning, component, "checkpoint of step ", next.step,
        " committed in memory only: a peer's directory write would end after the deadline;"
        " the next start writes it to the directory");
  return true;
}

caf::expected<bool> async_saver::agree_directory_written(
    const job& next, bool in_memory, const caf::expected<checkpoint_info>& written) {
  directory_report mine{in_memory, written ? std::string{} : describe(written.error())};
  std::vector<std::string> reports{encode(mine)};
  // Every rank reports, whatever its write did: a rank whose write failed
  // no longer leaves its peers waiting for it at the shards' barrier (for
  // barrier_timeout_) when no failure report of its own ends that wait (the
  // next start's write of a memory-only checkpoint: it reports none).
  if (tiers_.exchange) {
    auto all = tiers_.exchange(written_round, next.step, reports.front(), barrier_timeout_);
    if (!all) return std::move(all.error());
    reports = std::move(*all);
  }
  std::optional<size_t> failed;
  std::string failure;
  bool all_in_memory = true;
  for (size_t r = 0; r < reports.size(); ++r) {
    auto report = decode_directory_report(reports[r]);
    all_in_memory = all_in_memory && report.in_memory;
    if (!report.error.empty() && !failed) {
      failed = r;
      failure = report.error;
    }
  }
  if (!failed) return false;
  auto who = "rank " + std::to_string(*failed);
  if (all_in_memory && !next.options.directory_only) {
    log(log_level::warning, component, "checkpoint of step ", next.step,
        " committed in memory only: ", who, "'s directory write failed (", failure,
        "); the next start writes it to the directory");
    return true;
  }
  if (!written) return written.error();
  // Where a peer's failure ends the save, its own report to the coordination
  // service ends the shards' barrier for everyone, naming it; a write of
  // the directory alone reports nothing.
  if (next.options.directory_only)
    return make_error(errc::peer_error, who + "'s directory write failed: " + failure);
  return false;
}

caf::expected<checkpoint_info> async_saver::execute(job& next) {
  auto start = std::chrono::steady_clock::now();
  auto& cfg = store_.config();
  if (ready_ == nullptr && cfg.world_size > 1)
    return make_error(errc::invalid_config, "checkpoint of " + std::to_string(cfg.world_size) +
                                                " workers without a checkpoint-ready barrier");
  // 1. The memory tier. 2. The copy to the peer, which sends the memory
  // tier's files (with TLS, the staging memory's bytes in place of the data
  // file: read back from it to be sealed, they cost the copy a fifth more
  // here). A final save without a deadline copies beside the directory write,
  // which reads the staging memory too: the exit waits for the longer of the
  // two, not their sum (on one host, 4 ranks x 256 MiB: about 1.9 s in
  // sequence). Every other save copies first, alone: as the copy of a
  // memory-only final save runs, whose deadline the copies' meter serves. The
  // copy's thread gets the job's numbers and its staging memory, not the job,
  // which stays with this thread until the copy ended. Every rank's copy ends
  // before any rank passes the next barrier: a rank leaves after the commit,
  // and with it the listener that keeps a peer's replica.
  std::vector<tier_time> tiers;
  auto memory = save_memory_tier(next);
  if (memory) tiers.push_back(*memory);
  std::future<std::optional<tier_time>> peer;
  if (memory && tiers_.replicate) {
    replica_job copy{next.step, next.total_run_calls, next.snap.size(),
                     next.options.deadline_unix_ms,
                     std::string_view{next.snap.bytes.data(), next.snap.size()}};
    if (next.options.final_save && copy.deadline_unix_ms == 0) {
      try {
        background_threads_block_signals block;
        peer = std::async(std::launch::async, [this, copy] {
          name_this_thread(replica_thread_name);
          return replicate(copy);
        });
      } catch (const std::system_error&) {
        // No thread to be had: the copy runs here, before the directory.
      }
    }
    if (!peer.valid())
      if (auto copied = replicate(copy)) tiers.push_back(*copied);
  }
  // A save committed in memory (and on the peer) only.
  auto bytes = static_cast<int64_t>(next.snap.size());
  auto in_memory_only = [&] {
    checkpoint_info info;
    info.step = next.step;
    info.total_run_calls = next.total_run_calls;
    info.path = join_path(tiers_.memory->path(), step_dir_name(next.step));
    info.bytes = bytes;
    info.tiers = std::move(tiers);
    info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log(log_level::info, component, "checkpoint of step ", next.step,
        " reached tiers: ", describe_tiers(info.tiers));
    return info;
  };
  // 3. A final save too slow for the directory commits in memory (and on
  // the peer) only: it has a deadline, so its copy ended before the vote.
  auto memory_only = agree_memory_only(next, memory.has_value());
  if (!memory_only) return std::move(memory_only.error());
  if (*memory_only) return in_memory_only();
  // 4. The directory: the shard, the barrier, the commit rank's manifest.
  auto info = store_.write_shard(next.snap, next.step);
  // The whole shard write (data, index, syncs) is what a final save waits for.
  if (info) directory_meter_.record(static_cast<uint64_t>(info->bytes), info->seconds);
  // The staging memory goes back to the pool as soon as it is on disk and
  // sent to the peer.
  std::optional<tier_time> copied;
  if (peer.valid()) copied = peer.get();
  next.snap = snapshot{};
  if (copied) tiers.push_back(*copied);
  // 5. A directory write that failed somewhere (a full disk) commits the
  // save in memory only where every rank holds its shard there.
  auto written = agree_directory_written(next, memory.has_value(), info);
  if (!written) return std::move(written.error());
  if (*written) return in_memory_only();
  if (!info) return info;
  auto step_text = std::to_string(next.step);
  if (ready_ != nullptr) {
    if (auto err = ready_->arrive_and_wait(shards_barrier_prefix + step_text, barrier_timeout_))
      return err;
  }
  const bool commit_rank = cfg.rank == cfg.commit_rank;
  if (commit_rank) {
    if (auto err = store_.write_manifest(next.step, next.total_run_calls)) return err;
  }
  if (ready_ != nullptr) {
    if (auto err = ready_->arrive_and_wait(commit_barrier_prefix + step_text, barrier_timeout_))
      return err;
  }
  info->total_run_calls = next.total_run_calls;
  tiers.push_back({tier_directory, info->seconds});
  info->tiers = std::move(tiers);
  info->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log(log_level::info, component, "checkpoint of step ", next.step, " committed in ", info->path,
      " (", info->bytes, " bytes, ", info->seconds, " s)");
  log(log_level::info, component, "checkpoint of step ", next.step,
      " reached tiers: ", describe_tiers(info->tiers));
  // Old checkpoints are removed once the peers passed the commit barrier, so
  // that none waits for it; a removal that fails leaves this commit standing.
  if (commit_rank) {
    if (auto err = store_.apply_retention(next.step))
      log(log_level::warning, component, "after the commit of step ", next.step,
          ", removing old checkpoints failed: ", describe(err));
  }
  return info;
}

}  // namespace lifeboat::checkpoint
