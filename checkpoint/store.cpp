#include "checkpoint/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/shard_reader.hpp"
#include "checkpoint/shard_writer.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat::checkpoint {

namespace {

constexpr const char* component = "checkpoint";

// The file created (and removed) by open to prove that the directory is
// writable; a name of its own for every call, as every worker of a job probes
// the same directory at start-up.
constexpr const char* probe_file_prefix = ".lifeboat-write-probe-";
std::atomic<uint64_t> probe_counter{0};

struct step_dir {
  int64_t step;
  bool committed;
};

caf::expected<std::vector<step_dir>> scan(const std::string& dir) {
  auto names = list_dir(dir);
  if (!names) return std::move(names.error());
  std::vector<step_dir> result;
  for (auto& name : *names) {
    auto step = parse_step_dir_name(name);
    if (!step) continue;
    auto committed = file_exists(join_path(join_path(dir, name), manifest_file_name));
    result.push_back({*step, committed});
  }
  std::sort(result.begin(), result.end(),
            [](const step_dir& a, const step_dir& b) { return a.step < b.step; });
  return result;
}

caf::error check_writable(file_system& fs, const std::string& dir) {
  auto probe = join_path(
      dir, probe_file_prefix + std::to_string(::getpid()) + "-" + std::to_string(probe_counter++));
  auto fd = open_file(fs, probe, O_WRONLY | O_CREAT | O_TRUNC);
  if (!fd) return std::move(fd.error());
  auto err = fd->close(probe);
  if (fs.unlink(probe) != 0 && !err) err = io_error("unlink", probe, errno);
  return err;
}

}  // namespace

caf::expected<std::vector<int64_t>> committed_steps_in(const std::string& dir) {
  auto dirs = scan(dir);
  if (!dirs) return std::move(dirs.error());
  std::vector<int64_t> steps;
  for (auto& d : *dirs)
    if (d.committed) steps.push_back(d.step);
  return steps;
}

std::optional<int64_t> newest_committed_step_in(const std::string& dir) {
  auto steps = committed_steps_in(dir);
  if (!steps || steps->empty()) return std::nullopt;
  return steps->back();
}

std::string describe_tiers(const std::vector<tier_time>& tiers) {
  std::string out;
  for (auto& tier : tiers) {
    if (!out.empty()) out += ", ";
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.3f", tier.seconds);
    out += tier.name + " (" + seconds + " s)";
  }
  return out;
}

store::store(store_config cfg) : cfg_(std::move(cfg)), pool_(staging_pool::make()) {}

caf::error store::check_config(const store_config& cfg) {
  if (cfg.dir.empty()) return make_error(errc::invalid_config, "no checkpoint directory given");
  if (cfg.world_size < 1 || cfg.rank < 0 || cfg.rank >= cfg.world_size)
    return make_error(errc::invalid_config, "checkpoint store: rank " + std::to_string(cfg.rank) +
                                                " of world size " + std::to_string(cfg.world_size));
  if (cfg.max_to_keep < 1)
    return make_error(
        errc::invalid_config,
        "checkpoint store: max_to_keep must be at least 1, not " + std::to_string(cfg.max_to_keep));
  if (!cfg.files) return make_error(errc::invalid_config, "checkpoint store: no file system");
  return {};
}

caf::expected<store> store::open_existing(store_config cfg) {
  if (auto err = check_config(cfg)) return err;
  return store{std::move(cfg)};
}

caf::expected<store> store::open(store_config cfg) {
  if (auto err = check_config(cfg)) return err;
  if (auto err = make_dirs_durable(*cfg.files, cfg.dir, cfg.dir_mode))
    return wrap_error(errc::io_error, "unusable checkpoint directory", err);
  if (auto err = check_writable(*cfg.files, cfg.dir))
    return wrap_error(errc::io_error, "unusable checkpoint directory", err);
  return store{std::move(cfg)};
}

std::string store::step_path(int64_t step) const {
  return join_path(cfg_.dir, step_dir_name(step));
}

caf::expected<std::vector<int64_t>> store::committed_steps() const {
  return committed_steps_in(cfg_.dir);
}

std::optional<int64_t> store::newest_committed_step(std::optional<int64_t> max_step) const {
  auto steps = committed_steps();
  if (!steps) return std::nullopt;
  for (auto i = steps->rbegin(); i != steps->rend(); ++i)
    if (!max_step || *i <= *max_step) return *i;
  return std::nullopt;
}

