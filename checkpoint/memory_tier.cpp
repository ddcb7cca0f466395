#include "checkpoint/memory_tier.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <xxhash.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/memory_budget.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat::checkpoint {

namespace {

constexpr const char* component = "checkpoint";
constexpr const char* job_dir_prefix = "lifeboat-";
// Room a shard needs beyond its data: the index and the manifest (a few KiB
// per GiB of state), with a wide margin.
constexpr uint64_t index_allowance = uint64_t{1} << 20;
constexpr uint64_t mib = uint64_t{1} << 20;
// In a job's default memory directory: the absolute checkpoint directory.
constexpr const char* owner_file_name = "CHECKPOINT_DIR";
// In LIFEBOAT_LOCAL_DIR, beside the above: the checkpoint directory's
// memory_dir_name when the job claimed it (the name of a default directory
// says as much by itself).
constexpr const char* owner_id_file_name = "CHECKPOINT_ID";
// Another job's start probes a tier's locks for an instant (in_use) before it
// removes a tier no restore can use: a lock found taken is tried again for
// this long before the tier counts as another worker's.
constexpr int lock_attempts = 5;
constexpr auto lock_retry_delay = std::chrono::milliseconds{20};

// `checkpoint_dir` absolute and normal: what a memory directory's name
// hashes and its record holds.
caf::expected<std::string> absolute_dir(const std::string& checkpoint_dir) {
  std::error_code ec;
  auto absolute = std::filesystem::absolute(checkpoint_dir, ec).lexically_normal().string();
  if (ec)
    return make_error(errc::io_error,
                      "the absolute path of " + checkpoint_dir + ": " + ec.message());
  return absolute;
}

// Records the absolute checkpoint directory in the memory directory `dir`.
// A rename makes the record whole for any worker that reads it; every rank
// of this host writes it as it starts.
caf::error record_owner(const std::string& dir, const std::string& absolute) {
  return write_file_durably(*posix_file_system(), dir, owner_file_name, absolute, private_file_mode,
                            file_writers::several);
}

// The stores under a job's memory directory: its ranks' tiers and the
// replicas it keeps for peers.
std::vector<std::filesystem::path> rank_dirs_in(const std::filesystem::path& job) {
  std::vector<std::filesystem::path> out;
  for (auto& parent : {job, job / peer_tier_dir_name})
    for (auto& dir : memory_tier_rank_dirs(parent.string())) out.emplace_back(dir);
  return out;
}

// Whether a worker holds the store in `dir` (memory_tier::open locks it).
bool held(const std::filesystem::path& dir) { return directory_lock::is_held(dir.string()); }

// Whether a worker holds one of `job`'s stores: a live job's memory
// directory, whatever its record says.
bool in_use(const std::filesystem::path& job) {
  auto dirs = rank_dirs_in(job);
  return std::any_of(dirs.begin(), dirs.end(), held);
}

// The world size of a rank's store in `job` (a peer replica's does not
// count) that a worker holds and that is not `world_size`: a job of another
// size running on the same checkpoint directory; 0: none.
int other_world_held(const std::filesystem::path& job, int world_size) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it{job, ec}, end; !ec && it != end; it.increment(ec)) {
    int rank = 0, world = 0;
    auto name = it->path().filename().string();
    if (std::sscanf(name.c_str(), "rank-%d-of-%d", &rank, &world) == 2 && world != world_size &&
        held(it->path()))
      return world;
  }
  return 0;
}

// Why the memory directory `job`, whose record is `record`, can serve no
// restore any more, if it cannot: its checkpoint directory is gone or was
// made again, or holds a newer checkpoint than any here (a restore takes
// the directory's newest over an older copy in memory: the job went on on
// another host, say). Nothing where the record is being written.
std::optional<std::string> why_useless(const std::filesystem::path& job,
                                       const std::string& record) {
  auto recorded = read_whole_file(record);
  if (!recorded) return std::nullopt;
  auto expected = default_memory_dir(*recorded);
  if (!expected || std::filesystem::path{*expected}.filename() != job.filename())
    return std::string{"of a checkpoint directory that is gone"};
  auto newest = newest_committed_step_in(*recorded);
  if (!newest) return std::nullopt;
  for (auto& dir : rank_dirs_in(job))
    if (auto held = newest_committed_step_in(dir.string()); held && *held >= *newest)
      return std::nullopt;
  return "older than the newest checkpoint of " + *recorded + " (step " + std::to_string(*newest) +
         "), which a restore reads instead";
}

