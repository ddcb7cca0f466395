#include "runtime/worker_runtime.hpp"

#include <algorithm>
#include <limits>
#include <thread>
#include <vector>

#include <caf/io/middleman.hpp>
#include <caf/io/network/multiplexer.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_barrier.hpp"
#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "actors/coordination/progress_tracker.hpp"
#include "actors/preemption/checkpoint_writer.hpp"
#include "actors/preemption/cluster_phase.hpp"
#include "actors/preemption/cluster_watcher.hpp"
#include "actors/preemption/exit_controller.hpp"
#include "actors/preemption/poll_watcher.hpp"
#include "actors/preemption/protocol.hpp"
#include "actors/preemption/signal_watcher.hpp"
#include "actors/preemption/step_resolver.hpp"
#include "actors/status/status_endpoint.hpp"
#include "actors/system_config.hpp"
#include "lifeboat/errors.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/environment.hpp"
#include "platform/host_resolver.hpp"
#include "platform/notice_source.hpp"
#include "platform/platform_detection.hpp"
#include "platform/signal_names.hpp"
#include "platform/signal_pipe.hpp"
#include "platform/text_parse.hpp"
#include "platform/thread_policy.hpp"
#include "runtime/config_check.hpp"

namespace lifeboat {

namespace {

using namespace std::chrono_literals;

// Workers may start before the service is up (a launcher, rank 0).
constexpr auto join_timeout = 120s;
// Heartbeats go out this many times per heartbeat timeout.
constexpr int heartbeats_per_timeout = 4;
constexpr auto max_heartbeat_interval = 1000ms;
// Every rank publishes the step it could restore; the others wait this long.
constexpr auto restore_agreement_timeout = 120s;
constexpr int max_restore_rounds = 4;
// At the end of training every worker meets the others before leaving, so
// the worker hosting the service does not take it away from the rest.
constexpr auto shutdown_barrier_timeout = 60s;
// After the final save is handed over: the commit must come within this bound.
constexpr auto final_commit_bound = 300s;
constexpr auto failure_arrival_bound = 5s;
// A step's error is reported to the service, which broadcasts only the
// first failure of a generation; the worker then waits this long at most for
// that broadcast to say whose failure came first (a round trip, normally).
constexpr auto peer_failure_echo_window = 1s;
// The worker hosting the service stays until the others have left (or are
// lost), so none of them loses the service before it got the commit; bounded
// so a stuck peer never keeps this process past its deadline.
constexpr auto peer_departure_bound = 10s;
constexpr auto peer_departure_poll = 10ms;
// Leaving early is the point of acknowledging a notice (Azure StartRequests),
// so a metadata server that does not answer holds the exit this long at most.
constexpr auto acknowledge_bound = 2s;
// A spawned actor answers its first message within this bound, or something is badly wrong.
constexpr auto actor_start_bound = 30s;
// At shutdown each actor ends within this bound of its exit message.
constexpr auto actor_stop_bound = 5s;
constexpr const char* restore_key_prefix = "lifeboat/restore/";
constexpr const char* restore_agreement = "agreeing on the checkpoint to restore";
// Without a store (save_fn saves) there is nothing to restore, but the
// workers still meet before any trains, within restore_agreement_timeout.
constexpr const char* start_barrier_name = "lifeboat/start";
// The workers agree on the kind of checkpoint-ready barrier under these keys.
constexpr const char* nccl_usable_key_prefix = "lifeboat/nccl/usable/";
constexpr const char* nccl_split_key_prefix = "lifeboat/nccl/split/";
constexpr const char* can_value = "ok";
constexpr const char* no_communicator_value = "no NCCL communicator was handed over";
constexpr const char* ready_barrier_agreement = "agreeing on the checkpoint-ready barrier";
// Splitting the trainer's communicator: every worker is past the restore
// agreement by then, so this bounds only a worker that dies on the way.
constexpr auto nccl_split_timeout = 60s;
// LIFEBOAT_HANG_TIMEOUT at most (a week): beyond, it is a mistake.
constexpr double max_hang_timeout_s = 7 * 86400;
// A hung rank's training thread writes its stack within this bound.
constexpr auto stack_dump_bound = 2s;

[[noreturn]] void fail_config(const std::string& what) { throw config_error(what); }

// what() of the exception in `error`, for the peers.
std::string exception_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "unknown exception";
}

// What a worker publishes of an attempt: can_value, or why not.
std::string verdict(const caf::error& err) { return err ? describe(err) : can_value; }

void await_started(caf::actor_system& sys, const caf::actor& actor) {
  caf::scoped_actor self{sys};
  self->request(actor, actor_start_bound, status_atom::value)
      .receive([](const wire::ActorStatus&) {},
               [](const caf::error& err) { fail_config("starting an actor: " + describe(err)); });
}

// termination_config::hang_timeout, else LIFEBOAT_HANG_TIMEOUT (seconds),
// else adaptive, as the service takes it: -1 adaptive, 0 off, else ms.
caf::expected<int64_t> hang_timeout_ms(const termination_config& config) {
  if (config.hang_timeout) return config.hang_timeout->count();
  auto text = env_value(process_environment(), "LIFEBOAT_HANG_TIMEOUT");
  if (text == nullptr) return progress_tracker::adaptive_hang_timeout;
  return parse_seconds_as_ms(text, "LIFEBOAT_HANG_TIMEOUT", max_hang_timeout_s);
}

// LIFEBOAT_STATUS_PORT (0: any free port): none when unset; a malformed one
// is bad configuration.
caf::expected<std::optional<uint16_t>> status_port_from_env() {
  auto text = env_value(process_environment(), "LIFEBOAT_STATUS_PORT");
  if (text == nullptr) return std::optional<uint16_t>{};
  auto port = parse_integer(text, "LIFEBOAT_STATUS_PORT", 0, 65535);
  if (!port) return port.error();
  return std::optional<uint16_t>{static_cast<uint16_t>(*port)};
}

}  // namespace