caf::expected<checkpoint_info> store::restore_step(int64_t step, state_registry& registry,
                                                   bool& touched, buffer_match match) {
  auto start = std::chrono::steady_clock::now();
  auto path = step_path(step);
  auto manifest = read_manifest(path, step);
  if (!manifest) return std::move(manifest.error());
  if (manifest->world_size() != cfg_.world_size)
    return make_error(errc::invalid_config, "checkpoint " + path + " was written by " +
                                                std::to_string(manifest->world_size()) +
                                                " workers, this job has " +
                                                std::to_string(cfg_.world_size) +
                                                ": a checkpoint restores into as many workers "
                                                "as wrote it (start that many, or give this "
                                                "job another checkpoint directory)");
  if (auto err = verify_shard_files(path, *manifest)) return err;
  auto found = rank_record(*manifest, path, cfg_.rank);
  if (!found) return std::move(found.error());
  auto& record = **found;
  auto index = read_shard_index(path, record);
  if (!index) return std::move(index.error());
  // A reader of part of the shard loads through a registry in the index's
  // order, with stand-ins for what it did not register.
  std::optional<subset_load> subset;
  if (match == buffer_match::subset) {
    auto made = subset_registry(*index, registry);
    if (!made) return std::move(made.error());
    subset = std::move(*made);
  } else if (auto err = check_buffer_table(*index, registry)) {
    return err;
  }
  auto& target = subset ? subset->registry : registry;
  if (auto err = load_shard(path, *index, record.chunks(), target, *pool_, touched,
                            subset ? subset->dropped : std::vector<bool>{}))
    return err;
  checkpoint_info info;
  info.step = step;
  info.total_run_calls = manifest->total_run_calls();
  info.path = path;
  info.bytes = record.data_bytes();
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  info.tiers = {{tier_directory, info.seconds}};
  return info;
}

caf::expected<std::optional<checkpoint_info>> store::restore_latest(state_registry& registry,
                                                                    std::optional<int64_t> max_step,
                                                                    buffer_match match) {
  auto steps = committed_steps();
  if (!steps) return std::move(steps.error());
  bool touched = false;
  std::optional<int64_t> partly_loaded;
  for (auto i = steps->rbegin(); i != steps->rend(); ++i) {
    if (max_step && *i > *max_step) continue;
    bool touched_now = false;
    auto info = restore_step(*i, registry, touched_now, match);
    if (info) {
      log(log_level::info, component, "restored step ", info->step, " from ", info->path, " (",
          info->bytes, " bytes in ", info->seconds, " s)");
      return std::optional<checkpoint_info>{std::move(*info)};
    }
    auto code = static_cast<errc>(info.error().code());
    if (code == errc::invalid_config) return std::move(info.error());
    // A checkpoint that cannot be read is skipped for the one before it; the
    // error text already names the file (and the chunk) with the word "corrupt".
    log(log_level::warning, component, "skipping checkpoint of step ", *i, ": ",
        describe(info.error()));
    if (touched_now && !touched) partly_loaded = *i;
    touched = touched || touched_now;
  }
  // The worker's state is now neither a checkpoint's nor its initial one,
  // and only a person can choose between losing the training done and
  // finding an intact copy: the line says both ways on.
  if (touched)
    return make_error(errc::corrupt,
                      "no checkpoint in " + cfg_.dir +
                          " verified, and the registered buffers "
                          "were partly overwritten by corrupt step " +
                          std::to_string(*partly_loaded) + ": put back an intact copy of " +
                          step_path(*partly_loaded) + ", or move it aside to start from scratch");
  return std::optional<checkpoint_info>{};
}

caf::error store::prepare(const state_registry& registry) {
  // Callback state has no size until it is saved, and saving it here would
  // call the user's code once more than asked: the headroom covers small ones,
  // and a save that needs more maps a larger buffer then.
  std::size_t bytes = staging_headroom;
  for (auto& buf : registry.buffers())
    if (buf.kind != buffer_kind::callbacks) bytes += buf.size;
  // The lease goes straight back to the pool, where the first save finds it.
  auto lease = pool_->acquire(bytes, registry.has_device_buffers());
  if (!lease) return std::move(lease.error());
  return {};
}

