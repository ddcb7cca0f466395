#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <caf/expected.hpp>

namespace lifeboat {

/// Where this worker sits in the job, as its launcher described it.
struct cluster_spec {
  int rank = 0;
  int world_size = 1;
  std::string coordinator_host = "127.0.0.1";
  uint16_t coordinator_port = 0;
  bool coordinator_external = false;
  std::string token;
  int restart_count = 0;
  std::string origin;  // lifeboat, tf_config, torchrun, slurm, local
};

/// The port of the coordination service when a launcher names only its own:
/// TF_CONFIG (the first task's port) and torchrun (MASTER_PORT) use that port
/// for their own server, so lifeboat takes the next one.
constexpr uint16_t kCoordinatorPortOffset = 1;
/// torchrun's defaults when MASTER_ADDR / MASTER_PORT are absent.
constexpr char kTorchrunDefaultAddr[] = "127.0.0.1";
constexpr uint16_t kTorchrunDefaultPort = 29500;
/// Under SLURM, several jobs may share the first node, so the default port is
/// kSlurmPortBase + SLURM_JOB_ID % kSlurmPortSpan (kSlurmPortBase without a job id).
constexpr uint16_t kSlurmPortBase = 40000;
constexpr uint16_t kSlurmPortSpan = 20000;

/// Reads the cluster from the environment, first match wins:
/// 1. LIFEBOAT_RANK, LIFEBOAT_WORLD_SIZE, LIFEBOAT_COORDINATOR (host:port; may
///    be absent when the world size is 1), LIFEBOAT_COORDINATOR_EXTERNAL (1/0).
/// 2. TF_CONFIG: `chief` and `worker` jobs (chief is rank 0, workers follow);
///    the coordinator is the first task's host at its port + 1. A `ps` job
///    (parameter-server training) is refused.
/// 3. torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; coordinator at
///    MASTER_ADDR:MASTER_PORT + 1; restart count TORCHELASTIC_RESTART_COUNT.
/// 4. SLURM: SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_NODELIST; coordinator on the
///    first node; restart count SLURM_RESTART_COUNT.
/// 5. local: rank 0 of 1.
/// For 2-4, LIFEBOAT_COORDINATOR_PORT overrides the derived port, and without
/// LIFEBOAT_CLUSTER_TOKEN the token is derived from what every worker of this
/// job and no other job shares: TF_CONFIG's task list; torchrun's
/// TORCHELASTIC_RUN_ID, MASTER_ADDR and MASTER_PORT; SLURM_JOB_ID,
/// SLURM_STEP_ID and the first node. Such a token keeps another job's workers
/// and services apart; it is no secret (set LIFEBOAT_CLUSTER_TOKEN for that).
/// Everywhere, LIFEBOAT_CLUSTER_TOKEN is the token and LIFEBOAT_RESTART_COUNT overrides
/// the restart count. Malformed values are errc::invalid_config quoting the
/// variable and saying what was expected.
caf::expected<cluster_spec> discover_cluster(
    const std::function<const char*(const char*)>& getenv_fn);

}  // namespace lifeboat