worker_runtime::worker_runtime(checkpoint_state& state, std::string checkpoint_dir,
                               termination_config config, std::atomic<int64_t>& completed_step,
                               std::atomic<int64_t>& action_step)
    : state_(state),
      checkpoint_dir_(std::move(checkpoint_dir)),
      config_(std::move(config)),
      gate_(completed_step, action_step),
      completed_step_(completed_step) {
  // 1. Everything that can be wrong with the configuration, before anything is written.
  if (auto err = check_config(config_)) fail_config(describe(err));
  if (checkpoint_dir_.empty() && !config_.save_fn) fail_config("checkpoint_dir is empty");
  auto cluster = discover_cluster(process_environment());
  if (!cluster) fail_config(describe(cluster.error()));
  cluster_ = *cluster;
  set_log_rank(cluster_.rank);
  auto platform = detect_platform();
  if (!platform) fail_config(describe(platform.error()));
  restart_code_ = config_.restart_code.value_or(platform->restart_exit_code);
  auto status_port = status_port_from_env();
  if (!status_port) fail_config(describe(status_port.error()));
  status_port_ = *status_port;
  if (auto* host = env_value(process_environment(), "LIFEBOAT_STATUS_HOST")) {
    if (!is_numeric_address(host))
      fail_config(std::string{"LIFEBOAT_STATUS_HOST='"} + host +
                  "': expected an IPv4 or IPv6 address to bind the status endpoint to");
    status_host_ = host;
  }
  auto hang = hang_timeout_ms(config_);
  if (!hang) fail_config(describe(hang.error()));
  hang_timeout_ms_ = *hang;
  // The constructing thread is the training thread: the one a hung rank's
  // stack is wanted of.
  if (auto dumper = stack_dumper::install_for_this_thread())
    stack_dumper_ = std::move(*dumper);
  else
    log(log_level::warning, "runtime", describe(dumper.error()));
  grace_period_ = config_.grace_period.value_or(
      std::chrono::duration_cast<std::chrono::milliseconds>(platform->grace_period));
  signals_ = platform->signals;
  for (auto& name : config_.signals) signals_.push_back(*signal_number(name));
  std::sort(signals_.begin(), signals_.end());
  signals_.erase(std::unique(signals_.begin(), signals_.end()), signals_.end());
  // The signal handlers go in before anything slow (joining, restoring): a
  // notice during start-up is no longer fatal to the process, and the
  // start-up guard ends it with the restart code (nothing trained yet).
  auto pipe = signal_pipe::install(signals_);
  if (pipe)
    signal_pipe_ = std::move(*pipe);
  else
    log(log_level::error, "runtime", "signals not watched: ", describe(pipe.error()));
  if (signal_pipe_) {
    auto guard = startup_guard::start(*signal_pipe_, restart_code_);
    if (guard)
      startup_guard_ = std::move(*guard);
    else
      log(log_level::warning, "runtime",
          "signals during the start wait for its end: ", describe(guard.error()));
  }
  notice_sources_ = config_.notice_sources.value_or(platform->notice_sources);
  for (auto& spec : notice_sources_)
    if (auto source = make_notice_source(spec); !source) fail_config(describe(source.error()));
  if (!config_.save_fn) {
    checkpoint::store_config store_cfg;
    store_cfg.dir = checkpoint_dir_;
    store_cfg.rank = cluster_.rank;
    store_cfg.world_size = cluster_.world_size;
    store_cfg.max_to_keep = config_.max_to_keep;
    auto opened = checkpoint::store::open(store_cfg);
    if (!opened)
      fail_config("checkpoint_dir '" + checkpoint_dir_ + "': " + describe(opened.error()));
    store_.emplace(std::move(*opened));
  }
  log(log_level::info, "runtime", "rank ", cluster_.rank, " of ", cluster_.world_size, " (",
      cluster_.origin, ", platform ", platform->name, ", restart ", cluster_.restart_count,
      ", grace period ", grace_period_.count(), " ms)");
  // 2. Join the cluster, 3. restore and prepare the staging memory, 4. start
  // watching. A failure on the way stops what was started: the actor
  // system's destructor would otherwise wait forever for the actors (the
  // hosted service above all).
  try {
    start_cluster();
    if (startup_guard_) startup_guard_->joined();
    restore();
    prepare_staging();
    spawn_actors();
  } catch (...) {
    stop_actors();
    throw;
  }
}

