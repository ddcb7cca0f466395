// The GPU parts of a checkpoint against what they are made of, same run:
//   barrier:  two ranks on one GPU, each a process and an NCCL host of its own
//             (tests/support/nccl_ranks.hpp); per round
//               lifeboat:  nccl_barrier::arrive_and_wait (a communicator split
//                          from the trainer's, its own stream, polled);
//               reference: one ncclAllReduce of one int on the trainer's
//                          communicator and cudaStreamSynchronize.
//   snapshot: one process, device memory: store::take_snapshot after prepare
//             (pinned staging) vs cudaMemcpy into pinned host memory.
// Without a usable CUDA device it says so and measures nothing (exit 0).
// LIFEBOAT_BENCH_BYTES sets the device state (default 1 GiB).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/proc_stats.hpp"
#include "checkpoint/barrier.hpp"
#include "checkpoint/device_memory.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/nccl_ranks.hpp"

namespace lb = lifeboat;
namespace lc = lifeboat::checkpoint;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int world = 2;
constexpr int warmup_rounds = 50;
constexpr int barrier_rounds = 1000;
constexpr int snapshot_rounds = 5;
constexpr uint64_t default_bytes = uint64_t{1} << 30;
constexpr uint64_t mib = uint64_t{1} << 20;
constexpr auto split_timeout = std::chrono::seconds{60};
constexpr auto barrier_timeout = std::chrono::seconds{30};
// A rank's whole run: joining NCCL takes about a second, the rounds far less.
constexpr auto rank_timeout = std::chrono::seconds{120};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "nccl_barrier_bench: %s\n", what.c_str());
  std::exit(1);
}

void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) die(std::string{what} + ": " + cudaGetErrorString(rc));
}