std::string rank_dir_name(int rank, int world_size) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "rank-%05d-of-%05d", rank, world_size);
  return buf;
}

caf::error not_private(const std::string& dir, const std::string& why) {
  return make_error(errc::refused,
                    dir + " " + why + ": another user could read or replace its checkpoints");
}

// The tier's directories live in a directory every user may write into
// (/dev/shm), under a name another user can work out from the checkpoint
// directory. One made there first by someone else would be written into and
// restored from. `parent` (the job's directory, or LIFEBOAT_LOCAL_DIR) must
// be this user's or root's, and writable by others only where it is sticky
// (/dev/shm itself); the rank's own directory, a directory and no link, this
// user's and writable by no one else. Either may not exist yet.
caf::error check_private_parent(const std::string& parent) {
  struct stat st {};
  auto uid = ::geteuid();
  if (::stat(parent.c_str(), &st) == 0) {
    if (st.st_uid != uid && st.st_uid != 0)
      return not_private(parent, "belongs to uid " + std::to_string(st.st_uid));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0)
      return not_private(parent, "is writable by other users");
  }
  return {};
}

caf::error check_private(const std::string& parent, const std::string& rank_dir) {
  if (auto err = check_private_parent(parent)) return err;
  struct stat st {};
  auto uid = ::geteuid();
  if (::lstat(rank_dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return not_private(rank_dir, "is no directory");
    if (st.st_uid != uid)
      return not_private(rank_dir, "belongs to uid " + std::to_string(st.st_uid));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
      return not_private(rank_dir, "is writable by other users");
  }
  return {};
}

// Whether a file of `size` bytes serves as the spare of a shard of
// `data_bytes`: cut to it, or grown by at most the index allowance that
// make_room keeps anyway (see take_spare).
bool spare_for(uint64_t size, uint64_t data_bytes) { return data_bytes <= size + index_allowance; }

caf::expected<uint64_t> free_bytes(const std::string& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return io_error("statvfs", dir, errno);
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

}  // namespace

std::vector<std::string> memory_tier_rank_dirs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("rank-", 0) == 0) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string none_committed_in(const std::string& dir) {
  auto ranks = memory_tier_rank_dirs(dir);
  if (ranks.empty()) return "no committed checkpoint in " + dir;
  std::string listed;
  for (auto& rank : ranks) listed += (listed.empty() ? "" : ", ") + rank;
  return "no committed checkpoint in " + dir +
         ": it is a memory tier's directory, with a checkpoint directory per rank: " + listed;
}

caf::expected<std::string> default_memory_dir(const std::string& checkpoint_dir) {
  auto name = memory_dir_name(checkpoint_dir);
  if (!name) return name;
  return join_path(default_memory_root, *name);
}

caf::expected<std::string> memory_dir_name(const std::string& checkpoint_dir) {
  auto made_absolute = absolute_dir(checkpoint_dir);
  if (!made_absolute) return made_absolute;
  auto& absolute = *made_absolute;
  struct stat st {};
  if (::stat(absolute.c_str(), &st) != 0) return io_error("stat", absolute, errno);
  auto identity = absolute + '\0' + std::to_string(st.st_dev) + '\0' + std::to_string(st.st_ino);
  // The inode alone does not tell a directory made again from the one
  // before: a file system hands a freed inode number out again (ext4 at
  // once), and the fresh start restored the removed directory's checkpoints
  // from memory. The birth time does, where the file system keeps one (and
  // a sandbox lets statx(2) through).
  struct statx born {};
  if (::statx(AT_FDCWD, absolute.c_str(), 0, STATX_BTIME, &born) == 0 &&
      (born.stx_mask & STATX_BTIME) != 0)
    identity +=
        '\0' + std::to_string(born.stx_btime.tv_sec) + '.' + std::to_string(born.stx_btime.tv_nsec);
  char name[40];
  std::snprintf(name, sizeof(name), "%s%016" PRIx64, job_dir_prefix,
                static_cast<uint64_t>(XXH3_64bits(identity.data(), identity.size())));
  return std::string{name};
}