void worker_runtime::start_cluster() {
  system_config_ = std::make_unique<system_config>();
  // CAF's threads (scheduler, multiplexer, clock, the middleman's private
  // thread) inherit this thread's mask: started with the notice signals
  // blocked, they never take one, and a notice lands on a thread of the
  // application or on one of lifeboat's own. Without this, a SIGTERM that
  // came after shutdown gave the signals their default action back could
  // land on CAF's private thread, which outlives the actor system by a few
  // instructions, and kill a worker that had finished cleanly (seen in 1 of
  // 18 runs of launch_demo_test.sigterms_after_the_last_step_... on a busy host).
  {
    scoped_signal_block caf_threads_take_no_notice{signals_};
    system_ = std::make_unique<caf::actor_system>(*system_config_);
  }
  auto heartbeat_timeout = config_.heartbeat_timeout;
  if (!cluster_.coordinator_external && cluster_.rank == 0) {
    service_config cfg;
    cfg.host = cluster_.world_size == 1 ? "127.0.0.1" : cluster_.coordinator_host;
    cfg.port = cluster_.world_size == 1 ? 0 : cluster_.coordinator_port;
    cfg.world_size = cluster_.world_size;
    cfg.token = cluster_.token;
    cfg.heartbeat_timeout = heartbeat_timeout;
    cfg.annotate_status = annotate_preemption_status;
    auto service = spawn_coordination_service(*system_, cfg);
    if (!service)
      fail_config("cannot host the coordination service at " + cfg.host + ":" +
                  std::to_string(cfg.port) + ": " + describe(service.error()));
    service_ = service->first;
    cluster_.coordinator_port = service->second;
  }
  // A round fans out from the coordination service: it writes the query,
  // then the commit, to every worker in turn, and each write wakes one. Where
  // cores are short (many workers on one host), a woken worker preempted the
  // service's thread at each write, so every later write waited for it, and
  // the round ends with the last one. Every worker that does not host the
  // service therefore runs its I/O thread (agent, watchers, resolver) as
  // SCHED_BATCH: its fair share of CPU is the same, but a wake-up no longer
  // preempts. The service's thread, and an external coordinator's, keep the
  // default. Measured with handler_bench at N = 16 on 2 cores: the 15 writes
  // of a fan-out took 1135 us (median) before, 157 us after, and the
  // agreement's p50 was lower in 13 of 17 interleaved pairs of runs, by about
  // a tenth.
  if (cluster_.coordinator_external || cluster_.rank != 0)
    system_->middleman().backend().post([] {
      if (auto err = run_this_thread_as_batch()) log(log_level::warning, "runtime", describe(err));
    });
  agent_config agent;
  agent.host = cluster_.coordinator_host;
  agent.port = cluster_.coordinator_port;
  agent.rank = cluster_.rank;
  agent.world_size = cluster_.world_size;
  agent.incarnation = static_cast<uint32_t>(cluster_.restart_count);
  agent.token = cluster_.token;
  agent.heartbeat_interval = std::min<std::chrono::milliseconds>(
      max_heartbeat_interval, heartbeat_timeout / heartbeats_per_timeout);
  agent.join_timeout = join_timeout;
  agent.rejoin_bound = heartbeat_timeout;
  agent.step_source = [this] { return completed_step_.load(std::memory_order_relaxed); };
  agent.status_source = [this] { return heartbeat_status(phase_.get()); };
  agent.paused_source = [this] { return pauses_steps(phase_.get()); };
  agent.blocked_source = [this] { return blocked_ms_.load(std::memory_order_relaxed); };
  agent.hang_timeout_ms = hang_timeout_ms_;
  auto client = coordination_client::connect(*system_, agent);
  // A service lost during the start is a lost peer (exit 3 by the contract),
  // anything else that keeps a worker from joining is its configuration.
  if (!client && client.error() == make_error(errc::peer_lost))
    throw peer_error(-1, describe(client.error()), true);
  if (!client)
    fail_config("cannot join the coordination service at " + agent.host + ":" +
                std::to_string(agent.port) + ": " + describe(client.error()));
  client_ = std::move(*client);
  log(log_level::info, "runtime", "joined the coordination service at ", agent.host, ":",
      agent.port, " (incarnation ", agent.incarnation, ")");
}

