// lifeboat-checkpoint list|verify|buffers DIR [--step S] [--rank R]
//
// Looks into a checkpoint directory from outside the job, writing nothing in
// it: the committed checkpoints, whether every byte of one still verifies
// (as a restore of every rank would check it), and what a rank's shard holds.
// Exits 0 when it could answer, 1 when there is no committed checkpoint to
// look at or one does not verify, 2 after a bad command line or a directory
// that cannot be read. A step removed while it is looked at (beside a running
// job) gets a line saying so and does not fail the command.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "apps/command_line.hpp"
#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/shard_reader.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/verify_checkpoint.hpp"
#include "messages/errors.hpp"

namespace {

namespace cp = lifeboat::checkpoint;

constexpr const char* program = "lifeboat-checkpoint";
constexpr int exit_ok = 0;
constexpr int exit_not_verified = 1;
constexpr int64_t max_step = std::numeric_limits<int64_t>::max();
constexpr int64_t max_rank = 1 << 20;

constexpr const char* synopsis =
    "usage: lifeboat-checkpoint list DIR\n"
    "       lifeboat-checkpoint verify DIR [--step S]\n"
    "       lifeboat-checkpoint buffers DIR [--step S] [--rank R]\n";
constexpr const char* explanation =
    "Looks into the checkpoint directory DIR without writing in it.\n"
    "  list     one line per committed checkpoint, oldest first\n"
    "  verify   reads every rank's shard of each committed checkpoint (or of step S) and\n"
    "           checks every byte against its checksums, as a restore would\n"
    "  buffers  the buffers rank R's shard holds, of the newest checkpoint (or of step S)\n"
    "Exit codes: 0 answered, 1 no committed checkpoint or one that does not verify,\n"
    "2 a bad command line or a directory that cannot be read.";

struct options {
  std::string command;
  std::string dir;
  std::optional<int64_t> step;
  int rank = 0;
};

std::variant<options, int> parse_args(int argc, char** argv) {
  options out;
  int64_t step = 0;
  CLI::App app{"", program};
  lifeboat::apps::configure_app(app, synopsis, explanation);
  app.add_option("command", out.command, "list, verify or buffers")
      ->required()
      ->check(CLI::IsMember({"list", "verify", "buffers"}));
  app.add_option("dir", out.dir, "the checkpoint directory")->required();
  auto* step_flag = lifeboat::apps::add_integer(app, "--step", step, 0, max_step,
                                                "the checkpoint of this step only")
                        ->type_name("S");
  auto* rank_flag =
      lifeboat::apps::add_integer(app, "--rank", out.rank, 0, max_rank, "whose shard (buffers)")
          ->type_name("R")
          ->capture_default_str();
  if (auto code = lifeboat::apps::parse_command_line(app, argc, argv)) return *code;
  if (step_flag->count() > 0) {
    if (out.command == "list") return lifeboat::apps::usage_error(app, "list takes no --step");
    out.step = step;
  }
  if (rank_flag->count() > 0 && out.command != "buffers")
    return lifeboat::apps::usage_error(app, out.command + " takes no --rank");
  return out;
}

// "2026-11-28T12:01:02Z".
std::string utc_time(int64_t unix_ms) {
  auto seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  char text[32] = "?";
  if (::gmtime_r(&seconds, &tm) != nullptr) std::strftime(text, sizeof(text), "%FT%TZ", &tm);
  return text;
}

int fail(const std::string& why, int code) {
  std::cerr << program << ": " << why << "\n";
  return code;
}

std::string step_dir(const options& opts, int64_t step) {
  return cp::join_path(opts.dir, cp::step_dir_name(step));
}

// Says so when `err` is that of a step that a running job's retention
// removed after it was listed as committed: no longer there to look at,
// which says nothing about its bytes. Whether it was.
bool report_if_removed(const caf::error& err, int64_t step) {
  if (err != lifeboat::make_error(lifeboat::errc::not_found)) return false;
  std::cout << "step=" << step
            << " removed during the check: no longer committed (a running job's retention "
               "removes its older checkpoints as it saves)\n";
  return true;
}

int list(const options& opts, const std::vector<int64_t>& steps) {
  int code = exit_ok;
  for (auto step : steps) {
    auto manifest = cp::read_manifest(step_dir(opts, step), step);
    if (!manifest && report_if_removed(manifest.error(), step)) continue;
    if (!manifest) {
      std::cout << "step=" << step << " unreadable: " << lifeboat::describe(manifest.error())
                << "\n";
      code = exit_not_verified;
      continue;
    }
    int64_t bytes = 0;
    for (auto& shard : manifest->shards()) bytes += shard.data_bytes();
    std::cout << "step=" << step << " world_size=" << manifest->world_size()
              << " total_run_calls=" << manifest->total_run_calls() << " bytes=" << bytes
              << " created=" << utc_time(manifest->created_unix_ms())
              << " path=" << step_dir(opts, step) << "\n";
  }
  return code;
}

int verify(const options& opts, const std::vector<int64_t>& steps) {
  int code = exit_ok;
  for (auto step : steps) {
    auto start = std::chrono::steady_clock::now();
    auto verified = cp::verify_checkpoint(opts.dir, step);
    if (!verified && report_if_removed(verified.error(), step)) continue;
    if (!verified) {
      std::cout << "step=" << step << " not verified: " << lifeboat::describe(verified.error())
                << "\n";
      code = exit_not_verified;
      continue;
    }
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.3f",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::cout << "step=" << step << " verified: " << verified->manifest.shards_size() << " shards, "
              << verified->bytes << " bytes in " << seconds << " s\n";
  }
  return code;
}

int buffers(const options& opts, int64_t step) {
  auto dir = step_dir(opts, step);
  auto manifest = cp::read_manifest(dir, step);
  if (!manifest) return fail(lifeboat::describe(manifest.error()), exit_not_verified);
  if (opts.rank >= manifest->world_size())
    return fail("step " + std::to_string(step) + " was written by " +
                    std::to_string(manifest->world_size()) + " workers: rank " +
                    std::to_string(opts.rank) + " is none of them",
                exit_not_verified);
  auto record = cp::rank_record(*manifest, dir, opts.rank);
  if (!record) return fail(lifeboat::describe(record.error()), exit_not_verified);
  auto index = cp::read_shard_index(dir, **record);
  if (!index) return fail(lifeboat::describe(index.error()), exit_not_verified);
  // The name last: it may hold spaces ("model/0.weight (memory order 0,2,3,1)").
  for (auto& buffer : index->buffers())
    std::cout << "bytes=" << buffer.size()
              << " kind=" << cp::to_string(cp::from_wire(buffer.kind()))
              << " name=" << buffer.name() << "\n";
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = parse_args(argc, argv);
  if (auto* code = std::get_if<int>(&parsed)) return *code;
  auto& opts = std::get<options>(parsed);
  auto committed = cp::committed_steps_in(opts.dir);
  if (!committed)
    return fail("checkpoint directory " + opts.dir + ": " + lifeboat::describe(committed.error()),
                lifeboat::apps::usage_exit_code);
  std::vector<int64_t> steps = *committed;
  if (opts.step) {
    if (std::find(steps.begin(), steps.end(), *opts.step) == steps.end())
      return fail(
          "no committed checkpoint of step " + std::to_string(*opts.step) + " in " + opts.dir,
          exit_not_verified);
    steps = {*opts.step};
  }
  if (steps.empty()) return fail(cp::none_committed_in(opts.dir), exit_not_verified);
  if (opts.command == "list") return list(opts, steps);
  if (opts.command == "verify") return verify(opts, steps);
  return buffers(opts, steps.back());
}