caf::error claim_local_memory_dir(const std::string& dir, const std::string& checkpoint_dir) {
  if (auto err = check_private_parent(dir)) return err;
  auto id = memory_dir_name(checkpoint_dir);
  if (!id) return std::move(id.error());
  auto absolute = absolute_dir(checkpoint_dir);
  if (!absolute) return std::move(absolute.error());
  if (auto recorded = read_whole_file(join_path(dir, owner_id_file_name))) {
    if (*recorded == *id) return {};
    auto owner = read_whole_file(join_path(dir, owner_file_name));
    auto owner_now = owner ? memory_dir_name(*owner) : caf::expected<std::string>{owner.error()};
    auto named = owner ? *owner : std::string{"unknown"};
    // A record without tiers is that of a job that ended (its last rank
    // removed its tiers, and the record stayed where the directory holds
    // files of others): nothing of it to restore, the directory is free.
    auto tiers = rank_dirs_in(dir);
    if (!tiers.empty() && owner_now && *owner_now == *recorded)
      return make_error(errc::refused,
                        dir + " holds the memory tier of another checkpoint directory, " + named +
                            ": restored, it would start this job from that job's state (give "
                            "each checkpoint directory a LIFEBOAT_LOCAL_DIR of its own)");
    // Gone or made again: no start restores these any more. A store a worker
    // holds is this job's own, made meanwhile by a rank that claimed first.
    for (auto& rank_dir : tiers)
      if (!held(rank_dir))
        if (auto err = remove_tree(rank_dir.string())) return err;
    if (!tiers.empty())
      log(log_level::info, component, "removed the memory tier in ", dir,
          " of a checkpoint directory that is gone (", named, ")");
  }
  // The path first: a record whose CHECKPOINT_ID is there is whole.
  auto& files = *posix_file_system();
  if (auto err = make_dirs_durable(files, dir, private_dir_mode)) return err;
  if (auto err = record_owner(dir, *absolute)) return err;
  return write_file_durably(files, dir, owner_id_file_name, *id, private_file_mode,
                            file_writers::several);
}

caf::error remove_orphaned_memory_tiers(const std::string& dir, const std::string& checkpoint_dir) {
  namespace fs = std::filesystem;
  auto absolute = absolute_dir(checkpoint_dir);
  if (!absolute) return std::move(absolute.error());
  if (auto err = record_owner(dir, *absolute)) return err;
  return remove_orphaned_memory_tiers_in(fs::path{dir}.parent_path().string(),
                                         fs::path{dir}.filename().string());
}

caf::error remove_orphaned_memory_tiers_in(const std::string& root, const std::string& keep) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // increment(ec), not ++: a listing that fails midway is this call's error,
  // not an exception.
  for (fs::directory_iterator it{root, ec}, end; !ec && it != end; it.increment(ec)) {
    auto& entry = *it;
    auto name = entry.path().filename().string();
    struct stat st {};
    if (name == keep || name.rfind(job_dir_prefix, 0) != 0 ||
        ::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
      continue;
    auto record = (entry.path() / owner_file_name).string();
    if (!file_exists(record) || in_use(entry.path())) continue;
    auto why = why_useless(entry.path(), record);
    if (!why) continue;
    if (auto err = remove_tree(entry.path().string())) return err;
    log(log_level::info, component, "removed the memory tier ", entry.path().string(), " ", *why);
  }
  if (ec) return make_error(errc::io_error, "listing " + root + ": " + ec.message());
  return {};
}

