#include "runtime/worker_runtime.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_client.hpp"
#include "actors/preemption/checkpoint_writer.hpp"
#include "actors/preemption/cluster_phase.hpp"
#include "actors/preemption/exit_controller.hpp"
#include "actors/preemption/poll_watcher.hpp"
#include "actors/preemption/protocol.hpp"
#include "checkpoint/tiered_restore.hpp"
#include "lifeboat/errors.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/status.pb.h"
#include "messages/utf8.hpp"
#include "messages/wire.hpp"
#include "platform/environment.hpp"
#include "platform/notice_source.hpp"
#include "platform/platform_detection.hpp"
#include "platform/signal_pipe.hpp"
#include "runtime/checkpoint_tiers.hpp"
#include "runtime/startup_agreement.hpp"

namespace lifeboat {

namespace {

using namespace std::chrono_literals;

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
// A hung rank's training thread writes its stack within this bound.
constexpr auto stack_dump_bound = 2s;

[[noreturn]] void fail_config(const std::string& what) { throw config_error(what); }

// The checkpoint directory against the working directory at construction: a
// relative one resolved at each save followed the trainer's later chdir (a
// Hydra run's output directory, say), and the save went where no restart
// looks.
std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  auto absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.string();
}

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

}  // namespace

worker_runtime::worker_runtime(checkpoint_state& state, std::string checkpoint_dir,
                               termination_config config, std::atomic<int64_t>& completed_step,
                               std::atomic<int64_t>& action_step, const std::atomic<bool>& in_step)
    : state_(state),
      checkpoint_dir_(absolute_path(checkpoint_dir)),
      config_(std::move(config)),
      gate_(std::make_shared<step_gate>(completed_step, action_step)),
      completed_step_(completed_step),
      in_step_(in_step) {
  state_.registry().seal();
  // A registration the framework has moved away from (PyTorch's module.to()
  // after add_module) would restore into memory the trainer no longer uses.
  if (auto err = state_.registry().run_checks()) fail_config(describe(err));
  // 1. Everything that can be wrong with the configuration, before anything is written.
  auto env = process_environment();
  auto settings =
      resolve_worker_settings(config_, checkpoint_dir_, env, [&env](const cluster_spec& cluster) {
        set_log_rank(cluster.rank);
        return detect_platform(env);
      });
  if (!settings) fail_config(describe(settings.error()));
  settings_ = std::move(*settings);
  // The constructing thread is the training thread: the one a hung rank's
  // stack is wanted of.
  if (auto dumper = stack_dumper::install_for_this_thread())
    stack_dumper_ = std::move(*dumper);
  else
    log(log_level::warning, "runtime", describe(dumper.error()));
  // The signal handlers go in before anything slow (joining, restoring): a
  // notice during start-up is no longer fatal to the process, and the
  // start-up guard ends it with the restart code (nothing trained yet).
  // Another handler's pipe means another handler open in this process (a
  // notebook's cell run again, say): this one would join as the same rank,
  // share the checkpoint directory, and never hear a signal, so a
  // preemption would end the training loop it runs without a checkpoint.
  auto pipe = signal_pipe::install(settings_.signals);
  if (pipe)
    signal_pipe_ = std::move(*pipe);
  else if (pipe.error() == make_error(errc::already_exists))
    fail_config(
        "another handler is open in this process, and one is all a process may have: "
        "close it first (close(), or the end of its with block)");
  else
    log(log_level::error, "runtime", "signals not watched: ", describe(pipe.error()));
  if (signal_pipe_) {
    auto guard = startup_guard::start(*signal_pipe_, settings_.restart_code);
    if (guard)
      startup_guard_ = std::move(*guard);
    else
      log(log_level::warning, "runtime",
          "signals during the start wait for its end: ", describe(guard.error()));
  }
  auto& cluster = settings_.cluster;
  if (!config_.save_fn) {
    checkpoint::store_config store_cfg;
    store_cfg.dir = checkpoint_dir_;
    store_cfg.rank = cluster.rank;
    store_cfg.world_size = cluster.world_size;
    store_cfg.max_to_keep = config_.max_to_keep;
    auto opened = checkpoint::store::open(store_cfg);
    if (!opened)
      fail_config("checkpoint_dir '" + checkpoint_dir_ + "': " + describe(opened.error()));
    store_.emplace(std::move(*opened));
    auto memory = open_worker_memory_tier(settings_.local_dir, checkpoint_dir_, cluster.rank,
                                          cluster.world_size);
    if (!memory)
      fail_config("checkpoint_dir '" + checkpoint_dir_ + "': " + describe(memory.error()));
    memory_ = std::move(*memory);
    // After the memory tier: its refusal names the other job's size.
    auto locked = lock_checkpoint_dir(checkpoint_dir_, cluster.rank);
    if (!locked)
      fail_config("checkpoint_dir '" + checkpoint_dir_ + "': " + describe(locked.error()));
    checkpoint_dir_lock_ = std::move(*locked);
  }
  log(log_level::info, "runtime", "rank ", cluster.rank, " of ", cluster.world_size, " (",
      cluster.origin, ", platform ", settings_.platform_name, ", restart ", cluster.restart_count,
      ", grace period ", settings_.grace_period.count(), " ms)");
  // 2. Join the cluster, 3. restore, 4. start watching (and prepare the
  // staging memory in the background). A failure on the way stops what was
  // started: the actor system's destructor would otherwise wait forever for
  // the actors (the hosted service above all).
  try {
    start();
  } catch (...) {
    actors_.reset();
    throw;
  }
}

