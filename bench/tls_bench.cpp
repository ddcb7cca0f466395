// What TLS 1.3 on the coordination connections costs, each figure beside the
// same measurement without TLS in the same run, rounds interleaved (on, off,
// on, ...) so that the host's load weighs on both alike:
//   join: 16 agents joining a fresh service (TLS: each with its handshake,
//         pre-shared key from the token), from their spawn until the last
//         join is acknowledged; target <= 2x without TLS. Each agent runs in
//         an actor system of its own, as each worker process has one (its
//         own I/O thread); the service in another, as in the launcher. The
//         systems live across rounds: a worker's start is not the join's,
//         and neither is its TLS context (tls_context::shared: one per
//         process and role, made at the first connection: here the first
//         round's). In-process, the 16 agents' handshakes also contend for
//         OpenSSL's locks, which separate processes do not (two threads
//         doing handshakes in one process: about 1.2x the CPU of two
//         processes, measured here);
//   join of processes: the same join with each agent in a process of its
//         own (this program with --join-agent), as each worker is: the
//         handshakes share no OpenSSL locks and no process's caches. From
//         the first "join" line sent until the last agent acknowledged
//         (CLOCK_MONOTONIC, which all processes share); the processes live
//         across rounds, each round's agents are new;
//   start to ready: in those rounds, from the first of 16 worker processes
//         started until the last is ready (its handler constructed: runtime
//         started, joined, past the start agreement): the join as a job
//         sees it; also held to <= 2x;
//   notice to agreement: handler_bench's round (16 worker processes, a
//         SIGTERM to one, until every worker logged the agreed step) with
//         LIFEBOAT_TLS=1 and =0; target <= 1.2x without TLS. The 16
//         processes' trainers and savers share the 2 cores, so its rounds
//         spread widely (a slow mode about twice the fast one);
//   notice to agreement of agents: the same protocol without processes,
//         as the join is measured: 16 simulated workers (the real agent,
//         step resolver and cluster watcher; no trainer, nothing saved:
//         tests/support/simulated_workers.hpp), each in an actor system of
//         its own, a notice handed to rank 8's resolver until every worker
//         but the leader took the commit (the leader takes it as it sends
//         it). What TLS adds to the messages of a round, and nothing else.
// Below the join, the CPU one handshake costs, both ends in this thread
// (two tls_channels in memory, no socket): what TLS adds to each join
// beyond its extra round trip. Beside the agreement, the CPU one frame's
// record costs the same way (sealed by one end, opened by the other), hot
// and after the caches were flushed: in a round a worker's process sleeps
// between its records while the others run, so it meets OpenSSL's record
// path cold.
// The workers are this program, started again with --worker DIR.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/coordination/coordination_agent.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "actors/coordination/tls_channel.hpp"
#include "actors/system_config.hpp"
#include "bench/handler/agreement.hpp"
#include "bench/handler/settings.hpp"
#include "bench/proc_stats.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/simulated_workers.hpp"
#include "tests/support/tls_exchange.hpp"

using namespace lifeboat::bench::handler_bench;

