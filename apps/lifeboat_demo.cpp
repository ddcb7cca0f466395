// lifeboat-demo: a deterministic synchronous trainer (DESIGN "lifeboat-demo").
//
//   lifeboat-demo --steps N --checkpoint-dir D [--state-mb M] [--step-ms T]
//                 [--grace-period S] [--fail-rank R --fail-step K]
//                 [--hang-rank R --hang-step K] [--slow-rank R --slow-factor F]
//
// --hang-*: rank R's training thread blocks forever in step K of the job's
// first start (LIFEBOAT_RESTART_COUNT 0), its runtime alive: a hang, which a
// restart gets past. --slow-*: rank R's steps take F times --step-ms.
//
// Prints "lifeboat-demo: rank=R step=N digest=HEX" when it finishes; exits 42
// after a preemption checkpoint, 3 when a worker failed.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <variant>

#include "apps/command_line.hpp"
#include "apps/demo_trainer.hpp"
#include "lifeboat/lifeboat.hpp"

namespace {

using namespace std::chrono_literals;

using lifeboat::apps::usage_exit_code;
constexpr int failure_exit_code = 3;
// A worker that waits this long at the per-step barrier is stuck; peers that
// fail or vanish are reported long before (heartbeats).
constexpr auto step_barrier_timeout = 300s;

// Training is done: a notice from now on finds nothing to save. Once the
// handler is gone its signals have their default action again, and one that
// lands in the last milliseconds before exit would kill a finished worker (its
// launcher would count the run as failed): the kernel gives a signal to the
// main thread first, and neither CAF's threads nor lifeboat's own
// (background_thread) ever take one. This thread holds them until the
// process exits; one that comes meanwhile goes with it.
void hold_notice_signals_until_exit() {
  sigset_t notices;
  sigemptyset(&notices);
  // The notice signals of every platform's defaults (SLURM adds SIGUSR1).
  sigaddset(&notices, SIGTERM);
  sigaddset(&notices, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &notices, nullptr);
}

constexpr const char* synopsis =
    "usage: lifeboat-demo --steps N --checkpoint-dir D [--state-mb M] [--step-ms T]\n"
    "                     [--grace-period S] [--fail-rank R --fail-step K]\n"
    "                     [--hang-rank R --hang-step K] [--slow-rank R --slow-factor F]\n";

constexpr int64_t max_step = INT64_MAX / 2;
constexpr int64_t max_rank = 1 << 20;

struct options {
  int64_t steps = 0;
  std::string checkpoint_dir;
  int64_t state_mb = 4;
  int64_t step_ms = 0;
  std::optional<int64_t> grace_period_s;
  int64_t fail_rank = -1;
  int64_t fail_step = -1;
  int64_t hang_rank = -1;
  int64_t hang_step = -1;
  int64_t slow_rank = -1;
  int64_t slow_factor = 1;
};

// Whether this is the job's first start: a restart gets past a hang.
bool first_start() {
  const char* count = std::getenv("LIFEBOAT_RESTART_COUNT");
  return count == nullptr || std::string{count} == "0";
}

// The hang of --hang-*: the thread waits forever, and a signal (a stack dump)
// interrupts the wait only to begin it again.
[[noreturn]] void hang_forever() {
  for (;;) ::pause();
}

// The options, or the code to exit with at once.
std::variant<options, int> parse(int argc, char** argv) {
  options o;
  CLI::App app{"", "lifeboat-demo"};
  lifeboat::apps::configure_app(app, synopsis);
  using lifeboat::apps::add_integer;
  add_integer(app, "--steps", o.steps, 0, max_step, "steps to train")->type_name("N")->required();
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "where checkpoints go")
      ->type_name("D")
      ->required();
  add_integer(app, "--state-mb", o.state_mb, 0, 1 << 16, "MiB of state per worker")
      ->type_name("M")
      ->capture_default_str();
  add_integer(app, "--step-ms", o.step_ms, 0, 3'600'000, "milliseconds per step")
      ->type_name("T")
      ->capture_default_str();
  int64_t grace_period_s = 0;
  auto* grace = add_integer(app, "--grace-period", grace_period_s, 0, 86'400 * 7,
                            "seconds from a notice to the kill (default: the platform's)")
                    ->type_name("S");
  // Each pair goes together: rank R's step K, or rank R's factor F.
  auto together = [](CLI::Option* rank, CLI::Option* other) {
    rank->needs(other);
    other->needs(rank);
  };
  auto* fail_rank =
      add_integer(app, "--fail-rank", o.fail_rank, 0, max_rank, "the rank that throws");
  together(fail_rank->type_name("R"),
           add_integer(app, "--fail-step", o.fail_step, 1, max_step, "the step in which it throws")
               ->type_name("K"));
  auto* hang_rank = add_integer(app, "--hang-rank", o.hang_rank, 0, max_rank,
                                "the rank that hangs (in the job's first start)");
  together(hang_rank->type_name("R"),
           add_integer(app, "--hang-step", o.hang_step, 1, max_step, "the step in which it hangs")
               ->type_name("K"));
  auto* slow_rank = add_integer(app, "--slow-rank", o.slow_rank, 0, max_rank, "the straggler");
  together(slow_rank->type_name("R"), add_integer(app, "--slow-factor", o.slow_factor, 1, 1000,
                                                  "how many times --step-ms its steps take")
                                          ->type_name("F"));
  if (auto code = lifeboat::apps::parse_command_line(app, argc, argv)) return *code;
  if (grace->count() > 0) o.grace_period_s = grace_period_s;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Its lines go through stdio, whose writes lifeboat's guard does not
  // cover: a job whose output nobody reads any more (`| tee log`, tee gone)
  // trains on and keeps its exit code instead of dying of SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  auto parsed = parse(argc, argv);
  if (auto* code = std::get_if<int>(&parsed)) return *code;
  const auto& opts = std::get<options>(parsed);
  lifeboat::termination_config config;
  if (opts.grace_period_s) config.grace_period = std::chrono::seconds{*opts.grace_period_s};
  int rank = -1;
  try {
    lifeboat::checkpoint_state state;
    lifeboat::demo::trainer_state model{static_cast<size_t>(opts.state_mb) << 20};
    state.add_buffer("model", model.data(), model.bytes());
    // Construction reads the cluster and restores the latest checkpoint into `model`.
    lifeboat::preemption_checkpoint_handler handler{state, opts.checkpoint_dir, config};
    rank = handler.rank();
    model.start(rank, handler.total_run_calls() == 0);
    if (handler.total_run_calls() > 0)
      std::fprintf(stderr, "lifeboat-demo: rank=%d resumed at step %lld\n", rank,
                   static_cast<long long>(handler.total_run_calls()));
    while (handler.total_run_calls() < opts.steps) {
      handler.run([&] {
        auto step = handler.total_run_calls() + 1;
        // Lock-step: nobody starts step k before everyone finished step k - 1.
        handler.barrier("demo/step/" + std::to_string(step), step_barrier_timeout);
        if (rank == opts.fail_rank && step == opts.fail_step)
          throw std::runtime_error("injected failure at step " + std::to_string(step));
        if (rank == opts.hang_rank && step == opts.hang_step && first_start()) {
          // The wall clock, for a benchmark timing the hang to the exit.
          auto unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
          std::fprintf(stderr, "lifeboat-demo: rank=%d hangs in step %lld at unix_ms %lld\n", rank,
                       static_cast<long long>(step), static_cast<long long>(unix_ms));
          hang_forever();
        }
        model.apply_step(step);
        auto step_ms = rank == opts.slow_rank ? opts.step_ms * opts.slow_factor : opts.step_ms;
        if (step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds{step_ms});
      });
    }
    hold_notice_signals_until_exit();
    std::printf("lifeboat-demo: rank=%d step=%lld digest=%s\n", rank,
                static_cast<long long>(handler.total_run_calls()), model.digest().c_str());
    std::fflush(stdout);
    return 0;
  } catch (const lifeboat::config_error& e) {
    std::fprintf(stderr, "lifeboat-demo: configuration error: %s\n", e.what());
    return usage_exit_code;
  } catch (const std::exception& e) {
    // Before the handler knows the rank (the state's memory, the join) there is none to name.
    if (rank < 0)
      std::fprintf(stderr, "lifeboat-demo: error: %s\n", e.what());
    else
      std::fprintf(stderr, "lifeboat-demo: rank=%d error: %s\n", rank, e.what());
    return failure_exit_code;
  }
}