void worker_runtime::start() {
  actors_ = std::make_unique<worker_actors>();
  join_config join;
  join.heartbeat_timeout = config_.heartbeat_timeout;
  join.hang_timeout_ms = settings_.hang_timeout_ms;
  join.heartbeat.step = [this] { return completed_step_.load(std::memory_order_relaxed); };
  join.heartbeat.status = [this] { return heartbeat_status(phase_->get()); };
  join.heartbeat.paused = [this] { return pauses_steps(phase_->get()); };
  join.heartbeat.in_step = [this] { return in_step_.load(std::memory_order_relaxed); };
  join.heartbeat.finished = [this] { return finished_.load(std::memory_order_relaxed); };
  join.heartbeat.blocked_ms = [this] { return blocked_ms_.load(std::memory_order_relaxed); };
  join.tls = settings_.tls;
  join_cluster(*actors_, settings_.cluster, join);
  if (startup_guard_) startup_guard_->joined();
  startup_agreement agreement{*actors_->client(), rank(), world_size()};
  checkpoint::memory_tier* memory = memory_ ? &*memory_ : nullptr;
  if (store_ && world_size() > 1)
    peer_ = open_worker_peer_tier(
        memory, settings_.cluster, settings_.tls,
        [&](const std::string& mine) { return agreement.publish_peer_addresses(mine); });
  restored_step_ = agreement.restore(store_ ? &*store_ : nullptr, memory, state_, checkpoint_dir_,
                                     memory ? peer_.fetch() : nullptr);
  if (agreement.restored()) {
    restored_report_ = checkpoint_report(*agreement.restored(), agreement.restored()->seconds);
    restored_in_directory_ = store_ && checkpoint::directory_holds(*store_, *agreement.restored());
  }
  if (store_) completed_step_.store(restored_step_);
  spawn_actors();
  if (store_) {
    saver_ = &actors_->start_saver(
        *store_, agreement.make_ready_barrier(config_.nccl_communicator),
        {memory, agreement.make_tier_vote_exchange(), memory ? peer_.replicate(*memory) : nullptr,
         [this, memory] { prepare_spares(memory, peer_, state_.registry()); }});
    // The directory was looked at once, above: only a checkpoint it lacks
    // is handed on to be written there.
    if (agreement.restored() && !restored_in_directory_)
      if (auto err = checkpoint::persist_to_directory(
              *saver_, *store_, state_.registry(), *agreement.restored(),
              [writer = actors_->writer()](int64_t step) {
                caf::anon_send(writer, persisted_atom::value, step);
              }))
        log(log_level::warning, "runtime", describe(err));
    // The first save's staging memory is mapped and pre-faulted before a
    // notice, not at it: there its page faults would lengthen the training
    // stall and, with many workers on few cores, take CPU from peers still
    // hearing the decision. On the saver's thread while training starts,
    // not before: mapping 256 MiB took up to 0.9 s here, and a restart would
    // wait for it. A save that comes sooner waits for it; a failure only
    // leaves that work to the first save.
    saver_->run_in_background([this, memory] {
      // The files of the next shard first: a notice before the staging
      // memory is ready waits for both anyway.
      prepare_spares(memory, peer_, state_.registry());
      auto start = std::chrono::steady_clock::now();
      if (auto err = store_->prepare(state_.registry()))
        log(log_level::warning, "runtime", "staging memory not prepared: ", describe(err));
      else
        log(log_level::info, "runtime", "staging memory prepared for the next save in ",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), " s");
    });
  }
  if (config_.save_every_steps > 0) gate_->set_backup_interval(config_.save_every_steps);
  if (settings_.status_port)
    actors_->start_status_endpoint(
        rank(), world_size(), worker_status_config{*settings_.status_port, settings_.status_host});
}

