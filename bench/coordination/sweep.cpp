// coordination_bench's in-process service set-up and its fan-out and barrier
// rounds with N kv workers.

#include "bench/coordination/sweep.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>

#include <caf/send.hpp>

#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "bench/coordination/settings.hpp"
#include "bench/coordination/worker_group.hpp"
#include "bench/proc_stats.hpp"
#include "messages/errors.hpp"

namespace lifeboat::bench::coordination_bench {

namespace {

int64_t parse_ns(const std::string& text) {
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    throw bench_error("not a time: '" + text + "'");
  }
}

// The service, gone when this is.
struct service_guard {
  caf::actor actor;
  ~service_guard() { caf::anon_send_exit(actor, caf::exit_reason::user_shutdown); }
};

}  // namespace

sweep_result sweep(caf::actor_system& sys, const std::string& self, int n) {
  lifeboat::service_config scfg;
  scfg.host = bench_host;
  scfg.world_size = n + 1;
  scfg.token = bench_token;
  scfg.heartbeat_timeout = heartbeat_timeout;
  auto spawned = lifeboat::spawn_coordination_service(sys, scfg);
  if (!spawned) throw bench_error("service: " + lifeboat::describe(spawned.error()));
  service_guard service{spawned->first};
  auto port = spawned->second;

  lifeboat::agent_config acfg;
  acfg.host = bench_host;
  acfg.port = port;
  acfg.rank = 0;
  acfg.world_size = n + 1;
  acfg.token = bench_token;
  acfg.join_timeout = join_timeout;
  auto client = lifeboat::coordination_client::connect(sys, acfg);
  if (!client) throw bench_error("parent join: " + lifeboat::describe(client.error()));

  worker_group workers{self, port, n};
  sweep_result result;
  auto tag = std::to_string(n);
  for (int round = 0; round < warmup_rounds + fanout_rounds; ++round) {
    auto key = "bench/fanout/" + tag + "/" + std::to_string(round);
    workers.send_all("get " + key);
    workers.expect_all("waiting");
    auto start = steady_ns();
    if (auto err = (*client)->insert(key, "x"))
      throw bench_error("insert " + key + ": " + lifeboat::describe(err));
    auto got = workers.expect_all("got");
    if (round < warmup_rounds) continue;
    int64_t last = 0;
    for (auto& text : got) {
      auto latency = parse_ns(text) - start;
      if (latency < 0) throw bench_error("a get returned before the insert began");
      last = std::max(last, latency);
      result.fanout_ms.push_back(ms_of(latency));
    }
    result.fanout_last_ms.push_back(ms_of(last));
  }
  for (int round = 0; round < warmup_rounds + barrier_rounds; ++round) {
    workers.send_all("barrier bench/barrier/" + tag + "/" + std::to_string(round));
    auto times = workers.expect_all("barrier");
    if (round < warmup_rounds) continue;
    int64_t last_entry = 0;
    int64_t last_exit = 0;
    for (auto& text : times) {
      auto space = text.find(' ');
      if (space == std::string::npos) throw bench_error("barrier times: '" + text + "'");
      last_entry = std::max(last_entry, parse_ns(text.substr(0, space)));
      last_exit = std::max(last_exit, parse_ns(text.substr(space + 1)));
    }
    if (last_exit < last_entry) throw bench_error("a barrier was left before all entered");
    result.barrier_ms.push_back(ms_of(last_exit - last_entry));
  }
  return result;
}

}  // namespace lifeboat::bench::coordination_bench
