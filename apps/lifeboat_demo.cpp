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
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "apps/demo_trainer.hpp"
#include "apps/flags.hpp"
#include "lifeboat/lifeboat.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int usage_exit_code = 2;
constexpr int failure_exit_code = 3;
// A worker that waits this long at the per-step barrier is stuck; peers that
// fail or vanish are reported long before (heartbeats).
constexpr auto step_barrier_timeout = 300s;

// Training is done: a notice from now on finds nothing to save. Once the
// handler is gone its signals have their default action again, and one that
// lands in the last milliseconds before exit would kill a finished worker (its
// launcher would count the run as failed): the kernel gives a signal to the
// main thread first, and CAF's threads never take one. This thread holds
// them until the process exits; one that comes meanwhile goes with it.
void hold_notice_signals_until_exit() {
  sigset_t notices;
  sigemptyset(&notices);
  // The notice signals of every platform's defaults (SLURM adds SIGUSR1).
  sigaddset(&notices, SIGTERM);
  sigaddset(&notices, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &notices, nullptr);
}

constexpr const char* usage =
    "usage: lifeboat-demo --steps N --checkpoint-dir D [--state-mb M] [--step-ms T]"
    " [--grace-period S] [--fail-rank R --fail-step K] [--hang-rank R --hang-step K]"
    " [--slow-rank R --slow-factor F]\n";

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

std::optional<options> parse(int argc, char** argv) {
  std::string error;
  auto f = lifeboat::apps::flags::parse(
      argc, argv,
      {"steps", "checkpoint-dir", "state-mb", "step-ms", "grace-period", "fail-rank", "fail-step",
       "hang-rank", "hang-step", "slow-rank", "slow-factor"},
      error);
  options o;
  auto steps = f ? f->integer("steps", -1, 0, INT64_MAX / 2, error) : std::nullopt;
  auto state_mb = steps ? f->integer("state-mb", 4, 0, 1 << 16, error) : std::nullopt;
  auto step_ms = state_mb ? f->integer("step-ms", 0, 0, 3'600'000, error) : std::nullopt;
  auto grace = step_ms ? f->integer("grace-period", -1, 0, 86'400 * 7, error) : std::nullopt;
  auto fail_rank = grace ? f->integer("fail-rank", -1, 0, 1 << 20, error) : std::nullopt;
  auto fail_step = fail_rank ? f->integer("fail-step", -1, 1, INT64_MAX / 2, error) : std::nullopt;
  auto hang_rank = fail_step ? f->integer("hang-rank", -1, 0, 1 << 20, error) : std::nullopt;
  auto hang_step = hang_rank ? f->integer("hang-step", -1, 1, INT64_MAX / 2, error) : std::nullopt;
  auto slow_rank = hang_step ? f->integer("slow-rank", -1, 0, 1 << 20, error) : std::nullopt;
  auto slow_factor = slow_rank ? f->integer("slow-factor", 1, 1, 1000, error) : std::nullopt;
  if (!slow_factor) {
    std::cerr << "lifeboat-demo: " << error << "\n";
    return std::nullopt;
  }
  if (*steps < 0 || !f->has("checkpoint-dir")) {
    std::cerr << "lifeboat-demo: --steps N and --checkpoint-dir D are required\n";
    return std::nullopt;
  }
  for (auto [a, b] : {std::pair{"fail-rank", "fail-step"}, std::pair{"hang-rank", "hang-step"},
                      std::pair{"slow-rank", "slow-factor"}})
    if (f->has(a) != f->has(b)) {
      std::cerr << "lifeboat-demo: --" << a << " and --" << b << " go together\n";
      return std::nullopt;
    }
  o.steps = *steps;
  o.checkpoint_dir = f->text("checkpoint-dir");
  o.state_mb = *state_mb;
  o.step_ms = *step_ms;
  if (*grace >= 0) o.grace_period_s = *grace;
  o.fail_rank = *fail_rank;
  o.fail_step = *fail_step;
  o.hang_rank = *hang_rank;
  o.hang_step = *hang_step;
  o.slow_rank = *slow_rank;
  o.slow_factor = *slow_factor;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (lifeboat::apps::flags::asks_for_help(argc, argv)) {
    std::cout << usage;
    return 0;
  }
  auto opts = parse(argc, argv);
  if (!opts) {
    std::cerr << usage;
    return usage_exit_code;
  }
  lifeboat::termination_config config;
  if (opts->grace_period_s) config.grace_period = std::chrono::seconds{*opts->grace_period_s};
  int rank = -1;
  try {
    lifeboat::checkpoint_state state;
    lifeboat::demo::trainer_state model{static_cast<size_t>(opts->state_mb) << 20};
    state.add_buffer("model", model.data(), model.bytes());
    // Construction reads the cluster and restores the latest checkpoint into `model`.
    lifeboat::preemption_checkpoint_handler handler{state, opts->checkpoint_dir, config};
    rank = handler.rank();
    model.start(rank, handler.total_run_calls() == 0);
    if (handler.total_run_calls() > 0)
      std::fprintf(stderr, "lifeboat-demo: rank=%d resumed at step %lld\n", rank,
                   static_cast<long long>(handler.total_run_calls()));
    while (handler.total_run_calls() < opts->steps) {
      handler.run([&] {
        auto step = handler.total_run_calls() + 1;
        // Lock-step: nobody starts step k before everyone finished step k - 1.
        handler.barrier("demo/step/" + std::to_string(step), step_barrier_timeout);
        if (rank == opts->fail_rank && step == opts->fail_step)
          throw std::runtime_error("injected failure at step " + std::to_string(step));
        if (rank == opts->hang_rank && step == opts->hang_step && first_start()) {
          // The wall clock, for a benchmark timing the hang to the exit.
          auto unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
          std::fprintf(stderr, "lifeboat-demo: rank=%d hangs in step %lld at unix_ms %lld\n", rank,
                       static_cast<long long>(step), static_cast<long long>(unix_ms));
          hang_forever();
        }
        model.apply_step(step);
        auto step_ms = rank == opts->slow_rank ? opts->step_ms * opts->slow_factor : opts->step_ms;
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
    std::fprintf(stderr, "lifeboat-demo: rank=%d error: %s\n", rank, e.what());
    return failure_exit_code;
  }
}