void worker_runtime::spawn_actors() {
  worker_actors_config cfg;
  cfg.rank = rank();
  cfg.world_size = world_size();
  cfg.resolver = step_resolver_state::config{
      rank(),
      world_size(),
      settings_.grace_period.count(),
      config_.safety_factor,
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.save_every_seconds).count(),
      nullptr};
  cfg.exit.restart_code = settings_.restart_code;
  cfg.exit.rank = rank();
  cfg.exit.dump_stacks = [this] {
    if (stack_dumper_) stack_dumper_->dump(stack_dump_bound);
  };
  for (auto& spec : settings_.notice_sources) {
    if (auto source = make_notice_source(spec))
      cfg.sources.push_back(std::move(*source));
    else
      log(log_level::error, "runtime", "notice source '", spec,
          "' not watched: ", describe(source.error()));
  }
  if (config_.termination_watcher_fn)
    cfg.sources.push_back(make_function_source(config_.termination_watcher_fn));
  cfg.poll_interval = config_.poll_interval;
  // From here on the signal watcher reads the notices; one that comes
  // between the guard's end and the watcher's start waits in the pipe.
  startup_guard_.reset();
  if (signal_pipe_) {
    if (auto fd = signal_pipe_->open_reader()) {
      cfg.signal_reader = *fd;
      cfg.signals = settings_.signals;
      cfg.training_over = [this] { return finished_.load(std::memory_order_relaxed); };
    } else
      log(log_level::error, "runtime", "signals not watched: ", describe(fd.error()));
  }
  cfg.grace_period_ms = settings_.grace_period.count();
  cfg.restored = restored_report_;
  cfg.restored_in_directory = restored_in_directory_;
  actors_->spawn(std::move(cfg), gate_, phase_);
}

void worker_runtime::on_action_step(int64_t step) {
  // The trainer went on after exit_fn raised: this worker left the cluster,
  // and a step here waited for a decision that never came, until the exit
  // controller's bound ended the process.
  if (left_after_commit_)
    throw std::logic_error(
        "this worker left the cluster after its final checkpoint (exit_fn raised): no step runs "
        "or saves any more; end the process");
  auto act = gate_->at_boundary(step);
  switch (act.kind) {
    case step_gate::action_kind::resume:
      return;
    case step_gate::action_kind::fail:
      throw_failure();
    case step_gate::action_kind::save:
      save(act.step, act.final_save, act.deadline_unix_ms);
      return;
  }
}