double ms_of(const std::function<void()>& fn) {
  auto start = clock_type::now();
  fn();
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

void print_row(const char* what, double ours, double reference, const char* unit) {
  std::printf("%-32s %10.3f %10.3f %-4s %7.2fx\n", what, ours, reference, unit, ours / reference);
}

// In a rank's process: the rounds of both barriers, printed as one line of
// p50s and p99s in microseconds.
int run_rank(int rank, const std::string& id) {
  ncclComm_t comm = nullptr;
  if (auto rc = lb::test::join_nccl(id, rank, world, &comm); rc != ncclSuccess)
    die(std::string{"joining the communicator: "} + ncclGetErrorString(rc));
  auto bar = lc::make_nccl_barrier(comm, split_timeout);
  if (!bar) die(lb::describe(bar.error()));
  int* value = nullptr;
  cudaStream_t stream = nullptr;
  check_cuda(cudaMalloc(&value, sizeof(int)), "cudaMalloc");
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  auto reference = [&] {
    if (ncclAllReduce(value, value, 1, ncclInt32, ncclSum, comm, stream) != ncclSuccess)
      die("ncclAllReduce");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  };
  auto ours = [&] {
    if (auto err = (*bar)->arrive_and_wait("bench", barrier_timeout)) die(lb::describe(err));
  };
  std::vector<double> ours_us, reference_us;
  for (int round = 0; round < warmup_rounds + barrier_rounds; ++round) {
    // Alternating keeps both under the same load.
    auto r = ms_of(reference) * 1000;
    auto o = ms_of(ours) * 1000;
    if (round < warmup_rounds) continue;
    reference_us.push_back(r);
    ours_us.push_back(o);
  }
  std::printf("%s%.1f %.1f %.1f %.1f\n", std::string{lb::test::rank_line_tag}.c_str(),
              lifeboat::bench::percentile(ours_us, 0.5), lifeboat::bench::percentile(ours_us, 0.99),
              lifeboat::bench::percentile(reference_us, 0.5),
              lifeboat::bench::percentile(reference_us, 0.99));
  std::fflush(stdout);
  bar->reset();
  cudaFree(value);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  return 0;
}

// The ranks are this program again (/proc/self/exe: argv[0] may be relative).
void bench_barrier() {
  const std::string self = "/proc/self/exe";
  auto id = lb::test::new_nccl_id();
  if (id.empty()) die("ncclGetUniqueId failed");
  std::vector<std::unique_ptr<lb::test::child_process>> ranks;
  for (int rank = 0; rank < world; ++rank)
    ranks.push_back(std::make_unique<lb::test::child_process>(
        std::vector<std::string>{self, std::to_string(rank), id}));
  std::printf("%-32s %10s %10s %-4s %8s\n", "", "lifeboat", "reference", "", "ratio");
  for (int rank = 0; rank < world; ++rank) {
    std::optional<std::string> line;
    do line = ranks[rank]->read_line(rank_timeout);
    while (line && line->rfind(lb::test::rank_line_tag, 0) != 0);
    if (!line) die("rank " + std::to_string(rank) + " printed no result");
    double p50 = 0, p99 = 0, ref_p50 = 0, ref_p99 = 0;
    if (std::sscanf(line->c_str() + lb::test::rank_line_tag.size(), "%lf %lf %lf %lf", &p50, &p99,
                    &ref_p50, &ref_p99) != 4)
      die("rank " + std::to_string(rank) + ": " + *line);
    auto label = "barrier rank " + std::to_string(rank);
    print_row((label + " p50").c_str(), p50, ref_p50, "us");
    print_row((label + " p99").c_str(), p99, ref_p99, "us");
  }
  for (auto& rank : ranks)
    if (rank->wait_exit(rank_timeout) != 0) die("a rank failed");
}

void bench_snapshot(uint64_t bytes) {
  void* dev = nullptr;
  check_cuda(cudaMalloc(&dev, bytes), "cudaMalloc");
  check_cuda(cudaMemset(dev, 7, bytes), "cudaMemset");
  void* pinned = nullptr;
  check_cuda(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
  char dir_template[] = "/tmp/lifeboat-gpu-bench-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) die("mkdtemp");
  lc::state_registry reg;
  if (auto err = reg.add_device_buffer("weights", dev, bytes)) die(lb::describe(err));
  auto st = lc::store::open({dir_template, 0, 1});
  if (!st) die(lb::describe(st.error()));
  if (auto err = st->prepare(reg)) die(lb::describe(err));
  std::vector<double> ours, reference;
  for (int round = 0; round < snapshot_rounds; ++round) {
    reference.push_back(ms_of(
        [&] { check_cuda(cudaMemcpy(pinned, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy"); }));
    ours.push_back(ms_of([&] {
      if (auto snap = st->take_snapshot(reg); !snap) die(lb::describe(snap.error()));
    }));
  }
  std::printf("snapshot of %.0f MiB device memory, best of %d\n", bytes / double(mib),
              snapshot_rounds);
  auto best = [](const std::vector<double>& xs) { return *std::min_element(xs.begin(), xs.end()); };
  print_row("take_snapshot vs cudaMemcpy", best(ours), best(reference), "ms");
  std::printf("%-32s %10.1f %10.1f GB/s\n", "bandwidth", bytes / best(ours) / 1e6,
              bytes / best(reference) / 1e6);
  cudaFreeHost(pinned);
  cudaFree(dev);
  std::string rm = std::string{"rm -rf "} + dir_template;
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir_template);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3) return run_rank(std::atoi(argv[1]), argv[2]);
  if (auto err = lc::device::available()) {
    std::printf("nccl_barrier_bench: skipped, no usable CUDA device: %s\n",
                lb::describe(err).c_str());
    return 0;
  }
  uint64_t bytes = default_bytes;
  if (const char* env = std::getenv("LIFEBOAT_BENCH_BYTES"))
    bytes = std::strtoull(env, nullptr, 10);
  std::printf("nccl_barrier_bench: %d ranks on one GPU, %d rounds after %d warm-up\n", world,
              barrier_rounds, warmup_rounds);
  bench_barrier();
  bench_snapshot(bytes);
  return 0;
}
