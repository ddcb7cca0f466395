// The worker of the GPU test in ready_barrier_test: a trainer that keeps its
// weights on the GPU, makes every rank's weights the same with an NCCL
// all-reduce each step, and hands its communicator to lifeboat
// (termination_config::nccl_communicator). Its ranks share one GPU
// (tests/support/nccl_ranks.hpp). One line per event on stdout:
//
//   restored=N weights=W   after construction: total_run_calls, and the value
//                          every weight holds (-1 when they differ)
//   step=N                 step N completed; the weights hold N
//   done total=N           training finished
//
// Usage: nccl_test_worker --checkpoint-dir DIR --steps N --step-ms MS, with
// LIFEBOAT_TEST_NCCL_ID (new_nccl_id) and lifeboat's LIFEBOAT_* environment.
// Exit codes as runtime_test_worker's: 0, 2 (usage, configuration), 3, 42.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "lifeboat/lifeboat.hpp"
#include "tests/support/nccl_ranks.hpp"

namespace {

constexpr int usage_exit_code = 2;
constexpr int failure_exit_code = 3;
constexpr std::size_t weight_count = 1 << 18;

int fail(const std::string& what) {
  std::cerr << "nccl_test_worker: " << what << std::endl;
  return failure_exit_code;
}

// One write(2) per line: lifeboat may end the process right after a step.
void say(const std::string& line) {
  auto text = line + "\n";
  auto rc = ::write(STDOUT_FILENO, text.data(), text.size());
  (void)rc;
}

int env_int(const char* name) {
  auto* text = std::getenv(name);
  return text == nullptr ? -1 : std::atoi(text);
}

// The value every weight holds, or -1.
int64_t uniform_value(const int32_t* weights) {
  std::vector<int32_t> host(weight_count);
  cudaMemcpy(host.data(), weights, weight_count * sizeof(int32_t), cudaMemcpyDeviceToHost);
  bool same = std::all_of(host.begin(), host.end(), [&](int32_t w) { return w == host[0]; });
  return same ? host[0] : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int64_t steps = 0;
  int64_t step_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--checkpoint-dir")
      dir = argv[i + 1];
    else if (flag == "--steps")
      steps = std::atoll(argv[i + 1]);
    else if (flag == "--step-ms")
      step_ms = std::atoll(argv[i + 1]);
    else
      return usage_exit_code;
  }
  auto* id = std::getenv("LIFEBOAT_TEST_NCCL_ID");
  int rank = env_int("LIFEBOAT_RANK");
  int world = env_int("LIFEBOAT_WORLD_SIZE");
  if (dir.empty() || steps <= 0 || id == nullptr || rank < 0 || world < 1) return usage_exit_code;
  ncclComm_t comm = nullptr;
  if (auto rc = lifeboat::test::join_nccl(id, rank, world, &comm); rc != ncclSuccess)
    return fail(std::string{"joining the communicator: "} + ncclGetErrorString(rc));
  int32_t* weights = nullptr;
  if (cudaMalloc(&weights, weight_count * sizeof(int32_t)) != cudaSuccess)
    return fail("cudaMalloc");
  cudaMemset(weights, 0, weight_count * sizeof(int32_t));
  lifeboat::checkpoint_state state;
  state.add_device_buffer("weights", weights, weight_count * sizeof(int32_t));
  lifeboat::termination_config config;
  config.notice_sources = std::vector<std::string>{};
  config.nccl_communicator = comm;
  try {
    lifeboat::preemption_checkpoint_handler handler{state, dir, config};
    say("restored=" + std::to_string(handler.total_run_calls()) +
        " weights=" + std::to_string(uniform_value(weights)));
    auto guard = handler.watch_preemption_scope();
    std::vector<int32_t> update(weight_count);
    while (handler.total_run_calls() < steps) {
      handler.run([&] {
        // A step: this rank's update, then the all-reduce that keeps every
        // rank's weights the same, as a data-parallel trainer's would.
        auto step = handler.total_run_calls() + 1;
        std::fill(update.begin(), update.end(), static_cast<int32_t>(step));
        cudaMemcpy(weights, update.data(), weight_count * sizeof(int32_t), cudaMemcpyHostToDevice);
        if (auto rc =
                ncclAllReduce(weights, weights, weight_count, ncclInt32, ncclMax, comm, nullptr);
            rc != ncclSuccess)
          throw std::runtime_error(std::string{"ncclAllReduce: "} + ncclGetErrorString(rc));
        cudaStreamSynchronize(nullptr);
        std::this_thread::sleep_for(std::chrono::milliseconds{step_ms});
        say("step=" + std::to_string(step));
      });
    }
    say("done total=" + std::to_string(handler.total_run_calls()));
  } catch (const lifeboat::config_error& e) {
    std::cerr << "nccl_test_worker: " << e.what() << std::endl;
    return usage_exit_code;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  cudaFree(weights);
  ncclCommDestroy(comm);
  return 0;
}