// Every rank restores the newest checkpoint it can verify; when they differ
// (a shard of the newest is corrupt on one rank), all restore the newest step
// every rank has, so the cluster resumes from one step.
void worker_runtime::restore() {
  if (!store_) {
    // A round reaches only the workers that have joined: one that joins
    // after a peer's notice never answers it, and the round never ends. With
    // a store, the restore agreement below makes every worker wait for all to
    // join; without one, this barrier does.
    if (cluster_.world_size > 1)
      if (auto err = client_->barrier(start_barrier_name, restore_agreement_timeout))
        throw peer_error(-1, "waiting for every worker to join: " + describe(err), false);
    return;
  }
  if (cluster_.rank == 0)
    if (auto err = store_->remove_partial())
      log(log_level::warning, "runtime", "cleaning partial checkpoints: ", describe(err));
  std::optional<int64_t> limit;
  std::optional<checkpoint::checkpoint_info> restored;
  for (int round = 0; round < max_restore_rounds; ++round) {
    // A rank whose checkpoint is already at the limit keeps it: reading the
    // same step again would change nothing but the time the round takes.
    if (round == 0 || (restored && restored->step > *limit)) {
      auto loaded = store_->restore_latest(state_.registry(), limit);
      if (!loaded)
        fail_config("restoring from '" + checkpoint_dir_ + "': " + describe(loaded.error()));
      restored = std::move(*loaded);
    }
    int64_t my_step = restored ? restored->step : -1;
    auto [lowest, highest] = restore_steps_published(round, my_step);
    // Every rank reads the same published steps, so all take the same branch
    // in the same round. Leaving on a rank's own view (its step is the
    // lowest) let it go on while a peer fell back to a second round that it
    // never joined, and both waited for the other until the 120 s bound.
    if (lowest < 0) {
      if (highest >= 0)
        log(log_level::warning, "runtime",
            "a peer has no checkpoint to restore: every worker starts fresh");
      restored_step_ = 0;
      completed_step_.store(0);
      return;
    }
    if (lowest == highest) {
      restored_step_ = restored->total_run_calls;
      completed_step_.store(restored_step_);
      log(log_level::info, "runtime", "restored checkpoint at step ", my_step, " (total_run_calls ",
          restored_step_, ") from ", restored->path);
      return;
    }
    limit = lowest;
  }
  fail_config("the workers could not agree on a checkpoint to restore");
}