caf::expected<snapshot> store::take_snapshot(const state_registry& registry) {
  return checkpoint::take_snapshot(registry, *pool_);
}

caf::expected<checkpoint_info> store::write_shard(const snapshot& snap, int64_t step,
                                                  const std::string& preallocated) {
  auto path = step_path(step);
  // Rewriting the shards of a committed checkpoint would tear it until the
  // new commit; a step is saved once.
  if (file_exists(join_path(path, manifest_file_name)))
    return make_error(errc::already_exists,
                      "step " + std::to_string(step) + " is already committed in " + path);
  // A checkpoint directory removed while the job runs (a clean-up of /tmp, a
  // mistaken rm) is made again: the save goes where the job was told to
  // save. Kept only in the memory tier, it would be lost at the next start,
  // which looks for the memory tier of the directory made then (its name
  // follows from the directory's inode).
  if (!file_exists(cfg_.dir)) {
    log(log_level::warning, component, "checkpoint directory ", cfg_.dir,
        " was removed while the job ran: making it again");
    if (auto err = make_dirs_durable(*cfg_.files, cfg_.dir, cfg_.dir_mode)) return err;
  }
  if (auto err = make_dir_durable(*cfg_.files, path, cfg_.dir_mode)) return err;
  auto written = write_shard_files(
      path, step, cfg_.rank, cfg_.world_size, snap,
      {default_chunk_size, {cfg_.file_mode, cfg_.dir_mode}, cfg_.files, preallocated});
  if (!written) return std::move(written.error());
  checkpoint_info info;
  info.step = step;
  info.path = path;
  info.bytes = static_cast<int64_t>(written->data_bytes);
  info.seconds = written->seconds;
  info.breakdown = written->breakdown;
  return info;
}

caf::error store::commit(int64_t step, int64_t total_run_calls) {
  if (auto err = write_manifest(step, total_run_calls)) return err;
  return apply_retention(step);
}

caf::error store::check_commit_rank() const {
  if (cfg_.rank == cfg_.commit_rank) return {};
  return make_error(errc::invalid_argument, "rank " + std::to_string(cfg_.rank) +
                                                " cannot commit: commit rank is " +
                                                std::to_string(cfg_.commit_rank));
}

caf::error store::write_manifest(int64_t step, int64_t total_run_calls) {
  if (auto err = check_commit_rank()) return err;
  return checkpoint::write_manifest(*cfg_.files, step_path(step), step, cfg_.world_size,
                                    total_run_calls, cfg_.file_mode);
}

caf::error store::apply_retention(int64_t committed_step) {
  if (auto err = check_commit_rank()) return err;
  auto dirs = scan(cfg_.dir);
  if (!dirs) return std::move(dirs.error());
  // Newest first; the step just committed is always kept and counts as one.
  int kept = 1;
  for (auto i = dirs->rbegin(); i != dirs->rend(); ++i) {
    if (i->step == committed_step) continue;
    bool remove = false;
    if (i->committed)
      remove = ++kept > cfg_.max_to_keep;
    else
      remove = i->step < committed_step;  // a crash leftover: saves run in step order
    if (!remove) continue;
    auto path = step_path(i->step);
    // Un-commit first: a crash part-way through the removal then leaves a
    // manifest-less directory (removed as partial later), never a torn checkpoint.
    if (i->committed) {
      auto manifest = join_path(path, manifest_file_name);
      if (cfg_.files->unlink(manifest) != 0) return io_error("unlink", manifest, errno);
      if (auto err = fsync_dir(*cfg_.files, path)) return err;
    }
    if (auto err = remove_tree(path)) return err;
    log(log_level::debug, component, "removed ", path);
  }
  return fsync_dir(*cfg_.files, cfg_.dir);
}

caf::error store::remove_partial() {
  auto dirs = scan(cfg_.dir);
  if (!dirs) return std::move(dirs.error());
  bool removed = false;
  for (auto& d : *dirs) {
    if (d.committed) continue;
    auto path = step_path(d.step);
    if (auto err = remove_tree(path)) return err;
    log(log_level::info, component, "removed partial checkpoint ", path);
    removed = true;
  }
  if (removed) return fsync_dir(*cfg_.files, cfg_.dir);
  return {};
}

}  // namespace lifeboat::checkpoint
