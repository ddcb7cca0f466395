// The helper process of nccl_barrier_test: one rank of a two-rank NCCL
// communicator on one GPU (tests/support/nccl_ranks.hpp).
//   nccl_barrier_test_worker RANK ID MODE
// Every mode first splits the barrier from the communicator, then:
//   meet   arrives at two barriers, printing "arrived NAME" after each;
//   alone  arrives with a short timeout, which must expire as the other rank
//          holds back, and prints "barrier: ERROR";
//   hold   prints "split" and waits for a line on stdin.
// alone and hold then all-reduce rank + 1 on the trainer's communicator and
// print "trainer sum S". Each line starts with rank_line_tag. Exit 0, or 1
// with the reason on stderr.
#include <iostream>
#include <string>

#include "checkpoint/barrier.hpp"
#include "messages/errors.hpp"
#include "tests/support/nccl_ranks.hpp"

namespace {

constexpr int world = 2;
constexpr int exit_usage = 64;
constexpr int exit_failed = 1;
constexpr auto split_timeout = std::chrono::seconds{60};
constexpr auto barrier_timeout = std::chrono::seconds{60};
// Long enough that an all-reduce of two ranks present would complete.
constexpr auto alone_timeout = std::chrono::milliseconds{500};

int fail(const std::string& what) {
  std::cerr << "nccl_barrier_test_worker: " << what << std::endl;
  return exit_failed;
}

void say(const std::string& line) {
  std::cout << lifeboat::test::rank_line_tag << line << std::endl;
}

// The trainer's own collective, after lifeboat's barrier is done with.
int trainer_all_reduce(ncclComm_t comm, int rank) {
  int* value = nullptr;
  if (cudaMalloc(&value, sizeof(int)) != cudaSuccess) return fail("cudaMalloc");
  int mine = rank + 1;
  cudaMemcpy(value, &mine, sizeof(int), cudaMemcpyHostToDevice);
  if (auto rc = ncclAllReduce(value, value, 1, ncclInt32, ncclSum, comm, nullptr);
      rc != ncclSuccess)
    return fail(std::string{"ncclAllReduce: "} + ncclGetErrorString(rc));
  int sum = 0;
  if (cudaMemcpy(&sum, value, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
    return fail("cudaMemcpy");
  cudaFree(value);
  say("trainer sum " + std::to_string(sum));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return exit_usage;
  int rank = std::stoi(argv[1]);
  std::string mode = argv[3];
  ncclComm_t comm = nullptr;
  if (auto rc = lifeboat::test::join_nccl(argv[2], rank, world, &comm); rc != ncclSuccess)
    return fail(std::string{"joining the communicator: "} + ncclGetErrorString(rc));
  auto bar = lifeboat::checkpoint::make_nccl_barrier(comm, split_timeout);
  if (!bar) return fail(lifeboat::describe(bar.error()));
  int rc = 0;
  if (mode == "meet") {
    for (const char* name : {"checkpoint-shards-1", "checkpoint-committed-1"}) {
      if (auto err = (*bar)->arrive_and_wait(name, barrier_timeout))
        return fail(lifeboat::describe(err));
      say(std::string{"arrived "} + name);
    }
  } else if (mode == "alone") {
    auto err = (*bar)->arrive_and_wait("checkpoint-shards-1", alone_timeout);
    say("barrier: " + (err ? lifeboat::describe(err) : std::string{"passed"}));
    rc = trainer_all_reduce(comm, rank);
  } else if (mode == "hold") {
    say("split");
    std::string go;
    std::getline(std::cin, go);
    rc = trainer_all_reduce(comm, rank);
  } else {
    return exit_usage;
  }
  bar->reset();
  ncclCommDestroy(comm);
  return rc;
}