// The lowest and highest step the ranks could restore in `round` (-1: none).
std::pair<int64_t, int64_t> worker_runtime::restore_steps_published(int round, int64_t my_step) {
  if (cluster_.world_size == 1) return {my_step, my_step};
  auto published = exchange(restore_key_prefix + std::to_string(round) + "/",
                            std::to_string(my_step), restore_agreement);
  if (published.size() != static_cast<size_t>(cluster_.world_size))
    fail_config(std::string{restore_agreement} + ": " + std::to_string(published.size()) + " of " +
                std::to_string(cluster_.world_size) + " ranks published a step");
  auto lowest = std::numeric_limits<int64_t>::max();
  auto highest = std::numeric_limits<int64_t>::min();
  for (auto& [key, value] : published) {
    auto step = parse_integer(value, key, -1, std::numeric_limits<int64_t>::max());
    if (!step) fail_config(std::string{restore_agreement} + ": " + describe(step.error()));
    lowest = std::min(lowest, *step);
    highest = std::max(highest, *step);
  }
  return {lowest, highest};
}

// The first save's staging memory is mapped and pre-faulted now, not at the
// notice: there its page faults would lengthen the training stall and, with
// many workers on few cores, take CPU from peers still hearing the decision.
// A failure only leaves that work to the first save.
void worker_runtime::prepare_staging() {
  if (!store_) return;
  if (auto err = store_->prepare(state_.registry()))
    log(log_level::warning, "runtime", "staging memory not prepared: ", describe(err));
}

void worker_runtime::spawn_actors() {
  auto& sys = *system_;
  step_resolver_state::config resolver_cfg{
      cluster_.rank,
      cluster_.world_size,
      grace_period_.count(),
      config_.safety_factor,
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.save_every_seconds).count(),
      &phase_};
  resolver_ = spawn_step_resolver(sys, resolver_cfg, &gate_, client_.get());
  writer_ = sys.spawn(checkpoint_writer, client_.get(), resolver_, cluster_.rank == 0);
  exit_controller_config exit_cfg;
  exit_cfg.restart_code = restart_code_;
  exit_cfg.rank = cluster_.rank;
  exit_cfg.dump_stacks = [this] {
    if (stack_dumper_) stack_dumper_->dump(stack_dump_bound);
  };
  exit_controller_ = sys.spawn(exit_controller, exit_cfg, &gate_);
  std::vector<std::unique_ptr<notice_source>> sources;
  for (auto& spec : notice_sources_) {
    if (auto source = make_notice_source(spec))
      sources.push_back(std::move(*source));
    else
      log(log_level::error, "runtime", "notice source '", spec,
          "' not watched: ", describe(source.error()));
  }
  if (config_.termination_watcher_fn)
    sources.push_back(make_function_source(config_.termination_watcher_fn));
  poll_watcher_ = sys.spawn(poll_watcher, &sources, config_.poll_interval, resolver_);
  // From here on the signal watcher reads the notices.
  startup_guard_.reset();
  int signal_reader = -1;
  if (signal_pipe_) {
    if (auto fd = signal_pipe_->open_reader())
      signal_reader = *fd;
    else
      log(log_level::error, "runtime", "signals not watched: ", describe(fd.error()));
  }
  signal_watcher_ = spawn_signal_watcher(sys, signal_reader, grace_period_.count(), resolver_);
  // An actor initialises on a scheduler thread after spawn returns, and the
  // poll watcher takes `sources` (a local) there. It answers a status request
  // only once it is initialised.
  await_started(sys, poll_watcher_);
  cluster_watcher_ =
      spawn_cluster_watcher(sys, cluster_watcher_peers{resolver_, writer_, exit_controller_});
  client_->subscribe(cluster_watcher_);
  if (store_) {
    ready_barrier_ = make_ready_barrier();
    saver_ = std::make_unique<checkpoint::async_saver>(*store_, ready_barrier_.get());
  }
  if (config_.save_every_steps > 0) gate_.set_backup_interval(config_.save_every_steps);
  if (status_port_) {
    status_endpoint_config cfg;
    cfg.rank = cluster_.rank;
    cfg.world_size = cluster_.world_size;
    cfg.port = *status_port_;
    cfg.host = status_host_;
    cfg.observed = {signal_watcher_, poll_watcher_, cluster_watcher_,
                    resolver_,       writer_,       exit_controller_};
    if (service_) cfg.observed.push_back(service_);
    auto endpoint = spawn_status_endpoint(sys, cfg);
    if (endpoint)
      status_endpoint_ = endpoint->first;
    else
      log(log_level::error, "runtime", "status endpoint not started: ", describe(endpoint.error()));
  }
}