namespace {

constexpr int workers = 16;
constexpr int join_rounds = 20;             // per side; a round is milliseconds
constexpr int agreement_rounds = 60;        // per side; a round starts 16 processes
constexpr int agent_agreement_rounds = 40;  // per side; a round is milliseconds
constexpr auto agent_agreement_bound = 10s;
constexpr double join_target_ratio = 2.0;
constexpr double agreement_target_ratio = 1.2;
constexpr auto join_bound = 30s;
constexpr int handshake_rounds = 200;
constexpr int hot_record_rounds = 20000;
constexpr int cold_record_rounds = 300;
constexpr size_t record_bytes = 100;                    // about a query, report or commit frame
constexpr size_t cache_flush_bytes = size_t{32} << 20;  // beyond this host's caches
const std::string bench_token = "tls-bench-token";

// A fresh service for `workers` agents, with or without TLS, and its port.
std::pair<caf::actor, uint16_t> spawn_service(caf::actor_system& sys, bool tls) {
  lifeboat::service_config scfg;
  scfg.world_size = workers;
  scfg.token = bench_token;
  scfg.tls.enabled = tls;
  auto service = lifeboat::spawn_coordination_service(sys, scfg);
  if (!service) die("cannot start the service: " + lifeboat::describe(service.error()));
  return *service;
}

// What rank `rank`'s agent joins the service at `port` with.
lifeboat::agent_config agent_config_for(uint16_t port, int32_t rank, bool tls) {
  lifeboat::agent_config acfg;
  acfg.port = port;
  acfg.rank = rank;
  acfg.world_size = workers;
  acfg.token = bench_token;
  acfg.tls.enabled = tls;
  return acfg;
}

// One round of the join: a service in `sys` and an agent in each of
// `worker_systems`, with or without TLS.
double join_round(caf::actor_system& sys,
                  const std::vector<std::unique_ptr<caf::actor_system>>& worker_systems, bool tls) {
  auto [service, port] = spawn_service(sys, tls);
  caf::scoped_actor self{sys};
  auto start = clock_type::now();
  std::vector<caf::actor> agents;
  for (int r = 0; r < workers; ++r)
    agents.push_back(
        lifeboat::spawn_coordination_agent(*worker_systems[r], agent_config_for(port, r, tls)));
  for (auto& agent : agents)
    self->request(agent, join_bound, lifeboat::join_wait_atom::value)
        .receive([] {}, [](caf::error& err) { die("a join failed: " + lifeboat::describe(err)); });
  auto ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
  for (auto& agent : agents) caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  return ms;
}

// A process of one agent (--join-agent): "join PORT TLS RANK" joins a new
// agent and answers "joined NS" (the steady clock at the acknowledgement);
// "drop" ends it and answers "dropped".
int run_join_agent() {
  lifeboat::set_log_level(lifeboat::log_level::error);
  lifeboat::system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  caf::actor agent;
  for (std::string line; std::getline(std::cin, line);) {
    std::istringstream in{line};
    std::string command;
    in >> command;
    if (command == "join") {
      int port = 0;
      int tls = 0;
      int32_t rank = 0;
      in >> port >> tls >> rank;
      agent = lifeboat::spawn_coordination_agent(
          sys, agent_config_for(static_cast<uint16_t>(port), rank, tls != 0));
      std::string answer = "failed";
      self->request(agent, join_bound, lifeboat::join_wait_atom::value)
          .receive([&] { answer = "joined " + std::to_string(lifeboat::bench::steady_ns()); },
                   [](caf::error&) {});
      std::cout << answer << std::endl;
    } else if (command == "drop") {
      caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
      std::cout << "dropped" << std::endl;
    }
  }
  return 0;
}

// The answer `agent` gives next, which must start with `word`: its rest.
std::string expect(lifeboat::test::child_process& agent, const std::string& word) {
  auto line = agent.read_line(join_bound);
  auto rest = line ? lifeboat::bench::answer_after(*line, word) : std::nullopt;
  if (!rest)
    die("an agent process answered '" + line.value_or("nothing") + "', not '" + word + "'");
  return *rest;
}

// One round of the join with an agent in each of `agents` (processes).
double process_join_round(caf::actor_system& sys,
                          const std::vector<std::unique_ptr<lifeboat::test::child_process>>& agents,
                          bool tls) {
  auto [service, port] = spawn_service(sys, tls);
  auto start = lifeboat::bench::steady_ns();
  for (size_t r = 0; r < agents.size(); ++r)
    agents[r]->send_line("join " + std::to_string(port) + " " + (tls ? "1" : "0") + " " +
                         std::to_string(r));
  auto last = start;
  for (auto& agent : agents)
    last = std::max(last, lifeboat::bench::parse_ns(expect(*agent, "joined")));
  for (auto& agent : agents) agent->send_line("drop");
  for (auto& agent : agents) expect(*agent, "dropped");
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  return static_cast<double>(last - start) / 1e6;
}

// One side of the agents' agreement: the service in `sys` and one simulated
// worker in each of `worker_systems`, joined once, with or without TLS.
class agent_cluster {
 public:
  agent_cluster(caf::actor_system& sys,
                const std::vector<std::unique_ptr<caf::actor_system>>& worker_systems, bool tls) {
    uint16_t port = 0;
    std::tie(service_, port) = spawn_service(sys, tls);
    lifeboat::sim::worker_options opts;
    opts.port = port;
    opts.world_size = workers;
    opts.token = bench_token;
    opts.tls.enabled = tls;
    for (int32_t r = 0; r < workers; ++r) {
      groups_.push_back(std::make_unique<lifeboat::sim::worker_group>(
          *worker_systems[static_cast<size_t>(r)], opts, std::vector<int32_t>{r}));
      if (auto err = groups_.back()->join(1))
        die("a simulated worker did not join: " + lifeboat::describe(err));
    }
  }