void worker_runtime::save(int64_t step, bool final_save, int64_t deadline_unix_ms) {
  caf::anon_send(actors_->writer(), saving_atom::value, step);
  auto started = std::chrono::steady_clock::now();
  if (config_.save_fn) {
    // The user's save_fn writes the checkpoint; lifeboat writes no files of
    // its own and only makes sure every worker saved before anyone exits.
    config_.save_fn(step, checkpoint_dir_);
    // Seen: the barrier failed (a peer's save_fn raised) before that failure
    // reached this worker, and run raised PeerError with no message and no
    // origin rank. A rank that has not arrived by the bound is stuck in its
    // save_fn (a hung file system, a deadlock): it is named as hung; before,
    // each waiting rank raised a PeerError of its own, with no origin, and
    // reported it as its own failure (exit 1 from Python).
    if (world_size() > 1)
      if (auto err = actors_->client()->barrier("lifeboat/save_fn/" + std::to_string(step),
                                                final_commit_bound, {},
                                                coordination_client::absent_at_timeout::hung))
        throw_barrier_failure("the save_fn barrier of step " + std::to_string(step), err);
    wire::CheckpointInfo info;
    info.set_step(step);
    info.set_path(to_utf8(checkpoint_dir_));
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    info.set_seconds(seconds);
    caf::anon_send(actors_->writer(), saved_atom::value, step, final_save, info, seconds);
  } else {
    auto writer = actors_->writer();
    auto err = saver_->save(
        state_.registry(), step, step,
        [writer, step, final_save,
         started](const caf::expected<checkpoint::checkpoint_info>& done) {
          if (!done) {
            caf::anon_send(writer, save_failed_atom::value, step, describe(done.error()));
            return;
          }
          double seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          caf::anon_send(writer, saved_atom::value, step, final_save,
                         checkpoint_report(*done, seconds), seconds);
        },
        // Without a grace period the deadline is the notice itself: no
        // directory write would fit, and none is skipped for it.
        checkpoint::save_options{settings_.grace_period.count() > 0 ? deadline_unix_ms : 0, false,
                                 final_save});
    if (err) {
      caf::anon_send(actors_->writer(), save_failed_atom::value, step, describe(err));
      // The snapshot failed here, on the training thread: this worker has
      // failed from now on, as for a step's error, not only once the
      // service's broadcast of its report comes back. Until then, a step that
      // returns at once asked for a save at every step, each failing again:
      // the reports queued ahead of the broadcast, and run() went on for a
      // minute beside a compile.
      gate_->fail(rank(), save_failure_text(step, describe(err)), false);
    }
  }
  if (final_save) wait_and_exit(step);
}

void worker_runtime::wait_and_exit(int64_t step) {
  auto decision = gate_->await_exit(final_commit_bound);
  if (!decision.allowed) {
    if (gate_->failure().failed) throw_failure();
    log(log_level::error, "runtime", "the checkpoint at step ", step, " was not committed within ",
        std::chrono::duration_cast<std::chrono::seconds>(final_commit_bound).count(), " s");
    actors_->request_exit(true);
  }
  // The commit is cluster-wide once the commit rank's save ended; this
  // worker's own may still be reporting (after a memory-only vote): it ends
  // first, so that its log lines and its part in the decision are not cut.
  if (saver_)
    if (auto err = saver_->wait(final_commit_bound))
      log(log_level::warning, "runtime", describe(err));
  actors_->acknowledge_notices();
  actors_->client()->leave();
  actors_->wait_for_peers_to_leave();
  left_after_commit_ = true;
  // What exit_fn throws leaves run() as it was thrown: its own way of ending
  // the process (Python's SystemExit with its code, an exception the trainer
  // catches to clean up). Seen: sys.exit(7) came out as RuntimeError
  // 'SystemExit: 7', reported to every worker as a failure of the step
  // after the committed one, and the launcher gave up with exit 3.
  if (config_.exit_fn) config_.exit_fn();
  actors_->request_exit(false);
}

void worker_runtime::throw_failure() {
  auto f = gate_->failure();
  throw peer_error(f.origin_rank, f.message, f.lost);
}

bool worker_runtime::failed() const { return gate_->failure().failed; }

void worker_runtime::exit_after_failure() {
  auto f = gate_->failure();
  log(log_level::error, "runtime", peer_error(f.origin_rank, f.message, f.lost).what());
  // The rank hosting the service stays until its peers are gone: its exit
  // would otherwise reach them as a lost service, hiding the failure's origin.
  actors_->client()->leave();
  actors_->wait_for_peers_to_leave();
  actors_->request_exit(true);
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
  if (failure_reported_ || left_after_commit_) return;
  if (gate_->failure().failed) throw_failure();
  auto text = exception_text(error);
  failure_reported_ = true;
  actors_->client()->report_error(static_cast<int32_t>(errc::peer_error), text);
  gate_->await_exit(peer_failure_echo_window);
  auto first = gate_->failure();
  if (first.failed && first.origin_rank != rank()) {
    log(log_level::info, "runtime", "step ", completed_step_.load() + 1, " raised '", text,
        "' after rank ", first.origin_rank, " failed: its echo, not a failure of this rank");
    throw_failure();
  }
  log(log_level::error, "runtime", "step ", completed_step_.load() + 1, " failed: ", text);
  gate_->fail(rank(), text, false);
}

void worker_runtime::report_error(std::exception_ptr error) {
  report_failure("step " + std::to_string(completed_step_.load() + 1) + " failed",
                 exception_text(error));
}