// 1. Every worker says whether it can use an NCCL barrier: it can, it was
//    handed no communicator, or why not. All say it, also where no trainer
//    handed one over, so that one whose trainer did never waits in the split
//    (a collective call) for peers that will not make it.
// 2. Each splits a communicator from the trainer's (bounded).
// 3. Every worker says whether its split worked: a barrier that one worker
//    never enters fails every save.
// Any "no" on the way: all use the coordination service.
std::unique_ptr<checkpoint::barrier> worker_runtime::make_ready_barrier() {
  if (cluster_.world_size == 1) return nullptr;
  auto usable =
      exchange(nccl_usable_key_prefix,
               config_.nccl_communicator == nullptr ? no_communicator_value
                                                    : verdict(checkpoint::nccl_barrier_usable()),
               ready_barrier_agreement);
  bool handed_over = std::any_of(usable.begin(), usable.end(), [](const auto& said) {
    return said.second != no_communicator_value;
  });
  if (handed_over && every_rank_can(nccl_usable_key_prefix, usable)) {
    auto nccl = checkpoint::make_nccl_barrier(config_.nccl_communicator, nccl_split_timeout);
    auto split = exchange(nccl_split_key_prefix, verdict(nccl ? caf::error{} : nccl.error()),
                          ready_barrier_agreement);
    if (every_rank_can(nccl_split_key_prefix, split)) {
      log(log_level::info, "runtime",
          "checkpoint-ready barrier: NCCL all-reduce on a communicator split from the trainer's");
      return std::move(*nccl);
    }
  }
  return std::make_unique<coordination_barrier>(*client_);
}

// Publish, meet, read: the barrier fails at once for everyone when a peer is
// lost or failed, where waiting on its key would not.
std::vector<std::pair<std::string, std::string>> worker_runtime::exchange(const std::string& prefix,
                                                                          const std::string& mine,
                                                                          const std::string& what) {
  client_->insert(prefix + std::to_string(cluster_.rank), mine);
  if (auto err = client_->barrier(prefix, restore_agreement_timeout))
    throw peer_error(-1, what + ": " + describe(err), false);
  auto published = client_->get_prefix(prefix);
  if (!published) throw peer_error(-1, what + ": " + describe(published.error()), false);
  return std::move(*published);
}

bool worker_runtime::every_rank_can(const std::string& prefix,
                                    const std::vector<std::pair<std::string, std::string>>& said) {
  auto refusal = std::find_if(said.begin(), said.end(),
                              [](const auto& entry) { return entry.second != can_value; });
  if (refusal == said.end()) return true;
  log(log_level::warning, "runtime",
      "checkpoint-ready barrier through the coordination service, not NCCL: rank ",
      refusal->first.substr(prefix.size()), ": ", refusal->second);
  return false;
}

void worker_runtime::on_action_step(int64_t step) {
  auto act = gate_.at_boundary(step);
  switch (act.kind) {
    case step_gate::action_kind::resume:
      return;
    case step_gate::action_kind::fail:
      throw_failure();
    case step_gate::action_kind::save:
      save(act.step, act.final_save);
      return;
  }
}

