#include "runtime/worker_actors.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <type_traits>

#include <caf/scoped_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "actors/preemption/checkpoint_writer.hpp"
#include "actors/preemption/cluster_watcher.hpp"
#include "actors/preemption/job_history.hpp"
#include "actors/preemption/poll_watcher.hpp"
#include "actors/preemption/signal_watcher.hpp"
#include "actors/status/status_endpoint.hpp"
#include "actors/stop_actors.hpp"
#include "actors/system_config.hpp"
#include "lifeboat/errors.hpp"
#include "messages/background_thread.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/status.pb.h"
#include "platform/notice_source.hpp"
#include "platform/signal_pipe.hpp"

namespace lifeboat {

namespace {

using namespace std::chrono_literals;

// A spawned actor answers its first message within this bound, or something is badly wrong.
constexpr auto actor_start_bound = 30s;
// At shutdown each actor ends within this bound of its exit message.
constexpr auto actor_stop_bound = 5s;
// The worker hosting the service stays until the others have left (or are
// lost), so none of them loses the service before it got the commit; bounded
// so a stuck peer never keeps this process past its deadline.
constexpr auto peer_departure_bound = 10s;
constexpr auto peer_departure_poll = 10ms;
// Leaving early is the point of acknowledging a notice (Azure StartRequests),
// so a metadata server that does not answer holds the exit this long at most.
constexpr auto acknowledge_bound = 2s;
// The exit controller ends the process at once when asked; one that has not
// within this bound is gone, which is a bug.
constexpr auto exit_request_bound = 5s;

void await_started(caf::actor_system& sys, const caf::actor& actor) {
  caf::scoped_actor self{sys};
  self->request(actor, actor_start_bound, status_atom::value)
      .receive(
          [](const wire::ActorStatus&) {},
          [](const caf::error& err) { throw config_error("starting an actor: " + describe(err)); });
}

}  // namespace

worker_actors::worker_actors() : system_config_(std::make_unique<system_config>()) {
  // CAF's threads (scheduler, multiplexer, clock, the middleman's private
  // thread) inherit this thread's mask: started with the notice signals
  // blocked, they never take one, and a notice lands on a thread of the
  // application or on one of lifeboat's own. Without this, a SIGTERM that
  // came after shutdown gave the signals their default action back could
  // land on CAF's private thread, which outlives the actor system by a few
  // instructions, and kill a worker that had finished cleanly (seen in 1 of
  // 18 runs of launch_demo_test.sigterms_after_the_last_step_... on a busy host).
  background_threads_block_signals caf_threads_take_no_notice;
  system_ = std::make_unique<caf::actor_system>(*system_config_);
}

worker_actors::~worker_actors() { stop(); }

void worker_actors::spawn(worker_actors_config cfg, std::shared_ptr<step_gate> gate,
                          std::shared_ptr<published_phase> phase) {
  world_size_ = cfg.world_size;
  auto& sys = *system_;
  resolver_ = spawn_step_resolver(sys, cfg.resolver, step_resolver_links{gate, client_, phase});
  writer_ = sys.spawn(checkpoint_writer, client_, resolver_, cfg.rank == 0, cfg.restored,
                      cfg.restored_in_directory);
  exit_controller_ = sys.spawn(lifeboat::exit_controller, cfg.exit, gate);
  poll_watcher_ = sys.spawn(lifeboat::poll_watcher, &cfg.sources, cfg.poll_interval, resolver_);
  signal_watcher_ = spawn_signal_watcher(sys, cfg.signal_reader, cfg.grace_period_ms, resolver_,
                                         cfg.signals, cfg.training_over);
  // An actor initialises on a scheduler thread after spawn returns, and the
  // poll watcher takes the sources (in `cfg`, which goes at the end of this
  // call) there. It answers a status request only once it is initialised.
  await_started(sys, caf::actor_cast<caf::actor>(poll_watcher_));
  cluster_watcher_ =
      spawn_cluster_watcher(sys, cluster_watcher_peers{resolver_, writer_, exit_controller_});
  client_->subscribe(cluster_watcher_);
}

checkpoint::async_saver& worker_actors::start_saver(checkpoint::store& st,
                                                    std::unique_ptr<checkpoint::barrier> ready,
                                                    checkpoint::saver_tiers tiers) {
  ready_barrier_ = std::move(ready);
  saver_ = std::make_unique<checkpoint::async_saver>(
      st, ready_barrier_.get(), checkpoint::default_barrier_timeout, std::move(tiers));
  return *saver_;
}

void worker_actors::start_status_endpoint(int rank, int world_size,
                                          const worker_status_config& status) {
  status_endpoint_config cfg;
  cfg.rank = rank;
  cfg.world_size = world_size;
  cfg.port = status.port;
  cfg.host = status.host;
  cfg.observed = {signal_watcher_,
                  caf::actor_cast<caf::actor>(poll_watcher_),
                  cluster_watcher_,
                  resolver_,
                  caf::actor_cast<caf::actor>(writer_),
                  caf::actor_cast<caf::actor>(exit_controller_)};
  if (service_) cfg.observed.push_back(service_);
  cfg.history = spawn_local_history(*system_);
  auto endpoint = spawn_status_endpoint(*system_, cfg);
  if (endpoint)
    status_endpoint_ = endpoint->first;
  else
    log(log_level::error, "runtime", "status endpoint not started: ", describe(endpoint.error()));
}

void worker_actors::acknowledge_notices() {
  caf::scoped_actor self{*system_};
  self->request(poll_watcher_, acknowledge_bound, acknowledge_atom::value)
      .receive([] {},
               [](const caf::error& err) {
                 log(log_level::warning, "runtime",
                     "notice sources not acknowledged: ", describe(err));
               });
}

void worker_actors::wait_for_peers_to_leave() {
  if (!service_ || world_size_ <= 1) return;
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

void worker_actors::request_exit(bool failed) {
  caf::scoped_actor self{*system_};
  auto controller = exit_controller_;
  self->monitor(controller);
  self->send(controller, exit_now_atom::value, failed);
  // The controller ends the process before it could answer; hearing from it
  // at all means it is gone, which only a bug in this runtime can cause.
  self->receive([](caf::down_msg&) {}, caf::after(exit_request_bound) >> [] {});
  log(log_level::error, "runtime", "the exit controller did not end the process");
  std::abort();
}

void worker_actors::stop() {
  if (!system_) return;
  if (status_endpoint_) stop_status_endpoint(status_endpoint_);
  saver_.reset();
  ready_barrier_.reset();
  // Leaving here, on this thread, makes the client's destructor a mere
  // message: the last actor to let go of the client may run it on the
  // middleman's thread, which a blocking leave there would stall.
  if (client_) client_->leave();
  std::vector<caf::actor> running;
  auto take = [&running](auto& hdl) {
    if (hdl) running.push_back(caf::actor_cast<caf::actor>(std::move(hdl)));
    hdl = std::decay_t<decltype(hdl)>{};
  };
  take(signal_watcher_);
  take(poll_watcher_);
  take(cluster_watcher_);
  take(resolver_);
  take(writer_);
  take(exit_controller_);
  take(status_endpoint_);
  take(service_);
  // Every actor ends before the client and the system go, so that none is
  // left acting on a client that has left (the writer's commit after the
  // last backup save, say). Their shares keep the client and the gate alive
  // in any case: a late one (warned about) only delays the system's end.
  if (!stop_actors(*system_, running, actor_stop_bound))
    log(log_level::warning, "runtime", "an actor did not stop in time at shutdown");
  client_.reset();
  system_.reset();
}

}  // namespace lifeboat