caf::expected<memory_tier> memory_tier::open(const std::string& dir, int rank, int world_size,
                                             uint64_t max_bytes,
                                             std::shared_ptr<file_system> files) {
  store_config cfg;
  cfg.dir = join_path(dir, rank_dir_name(rank, world_size));
  if (auto err = check_private(dir, cfg.dir)) return err;
  cfg.rank = 0;
  cfg.world_size = 1;
  cfg.max_to_keep = memory_tier_max_to_keep;
  cfg.files = std::move(files);
  auto opened = store::open(std::move(cfg));
  if (!opened) return std::move(opened.error());
  auto lock = directory_lock::acquire(opened->config().dir);
  for (int attempt = 1;
       attempt < lock_attempts && !lock && lock.error() == make_error(errc::already_exists);
       ++attempt) {
    std::this_thread::sleep_for(lock_retry_delay);
    lock = directory_lock::acquire(opened->config().dir);
  }
  if (!lock) {
    if (lock.error() != make_error(errc::already_exists)) return std::move(lock.error());
    return make_error(errc::already_exists,
                      opened->config().dir +
                          " is in use by another process: the same job (the same checkpoint "
                          "directory) started twice on this host, or two of its workers given "
                          "rank " +
                          std::to_string(rank) +
                          "? Two workers on one rank's checkpoints remove and overwrite each "
                          "other's");
  }
  // A job of another size on the same checkpoint directory (the job started
  // again with another --nproc while the first still runs) holds other rank
  // directories: each job would write its steps over the other's.
  if (auto other = other_world_held(dir, world_size); other != 0) {
    // The rank directory this open made for nothing goes: left, it would
    // keep the running job's directory at its clean end. One that holds
    // checkpoints (of an earlier run of this size) stays.
    if (!opened->newest_committed_step(std::nullopt))
      if (auto err = remove_tree(opened->config().dir))
        log(log_level::debug, component, "a refused rank directory stays: ", describe(err));
    return make_error(errc::already_exists,
                      dir + " holds the memory tier of a job of " + std::to_string(other) +
                          " workers that is running on the same checkpoint directory: the job "
                          "started again with " +
                          std::to_string(world_size) +
                          " workers while the first still runs? Two jobs on one checkpoint "
                          "directory write their checkpoints over each other's");
  }
  // A crash during a save leaves a manifest-less step behind; nobody else
  // writes into this rank's tier (the lock says so), so it can go now.
  if (auto err = opened->remove_partial()) return err;
  memory_tier tier{std::move(*opened), std::move(*lock), max_bytes};
  // So is a spare that was being allocated (a finished one stays for the
  // next save).
  tier.files().unlink(tier.spare_path() + temp_suffix);
  return tier;
}

caf::expected<checkpoint_info> memory_tier::save(const snapshot& snap, int64_t step,
                                                 int64_t total_run_calls) {
  bool spare = take_spare(snap.size());
  if (auto err = make_room((spare ? 0 : snap.size()) + index_allowance, step)) return err;
  auto info = store_.write_shard(snap, step, spare ? spare_path() : std::string{});
  if (!info) return info;
  if (auto err = commit(step, total_run_calls, snap.size())) return err;
  info->total_run_calls = total_run_calls;
  info->tiers = {{tier_memory, info->seconds}};
  return info;
}

memory_tier::shard_files memory_tier::files_of(int64_t step) const {
  auto dir = store_.step_path(step);
  return {join_path(dir, shard_index_name(0, 1)), join_path(dir, shard_data_name(0, 1))};
}