void worker_runtime::save(int64_t step, bool final_save) {
  caf::anon_send(writer_, saving_atom::value, step);
  auto started = std::chrono::steady_clock::now();
  if (config_.save_fn) {
    // The user's save_fn writes the checkpoint; lifeboat writes no files of
    // its own and only makes sure every worker saved before anyone exits.
    config_.save_fn(step, checkpoint_dir_);
    if (cluster_.world_size > 1)
      if (auto err =
              client_->barrier("lifeboat/save_fn/" + std::to_string(step), final_commit_bound))
        throw_failure();
    wire::CheckpointInfo info;
    info.set_step(step);
    info.set_path(checkpoint_dir_);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    info.set_seconds(seconds);
    caf::anon_send(writer_, saved_atom::value, step, final_save, info, seconds);
  } else {
    auto writer = writer_;
    auto err = saver_->save(
        state_.registry(), step, step,
        [writer, step, final_save,
         started](const caf::expected<checkpoint::checkpoint_info>& done) {
          if (!done) {
            caf::anon_send(writer, save_failed_atom::value, step, describe(done.error()));
            return;
          }
          wire::CheckpointInfo info;
          info.set_step(done->step);
          info.set_path(done->path);
          info.set_bytes(done->bytes);
          double seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          info.set_seconds(seconds);
          caf::anon_send(writer, saved_atom::value, step, final_save, info, seconds);
        });
    if (err) caf::anon_send(writer_, save_failed_atom::value, step, describe(err));
  }
  if (final_save) wait_and_exit(step);
}

void worker_runtime::wait_and_exit(int64_t step) {
  auto decision = gate_.await_exit(final_commit_bound);
  if (!decision.allowed) {
    if (gate_.failure().failed) throw_failure();
    log(log_level::error, "runtime", "the checkpoint at step ", step, " was not committed within ",
        std::chrono::duration_cast<std::chrono::seconds>(final_commit_bound).count(), " s");
    exit_process(failure_exit_code);
  }
  acknowledge_notices();
  client_->leave();
  wait_for_peers_to_leave();
  if (config_.exit_fn) config_.exit_fn();
  exit_process(decision.code);
}

void worker_runtime::acknowledge_notices() {
  caf::scoped_actor self{*system_};
  self->request(poll_watcher_, acknowledge_bound, acknowledge_atom::value)
      .receive([] {},
               [](const caf::error& err) {
                 log(log_level::warning, "runtime",
                     "notice sources not acknowledged: ", describe(err));
               });
}

void worker_runtime::wait_for_peers_to_leave() {
  if (!service_ || cluster_.world_size <= 1) return;
  caf::scoped_actor self{*system_};
  auto deadline = std::chrono::steady_clock::now() + peer_departure_bound;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all_gone = false;
    self->request(service_, peer_departure_poll * 100, workers_atom::value)
        .receive(
            [&](const std::vector<wire::WorkerInfo>& workers) {
              all_gone = std::all_of(workers.begin(), workers.end(), [](const auto& w) {
                return w.state() == "left" || w.state() == "lost" || w.state() == "error";
              });
            },
            [&](const caf::error&) { all_gone = true; });
    if (all_gone) return;
    std::this_thread::sleep_for(peer_departure_poll);
  }
  log(log_level::warning, "runtime", "not every worker left the service within ",
      std::chrono::duration_cast<std::chrono::seconds>(peer_departure_bound).count(), " s");
}

void worker_runtime::throw_failure() {
  auto f = gate_.failure();
  throw peer_error(f.origin_rank, f.message, f.lost);
}

bool worker_runtime::failed() const { return gate_.failure().failed; }

void worker_runtime::exit_after_failure() {
  auto f = gate_.failure();
  log(log_level::error, "runtime", peer_error(f.origin_rank, f.message, f.lost).what());
  // The rank hosting the service stays until its peers are gone: its exit
  // would otherwise reach them as a lost service, hiding the failure's origin.
  client_->leave();
  wait_for_peers_to_leave();
  exit_process(failure_exit_code);
}

