#include "lifeboat/restore_checkpoint.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/verify_checkpoint.hpp"
#include "lifeboat/errors.hpp"
#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// How many workers wrote the newest committed checkpoint whose manifest
// reads: only a manifest says it, and a reader outside the job has no world
// size of its own. None when no manifest reads.
std::optional<int> world_size_of(const std::string& dir, const std::vector<int64_t>& steps) {
  for (auto i = steps.rbegin(); i != steps.rend(); ++i) {
    auto step_dir = checkpoint::join_path(dir, checkpoint::step_dir_name(*i));
    if (auto manifest = checkpoint::read_manifest(step_dir, *i)) return manifest->world_size();
  }
  return std::nullopt;
}

// config_error unless `dir` is a directory.
void check_directory(const std::string& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0)
    throw config_error("checkpoint directory " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(info.st_mode))
    throw config_error("checkpoint directory " + dir + ": not a directory");
}

// The public API reports a mismatch with the registration as config_error,
// every other failure to read as checkpoint_error.
[[noreturn]] void throw_error(const caf::error& err) {
  if (static_cast<errc>(err.code()) == errc::invalid_config) throw config_error(describe(err));
  throw checkpoint_error(describe(err));
}

}  // namespace

std::vector<int64_t> committed_steps(const std::string& checkpoint_dir) {
  check_directory(checkpoint_dir);
  auto steps = checkpoint::committed_steps_in(checkpoint_dir);
  if (!steps) throw_error(steps.error());
  return std::move(*steps);
}

std::optional<restored_checkpoint> restore_checkpoint(checkpoint_state& state,
                                                      const std::string& checkpoint_dir, int rank,
                                                      std::optional<int64_t> step) {
  check_directory(checkpoint_dir);
  if (rank < 0) throw config_error("rank " + std::to_string(rank) + " is no rank");
  if (auto err = state.registry().run_checks()) throw config_error(describe(err));

  auto steps = step ? std::vector<int64_t>{*step} : committed_steps(checkpoint_dir);
  if (steps.empty()) return std::nullopt;
  auto world_size = world_size_of(checkpoint_dir, steps);
  if (!world_size && step)
    throw checkpoint_error("no committed checkpoint of step " + std::to_string(*step) + " in " +
                           checkpoint_dir);
  if (!world_size)
    throw checkpoint_error("no committed checkpoint in " + checkpoint_dir +
                           " has a manifest that can be read");
  if (rank >= *world_size)
    throw config_error("the checkpoints in " + checkpoint_dir + " were written by " +
                       std::to_string(*world_size) + " workers: rank " + std::to_string(rank) +
                       " is none of them");

  auto store = checkpoint::store::open_existing({checkpoint_dir, rank, *world_size});
  if (!store) throw_error(store.error());
  std::optional<checkpoint::checkpoint_info> info;
  if (step) {
    bool touched = false;
    auto read =
        store->restore_step(*step, state.registry(), touched, checkpoint::buffer_match::subset);
    if (!read) throw_error(read.error());
    info = std::move(*read);
  } else {
    auto newest =
        store->restore_latest(state.registry(), std::nullopt, checkpoint::buffer_match::subset);
    if (!newest) throw_error(newest.error());
    if (!*newest)
      throw checkpoint_error("no committed checkpoint in " + checkpoint_dir +
                             " verified (each skipped checkpoint is logged)");
    info = std::move(*newest);
  }
  return restored_checkpoint{info->step, info->total_run_calls, info->path};
}

verified_checkpoint verify_checkpoint(const std::string& checkpoint_dir,
                                      std::optional<int64_t> step) {
  auto steps = committed_steps(checkpoint_dir);
  if (step && std::find(steps.begin(), steps.end(), *step) == steps.end())
    throw checkpoint_error("no committed checkpoint of step " + std::to_string(*step) + " in " +
                           checkpoint_dir);
  // The newest is listed again where a running job removed it meanwhile.
  auto verified = step ? checkpoint::verify_checkpoint(checkpoint_dir, *step)
                       : checkpoint::verify_newest(checkpoint_dir, [&] {
                           return checkpoint::committed_steps_in(checkpoint_dir);
                         });
  if (!verified) throw checkpoint_error(describe(verified.error()));
  auto checked = verified->manifest.step();
  return {checked, verified->manifest.total_run_calls(), verified->manifest.world_size(),
          verified->bytes,
          checkpoint::join_path(checkpoint_dir, checkpoint::step_dir_name(checked))};
}

}  // namespace lifeboat