caf::expected<checkpoint_info> memory_tier::adopt(
    int64_t step, int64_t total_run_calls, uint64_t index_bytes, uint64_t data_bytes,
    const std::function<caf::error(const shard_files&)>& fill) {
  auto start = std::chrono::steady_clock::now();
  auto dir = store_.step_path(step);
  // An older copy of the same step is uncommitted first: a crash in the
  // middle then leaves a partial step, never the old manifest over new files.
  if (file_exists(dir)) {
    auto manifest = join_path(dir, manifest_file_name);
    if (file_exists(manifest) && files().unlink(manifest) != 0)
      return io_error("unlink", manifest, errno);
    if (auto err = remove_tree(dir)) return err;
  }
  bool spare = take_spare(data_bytes);
  if (auto err = make_room(index_bytes + (spare ? 0 : data_bytes) + index_allowance, step))
    return err;
  if (auto err = make_dirs_durable(files(), dir, store_.config().dir_mode)) return err;
  // A spare that cannot be moved (gone) leaves `fill` a new file to write.
  if (spare) files().rename(spare_path(), files_of(step).data);
  if (auto err = fill(files_of(step))) {
    remove_tree(dir);
    return err;
  }
  if (auto err = commit(step, total_run_calls, data_bytes)) return err;
  checkpoint_info info;
  info.step = step;
  info.total_run_calls = total_run_calls;
  info.path = dir;
  info.bytes = static_cast<int64_t>(index_bytes + data_bytes);
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  info.tiers = {{tier_memory, info.seconds}};
  return info;
}

caf::expected<memory_tier::room_left> memory_tier::room() const {
  auto free = free_bytes(path());
  if (!free) return std::move(free.error());
  room_left left{*free, "the file system's free space"};
  // A RAM-backed tier takes memory that nothing reclaims (memory_budget.hpp):
  // /dev/shm's free space is half the host's memory by default, and in a
  // container its pages count against the container's limit.
  if (ram_backed(path()))
    if (auto ram = host_ram_room(); ram && *ram < left.bytes)
      left = {*ram, "leaving the host and its cgroup a tenth of their memory, at least 1 GiB"};
  if (max_bytes_ == unbounded) return left;
  std::error_code ec;
  uint64_t used = 0;
  for (auto& entry : std::filesystem::recursive_directory_iterator(path(), ec))
    if (entry.is_regular_file(ec)) used += entry.file_size(ec);
  if (ec) return make_error(errc::io_error, "the size of " + path() + ": " + ec.message());
  if (auto limited = max_bytes_ > used ? max_bytes_ - used : 0; limited < left.bytes)
    left = {limited, "the tier's size limit"};
  return left;
}

caf::error memory_tier::make_room(uint64_t bytes, int64_t step) {
  auto steps = store_.committed_steps();
  if (!steps) return std::move(steps.error());
  for (size_t dropped = 0;; ++dropped) {
    auto available = room();
    if (!available) return std::move(available.error());
    if (available->bytes >= bytes) return {};
    if (dropped == steps->size())
      return make_error(errc::io_error, "the shard of step " + std::to_string(step) + " (" +
                                            std::to_string(bytes / mib) +
                                            " MiB) does not fit in the memory tier " + path() +
                                            " (" + std::to_string(available->bytes / mib) +
                                            " MiB of room: " + available->bound + ")");
    // Oldest first; the manifest goes first so that a crash on the way
    // leaves a partial step (removed at the next open), never a torn one.
    auto old = store_.step_path((*steps)[dropped]);
    auto manifest = join_path(old, manifest_file_name);
    if (::unlink(manifest.c_str()) != 0) return io_error("unlink", manifest, errno);
    if (auto err = remove_tree(old)) return err;
    log(log_level::info, component, "memory tier: removed ", old, " to make room for step ", step);
  }
}

caf::error memory_tier::commit(int64_t step, int64_t total_run_calls, uint64_t data_bytes) {
  if (auto err = store_.write_manifest(step, total_run_calls)) return err;
  // The oldest step that retention drops now gives its data file to the
  // next save, the spare, when take_spare would take it for this shard's
  // size (and resize it to the next one's): its pages are not freed here
  // only to be allocated again after the save. It is uncommitted first, as retention
  // would: a crash on the way leaves a partial step.
  auto steps = store_.committed_steps();
  if (steps && steps->size() > static_cast<size_t>(memory_tier_max_to_keep) &&
      !file_exists(spare_path())) {
    auto oldest = steps->front();
    auto data = files_of(oldest).data;
    auto manifest = join_path(store_.step_path(oldest), manifest_file_name);
    if (auto size = file_size(data);
        size && spare_for(*size, data_bytes) && files().unlink(manifest) == 0)
      files().rename(data, spare_path());
  }
  return store_.apply_retention(step);
}