// 1. A failure already known: a step that raises now almost always raised
//    its echo (a collective fails once the failed peer's process ends, gloo
//    0.15 to 0.26 s after the failure's broadcast arrived under a 3-worker
//    PyTorch job): raise that failure, report nothing.
// 2. Report the error; the service broadcasts it only if it is the
//    generation's first failure.
// 3. Wait for the broadcast: a peer's failure came first (this error was its
//    echo after all), or this one did. Without word from the service, this
//    worker's own failure stands.
void worker_runtime::on_step_failed(std::exception_ptr error) {
  if (failure_reported_) return;
  if (gate_.failure().failed) throw_failure();
  auto text = exception_text(error);
  failure_reported_ = true;
  client_->report_error(static_cast<int32_t>(errc::peer_error), text);
  gate_.await_exit(peer_failure_echo_window);
  auto first = gate_.failure();
  if (first.failed && first.origin_rank != cluster_.rank) {
    log(log_level::info, "runtime", "step ", completed_step_.load() + 1, " raised '", text,
        "' after rank ", first.origin_rank, " failed: its echo, not a failure of this rank");
    throw_failure();
  }
  log(log_level::error, "runtime", "step ", completed_step_.load() + 1, " failed: ", text);
  gate_.fail(cluster_.rank, text, false);
}

void worker_runtime::report_error(std::exception_ptr error) {
  if (failure_reported_) return;
  failure_reported_ = true;
  auto text = exception_text(error);
  log(log_level::error, "runtime", "step ", completed_step_.load() + 1, " failed: ", text);
  client_->report_error(static_cast<int32_t>(errc::peer_error), text);
  // This worker has failed from now on, not only once the service's
  // broadcast comes back: a scope left by this exception exits 3 at once.
  gate_.fail(cluster_.rank, text, false);
}

void worker_runtime::barrier(const std::string& name, std::chrono::milliseconds timeout) {
  auto started = std::chrono::steady_clock::now();
  auto err = client_->barrier("user/" + name, timeout);
  blocked_ms_.fetch_add(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - started)
                            .count(),
                        std::memory_order_relaxed);
  if (!err) return;
  // A barrier fails when a participant failed; the failure itself (with its
  // origin) reaches this worker through the cluster watcher at about the same time.
  gate_.await_exit(failure_arrival_bound);
  if (gate_.failure().failed) throw_failure();
  throw peer_error(-1, "barrier '" + name + "' failed: " + describe(err), false);
}

void worker_runtime::shutdown() {
  bool ok = !failed();
  if (saver_) {
    if (auto err = saver_->wait(final_commit_bound))
      log(log_level::warning, "runtime",
          "a checkpoint was still being written at exit: ", describe(err));
  }
  if (ok && cluster_.world_size > 1)
    if (auto err = client_->barrier("lifeboat/shutdown", shutdown_barrier_timeout))
      log(log_level::warning, "runtime", "not every worker reached the end: ", describe(err));
  client_->leave();
  wait_for_peers_to_leave();
  stop_actors();
  // The signals get their previous action back only once no thread of ours
  // runs: a SIGTERM during the teardown lands on any thread that does not
  // block it, and with the default action back it would kill a worker that
  // finished cleanly. Until here it is a notice that nobody acts on.
  signal_pipe_.reset();
}

void worker_runtime::stop_actors() {
  if (status_endpoint_) stop_status_endpoint(status_endpoint_);
  saver_.reset();
  ready_barrier_.reset();
  std::vector<caf::actor> running;
  for (auto* hdl : {&signal_watcher_, &poll_watcher_, &cluster_watcher_, &resolver_, &writer_,
                    &exit_controller_, &status_endpoint_, &service_}) {
    if (*hdl) running.push_back(std::move(*hdl));
    *hdl = nullptr;
  }
  // The actors hold the client and the gate by pointer, so every one of them
  // must have ended before the client goes: a message still in its mailbox
  // (the writer's commit after the last backup save) would otherwise use a
  // destroyed client. Seen as a segfault at exit, about 1 run in 100.
  if (system_ && !running.empty()) {
    caf::scoped_actor self{*system_};
    for (auto& actor : running) {
      self->monitor(actor);
      self->send_exit(actor, caf::exit_reason::user_shutdown);
    }
    bool late = false;
    for (size_t ended = 0; ended < running.size() && !late;)
      self->receive([&](caf::down_msg&) { ++ended; },
                    caf::after(actor_stop_bound) >> [&] { late = true; });
    if (late) log(log_level::warning, "runtime", "an actor did not stop in time at shutdown");
  }
  client_.reset();
  system_.reset();
}

worker_runtime::~worker_runtime() { shutdown(); }

}  // namespace lifeboat
