#include "platform/cluster_discovery.hpp"

#include <limits>

#include "messages/errors.hpp"
#include "messages/platform.pb.h"
#include "platform/environment.hpp"
#include "platform/json.hpp"
#include "platform/slurm_nodelist.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat {

namespace {

constexpr int64_t kMaxWorkers = std::numeric_limits<int>::max();
constexpr int64_t kMaxRestarts = std::numeric_limits<int>::max();
constexpr char kChief[] = "chief";
constexpr char kWorker[] = "worker";
constexpr char kParameterServer[] = "ps";
constexpr char kCoordinatorPortVar[] = "LIFEBOAT_COORDINATOR_PORT";

caf::error config_error(const std::string& text) { return make_error(errc::invalid_config, text); }

// Reads rank and world size from two variables and checks rank < world size.
caf::error read_rank(const env_lookup& env, const char* rank_var, const char* size_var,
                     cluster_spec& spec) {
  auto* rank_text = env_value(env, rank_var);
  auto* size_text = env_value(env, size_var);
  if (rank_text == nullptr || size_text == nullptr)
    return config_error(std::string{rank_var} + " and " + size_var + " must be set together (" +
                        (rank_text == nullptr ? rank_var : size_var) + " is missing)");
  auto size = parse_integer(size_text, size_var, 1, kMaxWorkers);
  if (!size) return size.error();
  auto rank = parse_integer(rank_text, rank_var, 0, kMaxWorkers - 1);
  if (!rank) return rank.error();
  if (*rank >= *size)
    return config_error(std::string{rank_var} + "='" + rank_text + "' must be less than " +
                        size_var + "='" + size_text + "'");
  spec.rank = static_cast<int>(*rank);
  spec.world_size = static_cast<int>(*size);
  return caf::none;
}

// The port a launcher's own port implies, unless LIFEBOAT_COORDINATOR_PORT says otherwise.
caf::expected<uint16_t> derived_port(const env_lookup& env, uint16_t base,
                                     const std::string& what) {
  if (auto* text = env_value(env, kCoordinatorPortVar))
    return parse_port(text, kCoordinatorPortVar);
  if (base == std::numeric_limits<uint16_t>::max())
    return config_error(what + " is 65535: no port above it is left for the coordinator; set " +
                        kCoordinatorPortVar);
  return static_cast<uint16_t>(base + kCoordinatorPortOffset);
}

caf::error from_lifeboat(const env_lookup& env, cluster_spec& spec) {
  if (auto err = read_rank(env, "LIFEBOAT_RANK", "LIFEBOAT_WORLD_SIZE", spec)) return err;
  if (auto* text = env_value(env, "LIFEBOAT_COORDINATOR")) {
    auto where = parse_endpoint(text, "LIFEBOAT_COORDINATOR");
    if (!where) return where.error();
    spec.coordinator_host = where->host;
    spec.coordinator_port = where->port;
  } else if (spec.world_size > 1) {
    return config_error(
        "LIFEBOAT_COORDINATOR (host:port) must be set when LIFEBOAT_WORLD_SIZE > 1");
  }
  if (auto* text = env_value(env, "LIFEBOAT_COORDINATOR_EXTERNAL")) {
    std::string value{text};
    if (value != "0" && value != "1")
      return config_error("LIFEBOAT_COORDINATOR_EXTERNAL='" + value + "': expected 1 or 0");
    spec.coordinator_external = value == "1";
  }
  spec.origin = "lifeboat";
  return caf::none;
}

caf::error from_tf_config(const char* text, const env_lookup& env, cluster_spec& spec) {
  wire::TfConfig config;
  if (auto err = parse_json(text, config, "TF_CONFIG", errc::invalid_config)) return err;
  auto& cluster = config.cluster();
  if (cluster.count(kParameterServer) != 0)
    return config_error(
        "TF_CONFIG has a 'ps' job: parameter-server training is not supported, only "
        "synchronous 'chief'/'worker' clusters");
  std::vector<std::string> tasks;  // in rank order: chief first, then the workers
  for (const char* job : {kChief, kWorker}) {
    auto i = cluster.find(job);
    if (i == cluster.end()) continue;
    for (auto& value : i->second.values()) {
      if (!value.has_string_value())
        return config_error(std::string{"TF_CONFIG: cluster."} + job +
                            " must be a list of \"host:port\" strings");
      tasks.push_back(value.string_value());
    }
  }
  for (auto& [job, list] : cluster)
    if (job != kChief && job != kWorker)
      return config_error("TF_CONFIG: unsupported job '" + job + "' (expected chief and worker)");
  auto chiefs = cluster.count(kChief) != 0 ? cluster.at(kChief).values_size() : 0;
  if (chiefs > 1) return config_error("TF_CONFIG: more than one chief");
  if (tasks.empty()) return config_error("TF_CONFIG: no chief or worker tasks in 'cluster'");
  auto& task = config.task();
  int64_t rank = 0;
  if (task.type() == kChief) {
    if (chiefs == 0 || task.index() != 0)
      return config_error("TF_CONFIG: task chief/" + std::to_string(task.index()) +
                          " is not in the cluster");
    rank = 0;
  } else if (task.type() == kWorker) {
    auto workers = static_cast<int64_t>(tasks.size()) - chiefs;
    if (task.index() < 0 || task.index() >= workers)
      return config_error("TF_CONFIG: task worker/" + std::to_string(task.index()) +
                          " is not in the cluster (" + std::to_string(workers) + " workers)");
    rank = chiefs + task.index();
  } else {
    return config_error("TF_CONFIG: task type '" + task.type() + "' (expected chief or worker)");
  }
  auto first = parse_endpoint(tasks.front(), "TF_CONFIG first task");
  if (!first) return first.error();
  auto port = derived_port(env, first->port, "TF_CONFIG's first task port");
  if (!port) return port.error();
  spec.rank = static_cast<int>(rank);
  spec.world_size = static_cast<int>(tasks.size());
  spec.coordinator_host = first->host;
  spec.coordinator_port = *port;
  // Every task of this job has the same cluster list, and another job's
  // tasks have other addresses.
  spec.token = "tf_config";
  for (auto& endpoint : tasks) spec.token += " " + endpoint;
  spec.origin = "tf_config";
  return caf::none;
}

caf::error from_torchrun(const env_lookup& env, cluster_spec& spec) {
  if (auto err = read_rank(env, "RANK", "WORLD_SIZE", spec)) return err;
  const char* addr = env_value(env, "MASTER_ADDR");
  spec.coordinator_host = addr != nullptr ? addr : kTorchrunDefaultAddr;
  uint16_t master_port = kTorchrunDefaultPort;
  if (auto* text = env_value(env, "MASTER_PORT")) {
    auto parsed = parse_port(text, "MASTER_PORT");
    if (!parsed) return parsed.error();
    master_port = *parsed;
  }
  auto port = derived_port(env, master_port, "MASTER_PORT");
  if (!port) return port.error();
  spec.coordinator_port = *port;
  if (auto* text = env_value(env, "TORCHELASTIC_RESTART_COUNT")) {
    auto count = parse_integer(text, "TORCHELASTIC_RESTART_COUNT", 0, kMaxRestarts);
    if (!count) return count.error();
    spec.restart_count = static_cast<int>(*count);
  }
  // torchrun's run id with the rendezvous address: the same for every worker
  // of this job, and another job on the same master needs another port.
  const char* run_id = env_value(env, "TORCHELASTIC_RUN_ID");
  spec.token = std::string{"torchrun "} + (run_id != nullptr ? run_id : "") + " " +
               spec.coordinator_host + ":" + std::to_string(master_port);
  spec.origin = "torchrun";
  return caf::none;
}

caf::error from_slurm(const env_lookup& env, cluster_spec& spec) {
  if (auto err = read_rank(env, "SLURM_PROCID", "SLURM_NTASKS", spec)) return err;
  const char* nodelist = env_value(env, "SLURM_JOB_NODELIST");
  if (nodelist == nullptr) nodelist = env_value(env, "SLURM_NODELIST");
  if (nodelist != nullptr) {
    auto hosts = expand_slurm_nodelist(nodelist);
    if (!hosts) return hosts.error();
    spec.coordinator_host = hosts->front();
  } else if (spec.world_size > 1) {
    return config_error("SLURM_JOB_NODELIST must be set when SLURM_NTASKS > 1");
  }
  uint16_t port = kSlurmPortBase;
  if (auto* text = env_value(env, "SLURM_JOB_ID")) {
    auto job = parse_integer(text, "SLURM_JOB_ID", 0, std::numeric_limits<int64_t>::max());
    if (!job) return job.error();
    port = static_cast<uint16_t>(kSlurmPortBase + *job % kSlurmPortSpan);
  }
  if (auto* text = env_value(env, kCoordinatorPortVar)) {
    auto parsed = parse_port(text, kCoordinatorPortVar);
    if (!parsed) return parsed.error();
    port = *parsed;
  }
  spec.coordinator_port = port;
  if (auto* text = env_value(env, "SLURM_RESTART_COUNT")) {
    auto count = parse_integer(text, "SLURM_RESTART_COUNT", 0, kMaxRestarts);
    if (!count) return count.error();
    spec.restart_count = static_cast<int>(*count);
  }
  // The job and step ids, unique on the cluster's controller.
  const char* job_id = env_value(env, "SLURM_JOB_ID");
  const char* step_id = env_value(env, "SLURM_STEP_ID");
  spec.token = std::string{"slurm "} + (job_id != nullptr ? job_id : "") + "." +
               (step_id != nullptr ? step_id : "") + " " + spec.coordinator_host;
  spec.origin = "slurm";
  return caf::none;
}

caf::error read_origin(const env_lookup& env, cluster_spec& spec) {
  if (env_value(env, "LIFEBOAT_RANK") || env_value(env, "LIFEBOAT_WORLD_SIZE") ||
      env_value(env, "LIFEBOAT_COORDINATOR"))
    return from_lifeboat(env, spec);
  if (auto* text = env_value(env, "TF_CONFIG")) return from_tf_config(text, env, spec);
  if (env_value(env, "RANK") || env_value(env, "WORLD_SIZE")) return from_torchrun(env, spec);
  if (env_value(env, "SLURM_PROCID")) return from_slurm(env, spec);
  spec.origin = "local";
  return caf::none;
}

}  // namespace

caf::expected<cluster_spec> discover_cluster(
    const std::function<const char*(const char*)>& getenv_fn) {
  cluster_spec spec;
  if (auto err = read_origin(getenv_fn, spec)) return err;
  if (auto* text = env_value(getenv_fn, "LIFEBOAT_CLUSTER_TOKEN")) spec.token = text;
  if (auto* text = env_value(getenv_fn, "LIFEBOAT_RESTART_COUNT")) {
    auto count = parse_integer(text, "LIFEBOAT_RESTART_COUNT", 0, kMaxRestarts);
    if (!count) return count.error();
    spec.restart_count = static_cast<int>(*count);
  }
  return spec;
}

}  // namespace lifeboat
