// handler_bench's hot path: the two Google Benchmark functions and the
// handler they call.

#include "bench/handler/hot_path.hpp"

#include <unistd.h>

#include <cstdint>
#include <memory>

#include "bench/handler/settings.hpp"
#include "lifeboat/lifeboat.hpp"

namespace lifeboat::bench::handler_bench {

namespace {

std::unique_ptr<lifeboat::preemption_checkpoint_handler> hot_handler;
int64_t hot_step = 0;

__attribute__((noinline)) void empty_call(int64_t step) { benchmark::DoNotOptimize(step); }

void bm_empty_call(benchmark::State& state) {
  int64_t step = 0;
  for (auto _ : state) empty_call(++step);
}

void bm_step_completed(benchmark::State& state) {
  for (auto _ : state) hot_handler->step_completed(++hot_step);
}

BENCHMARK(bm_empty_call)->Repetitions(10)->ReportAggregatesOnly(true);
BENCHMARK(bm_step_completed)->Repetitions(10)->ReportAggregatesOnly(true);

}  // namespace

void run_hot_path(median_reporter& reporter) {
  auto dir = fs::temp_directory_path() / ("lifeboat-hot-path-" + std::to_string(::getpid()));
  std::vector<char> buffer(worker_state_bytes);
  lifeboat::checkpoint_state state;
  state.add_buffer("state", buffer.data(), buffer.size());
  hot_handler = std::make_unique<lifeboat::preemption_checkpoint_handler>(state, dir.string());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  hot_handler.reset();
  fs::remove_all(dir);
}

}  // namespace lifeboat::bench::handler_bench