void worker_runtime::report_left_by_exception(const std::string& text) {
  report_failure("left the training loop by an exception", text);
}

void worker_runtime::report_failure(const std::string& context, const std::string& text) {
  // A child forked without exec has no thread to send it with.
  if (!actors_ || forked_away() || failure_reported_ || failed() || left_after_commit_) return;
  failure_reported_ = true;
  log(log_level::error, "runtime", context, ": ", text);
  actors_->client()->report_error(static_cast<int32_t>(errc::peer_error), text);
  // This worker has failed from now on, not only once the service's
  // broadcast comes back: a scope left by this exception exits 3 at once.
  gate_->fail(rank(), text, false);
}

void worker_runtime::barrier(const std::string& name, std::chrono::milliseconds timeout) {
  // The name travels as a protobuf string, which the service cannot parse
  // unless it is UTF-8: it would close this worker's connection.
  if (!is_utf8(name)) throw config_error("barrier name '" + to_utf8(name) + "' is not UTF-8");
  auto started = std::chrono::steady_clock::now();
  auto err = actors_->client()->barrier("user/" + name, timeout);
  blocked_ms_.fetch_add(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - started)
                            .count(),
                        std::memory_order_relaxed);
  if (err) throw_barrier_failure("barrier '" + name + "'", err);
}

void worker_runtime::throw_barrier_failure(const std::string& what, const caf::error& err) {
  // A barrier fails when a participant failed; the failure itself (with its
  // origin) reaches this worker through the cluster watcher at about the same time.
  gate_->await_exit(failure_arrival_bound);
  if (gate_->failure().failed) throw_failure();
  throw peer_error(-1, what + " failed: " + describe(err), false);
}

void worker_runtime::shutdown() {
  if (!actors_) return;
  finished_.store(true, std::memory_order_relaxed);
  bool ok = !failed();
  if (saver_) {
    if (auto err = saver_->wait(final_commit_bound))
      log(log_level::warning, "runtime",
          "a checkpoint was still being written at exit: ", describe(err));
  }
  // The job's training is over (its peers are met, its tiers can go) unless
  // a worker failed, or this one left the cluster after its final
  // checkpoint and exit_fn threw: no peer is left to meet then, and its
  // tiers hold the checkpoint that its restart reads.
  bool training_done = ok && !left_after_commit_;
  auto& client = *actors_->client();
  bool failure_is_ours = false;
  if (training_done && world_size() > 1)
    if (auto err = client.barrier("lifeboat/shutdown", shutdown_barrier_timeout)) {
      log(log_level::warning, "runtime", "not every worker reached the end: ", describe(err));
      gate_->await_exit(failure_arrival_bound);
      failure_is_ours = failed() && gate_->failure().origin_rank == rank();
    }
  if (!left_after_commit_) {
    client.leave();
    actors_->wait_for_peers_to_leave();
  }
  // A rank named as the failure itself (hung: its loop ended while the
  // others waited in a step it never runs) exits with the failure code, as
  // every rank of a failed job does. Its training loop is over: the exit
  // controller's own delayed exit raced the process's normal end (exit 0),
  // so the runtime asks it to end the process now.
  if (failure_is_ours) {
    log(log_level::error, "runtime", "this rank is where the job's failure began (",
        gate_->failure().message, "): exiting with code ", failure_exit_code);
    actors_->request_exit(true);
  }
  saver_ = nullptr;
  actors_.reset();
  // Training ended: no restart will read this rank's memory tier, and what
  // it holds is host memory (the directory keeps the checkpoints).
  if (training_done && peer_.server)
    if (auto err = peer_.server->remove_replicas())
      log(log_level::warning, "runtime", "removing the peer tier's replicas: ", describe(err));
  if (training_done && memory_)
    if (auto err = memory_->remove())
      log(log_level::warning, "runtime", "removing the memory tier: ", describe(err));
  // The signals get their previous action back only once no thread of ours
  // runs: a SIGTERM during the teardown lands on any thread that does not
  // block it, and with the default action back it would kill a worker that
  // finished cleanly. Until here it is a notice that nobody acts on.
  signal_pipe_.reset();
}

worker_runtime::~worker_runtime() { shutdown(); }

}  // namespace lifeboat