  ~agent_cluster() {
    groups_.clear();
    caf::anon_send_exit(service_, caf::exit_reason::user_shutdown);
  }

  // Milliseconds from the notice until the last worker but the leader (rank
  // 0) took the commit.
  double round() {
    for (auto& group : groups_) group->arm();
    auto start = lifeboat::bench::steady_ns();
    groups_[workers / 2]->notice(workers / 2);
    auto last = start;
    for (size_t r = 1; r < groups_.size(); ++r) {
      // A group of one: index 1 excepts no worker.
      auto seen = groups_[r]->seen().await_commits(1, agent_agreement_bound);
      if (!seen) die("rank " + std::to_string(r) + " did not learn of the commit in time");
      last = std::max(last, *seen);
    }
    return static_cast<double>(last - start) / 1e6;
  }

 private:
  caf::actor service_;
  std::vector<std::unique_ptr<lifeboat::sim::worker_group>> groups_;
};

// A client's and a server's context for the bench's token (PSK).
std::pair<std::shared_ptr<lifeboat::tls_context>, std::shared_ptr<lifeboat::tls_context>>
psk_contexts() {
  lifeboat::tls_config cfg;
  cfg.enabled = true;
  auto client_ctx = lifeboat::tls_context::make(cfg, bench_token, lifeboat::tls_role::client);
  auto server_ctx = lifeboat::tls_context::make(cfg, bench_token, lifeboat::tls_role::server);
  if (!client_ctx || !server_ctx) die("cannot make the TLS contexts");
  return {*client_ctx, *server_ctx};
}

// Microseconds of one PSK handshake, client and server, in memory.
double handshake_us() {
  auto [client_ctx, server_ctx] = psk_contexts();
  auto start = clock_type::now();
  for (int i = 0; i < handshake_rounds; ++i) {
    auto client = lifeboat::tls_channel::make(client_ctx);
    auto server = lifeboat::tls_channel::make(server_ctx);
    if (!client || !server) die("cannot make the TLS channels");
    if (lifeboat::test::exchange(*client, *server)) die("a handshake in memory failed");
  }
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count() /
         handshake_rounds;
}

// Microseconds of one record_bytes record, sealed and opened, in memory: the
// mean of `rounds`, each after writing cache_flush_bytes when `cold`.
double record_us(bool cold, int rounds) {
  auto [client_ctx, server_ctx] = psk_contexts();
  auto client = lifeboat::tls_channel::make(client_ctx);
  auto server = lifeboat::tls_channel::make(server_ctx);
  if (!client || !server || lifeboat::test::exchange(*client, *server))
    die("a handshake in memory failed");
  std::vector<char> flush(cold ? cache_flush_bytes : 0);
  const std::string frame(record_bytes, 'f');
  double total_us = 0;
  for (int i = 0; i < rounds; ++i) {
    for (size_t at = 0; at < flush.size(); at += 64) ++flush[at];
    auto start = clock_type::now();
    client->write(frame.data(), frame.size());
    auto sealed = client->take_ciphertext();
    if (server->feed(sealed.data(), sealed.size()) || server->take_plaintext() != frame)
      die("a record in memory failed");
    total_us += std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
  }
  return total_us / rounds;
}

void print_row(const char* what, const std::vector<double>& on, const std::vector<double>& off,
               double target) {
  auto on_p50 = percentile(on, 0.5);
  auto off_p50 = percentile(off, 0.5);
  auto ratio = on_p50 / off_p50;
  std::printf(
      "%s N=%d  TLS p50 %7.2f ms (p25 %.2f, p75 %.2f); without TLS p50 %7.2f ms (p25 %.2f, p75 "
      "%.2f); %zu rounds each; ratio %.2fx  target <= %.1fx: %s\n",
      what, workers, on_p50, percentile(on, 0.25), percentile(on, 0.75), off_p50,
      percentile(off, 0.25), percentile(off, 0.75), on.size(), ratio, target,
      ratio <= target ? "met" : "NOT met");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string{argv[1]} == "--worker") return run_worker(argv[2]);
  if (argc == 2 && std::string{argv[1]} == "--join-agent") return run_join_agent();
  for (const char* var : {"LIFEBOAT_RANK", "LIFEBOAT_WORLD_SIZE", "LIFEBOAT_COORDINATOR",
                          "TF_CONFIG", "RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                          lifeboat::tls_cert_env, lifeboat::tls_key_env, lifeboat::tls_ca_env})
    ::unsetenv(var);
  std::vector<double> join_on, join_off, process_join_on, process_join_off, agent_agree_on,
      agent_agree_off;
  auto self = fs::read_symlink("/proc/self/exe").string();
  {
    // Each round ends its agents without a leave: the service's warnings
    // that they were lost would bury the figures.
    lifeboat::set_log_level(lifeboat::log_level::error);
    lifeboat::system_config cfg;
    caf::actor_system sys{cfg};
    std::vector<std::unique_ptr<lifeboat::system_config>> worker_cfgs;
    std::vector<std::unique_ptr<caf::actor_system>> worker_systems;
    for (int r = 0; r < workers; ++r) {
      worker_cfgs.push_back(std::make_unique<lifeboat::system_config>());
      worker_systems.push_back(std::make_unique<caf::actor_system>(*worker_cfgs.back()));
    }
    for (int round = 0; round < join_rounds; ++round) {
      join_on.push_back(join_round(sys, worker_systems, true));
      join_off.push_back(join_round(sys, worker_systems, false));
    }
    {
      // Gone (SIGKILL) before the agreements: idle, they would still be
      // 16 more processes on the 2 cores.
      std::vector<std::unique_ptr<lifeboat::test::child_process>> agents;
      for (int r = 0; r < workers; ++r) {
        agents.push_back(std::make_unique<lifeboat::test::child_process>(
            std::vector<std::string>{self, "--join-agent"}));
        if (!agents.back()->started()) die("cannot start an agent process");
      }
      for (int round = 0; round < join_rounds; ++round) {
        process_join_on.push_back(process_join_round(sys, agents, true));
        process_join_off.push_back(process_join_round(sys, agents, false));
      }
    }
    // Both sides' clusters live through all rounds: their heartbeats weigh
    // on both alike.
    std::vector<std::unique_ptr<lifeboat::system_config>> other_cfgs;
    std::vector<std::unique_ptr<caf::actor_system>> other_systems;
    for (int r = 0; r < workers; ++r) {
      other_cfgs.push_back(std::make_unique<lifeboat::system_config>());
      other_systems.push_back(std::make_unique<caf::actor_system>(*other_cfgs.back()));
    }
    agent_cluster on{sys, worker_systems, true};
    agent_cluster off{sys, other_systems, false};
    for (int round = 0; round < agent_agreement_rounds; ++round) {
      agent_agree_on.push_back(on.round());
      agent_agree_off.push_back(off.round());
    }
  }
  std::vector<double> agree_on, agree_off, ready_on, ready_off;
  for (int round = 0; round < agreement_rounds; ++round) {
    for (bool tls : {true, false}) {
      ::setenv(lifeboat::tls_env, tls ? "1" : "0", 1);
      auto result = agreement_round(self, workers, round);
      (tls ? agree_on : agree_off).push_back(result.ms);
      (tls ? ready_on : ready_off).push_back(result.ready_ms);
    }
  }
  std::printf("\ntls_bench (TLS 1.3, pre-shared key from the cluster token)\n");
  print_row("join of", join_on, join_off, join_target_ratio);
  print_row("join of processes", process_join_on, process_join_off, join_target_ratio);
  std::printf("    one handshake's CPU, both ends in memory: %.0f us (mean of %d)\n",
              handshake_us(), handshake_rounds);
  print_row("start to ready of", ready_on, ready_off, join_target_ratio);
  print_row("notice to agreement", agree_on, agree_off, agreement_target_ratio);
  std::printf(
      "    one %zu-byte record's CPU, both ends in memory: %.2f us hot (mean of %d), %.2f us "
      "after flushing the caches (mean of %d)\n",
      record_bytes, record_us(false, hot_record_rounds), hot_record_rounds,
      record_us(true, cold_record_rounds), cold_record_rounds);
  print_row("notice to agreement of agents", agent_agree_on, agent_agree_off,
            agreement_target_ratio);
  return 0;
}
