#include "lifeboat/restore_checkpoint.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/store.hpp"
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

// The public API reports a mismatch with the registration as config_error,
// every other failure to read as checkpoint_error.
[[noreturn]] void throw_error(const caf::error& err) {
  if (static_cast<errc>(err.code()) == errc::invalid_config) throw config_error(describe(err));
  throw checkpoint_error(describe(err));
}

}  // namespace

std::optional<restored_checkpoint> restore_checkpoint(checkpoint_state& state,
                                                      const std::string& checkpoint_dir, int rank) {
  struct stat info {};
  if (::stat(checkpoint_dir.c_str(), &info) != 0)
    throw config_error("checkpoint directory " + checkpoint_dir + ": " + std::strerror(errno));
  if (!S_ISDIR(info.st_mode))
    throw config_error("checkpoint directory " + checkpoint_dir + ": not a directory");
  if (rank < 0) throw config_error("rank " + std::to_string(rank) + " is no rank");
  if (auto err = state.registry().run_checks()) throw config_error(describe(err));

  auto steps = checkpoint::committed_steps_in(checkpoint_dir);
  if (!steps) throw_error(steps.error());
  if (steps->empty()) return std::nullopt;
  auto world_size = world_size_of(checkpoint_dir, *steps);
  if (!world_size)
    throw checkpoint_error("no committed checkpoint in " + checkpoint_dir +
                           " has a manifest that can be read");
  if (rank >= *world_size)
    throw config_error("the checkpoints in " + checkpoint_dir + " were written by " +
                       std::to_string(*world_size) + " workers: rank " + std::to_string(rank) +
                       " is none of them");

  auto store = checkpoint::store::open_existing({checkpoint_dir, rank, *world_size});
  if (!store) throw_error(store.error());
  auto restored =
      store->restore_latest(state.registry(), std::nullopt, checkpoint::buffer_match::subset);
  if (!restored) throw_error(restored.error());
  if (!*restored)
    throw checkpoint_error("no committed checkpoint in " + checkpoint_dir +
                           " verified (each skipped checkpoint is logged)");
  return restored_checkpoint{(*restored)->step, (*restored)->total_run_calls, (*restored)->path};
}

}  // namespace lifeboat