std::string memory_tier::spare_path() const { return join_path(path(), memory_tier_spare_name); }

bool memory_tier::take_spare(uint64_t data_bytes) {
  auto spare = spare_path();
  auto size = file_size(spare);
  if (!size) return false;
  if (*size == data_bytes) return true;
  // State saved through callbacks (an optimizer's rates, the generators, as
  // JSON) changes the shard's size by a few bytes from save to save, and
  // with an exact match alone no such job ever wrote into a spare. Cut, the
  // spare keeps its pages and frees the tail; grown by at most the index
  // allowance that make_room keeps anyway, it allocates only the difference.
  // Another size is no spare: its room goes to the shard about to be written.
  if (spare_for(*size, data_bytes)) {
    auto fd = open_file(files(), spare, O_WRONLY, store_.config().file_mode);
    if (fd) {
      auto length = static_cast<off_t>(data_bytes);
      bool resized = (data_bytes < *size ? files().ftruncate(fd->get(), length)
                                         : files().fallocate(fd->get(), length)) == 0;
      if (!fd->close(spare) && resized) return true;
    }
  }
  files().unlink(spare);
  return false;
}

caf::error memory_tier::prepare_spare(uint64_t data_bytes) {
  if (data_bytes == 0 || take_spare(data_bytes)) return {};
  auto available = room();
  if (!available) return std::move(available.error());
  if (available->bytes < data_bytes + index_allowance)
    return make_error(errc::io_error,
                      "no spare of " + std::to_string(data_bytes / mib) +
                          " MiB in the memory tier " + path() + " (" +
                          std::to_string(available->bytes / mib) +
                          " MiB of room beside its checkpoints: " + available->bound + ")");
  // Allocated under a temporary name: a spare under its own name always has
  // its whole size.
  auto spare = spare_path();
  auto tmp = spare + temp_suffix;
  auto fd = open_file(files(), tmp, O_WRONLY | O_CREAT | O_TRUNC, store_.config().file_mode);
  if (!fd) return std::move(fd.error());
  caf::error err;
  if (files().fallocate(fd->get(), static_cast<off_t>(data_bytes)) != 0)
    err = io_error("fallocate", tmp, errno);
  if (auto closed = fd->close(tmp); !err) err = std::move(closed);
  if (!err && files().rename(tmp, spare) != 0) err = io_error("rename", tmp, errno);
  if (err) files().unlink(tmp);
  return err;
}

std::optional<int64_t> memory_tier::newest_step(std::optional<int64_t> max_step) const {
  return store_.newest_committed_step(max_step);
}

caf::expected<checkpoint_info> memory_tier::restore_step(int64_t step, state_registry& registry,
                                                         bool& touched) {
  auto info = store_.restore_step(step, registry, touched);
  if (info) info->tiers = {{tier_memory, info->seconds}};
  return info;
}

caf::error memory_tier::remove() {
  if (auto err = remove_tree(path())) return err;
  // The job's directory goes with its last rank: once no tier is left in it
  // (the peer tier's replicas go first). While another rank of this host
  // still has one there, it stays. Entry by entry, only what lifeboat put
  // there, never as a tree: it may be the user's LIFEBOAT_LOCAL_DIR, which
  // may hold files of others, written there while this runs. Two last ranks
  // at once may both try: a failure here is only a leftover.
  namespace fs = std::filesystem;
  auto job = fs::path{path()}.parent_path();
  if (!rank_dirs_in(job).empty()) return {};
  for (auto* name : {owner_file_name, owner_id_file_name}) ::unlink((job / name).c_str());
  ::rmdir((job / peer_tier_dir_name).c_str());
  if (::rmdir(job.c_str()) != 0 && errno != ENOENT)
    log(log_level::debug, component, "the job's memory directory ", job.string(),
        " stays: ", std::strerror(errno));
  return {};
}

}  // namespace lifeboat::checkpoint
