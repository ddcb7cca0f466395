#include "tests/support/simulated_workers.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/coordination/coordination_client.hpp"
#include "actors/preemption/cluster_watcher.hpp"
#include "actors/preemption/protocol.hpp"
#include "actors/preemption/step_gate.hpp"
#include "actors/preemption/step_resolver.hpp"
#include "actors/stop_actors.hpp"
#include "messages/errors.hpp"
#include "messages/preemption.pb.h"
#include "messages/wire.hpp"
#include "platform/clock.hpp"

namespace lifeboat::sim {

namespace {

// A notice's deadline: far enough that the first save is final at once (the
// resolver has no grace period here) and no timer of the protocol fires.
constexpr int64_t notice_deadline_ms = 60000;

// Leaves at teardown, this many at a time (each blocks its thread for a round trip).
constexpr size_t teardown_threads = 16;
// How long a stopped actor may take to be down before the group gives up on
// it. The handles go only after (stop_actors says why).
constexpr auto actor_stop_bound = std::chrono::seconds{10};

constexpr std::chrono::seconds subscribe_bound{10};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs fn(i) for every i < n, `threads` at a time.
template <class F>
void parallel_for(size_t n, size_t threads, F fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::max<size_t>(1, std::min(threads, n)); ++t)
    pool.emplace_back([&] {
      for (auto i = next++; i < n; i = next++) fn(i);
    });
  for (auto& th : pool) th.join();
}

using enter_atom = caf::atom_constant<caf::atom("simenter")>;

// Runs on the I/O thread, like the cluster watcher: the time it notes is the
// time the worker's own actors have the message.
caf::behavior recorder(caf::io::broker* self, board* seen, size_t index, caf::actor agent) {
  return {
      [=](const peer_message& msg) {
        if (msg.channel != protocol_channel) return;
        wire::ProtocolMessage body;
        if (body.ParseFromString(msg.payload) && body.has_commit())
          seen->commit_seen(index, steady_ns());
      },
      [=](const peer_failure& failure) {
        seen->failure_seen(index, failure.rank, failure.lost, steady_ns());
      },
      [=](enter_atom, const std::string& name, int64_t timeout_ms) {
        auto entry = steady_ns();
        self->request(agent, std::chrono::milliseconds{timeout_ms + 1000}, barrier_atom::value,
                      name, timeout_ms, std::vector<int32_t>{}, false)
            .then([=] { seen->barrier_done(index, entry, steady_ns(), true); },
                  [=](caf::error&) { seen->barrier_done(index, entry, steady_ns(), false); });
      },
  };
}

}  // namespace

caf::error raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return make_error(errc::unavailable, "cannot read the open-file limit");
  if (lim.rlim_cur == lim.rlim_max) return caf::none;
  auto soft = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0)
    return make_error(errc::unavailable,
                      "cannot raise the open-file limit; it stays " + std::to_string(soft));
  return caf::none;
}

struct worker_group::worker {
  int32_t rank = 0;
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> action{step_gate::no_step};
  // Shared with the step resolver, which may outlive this worker by a message
  // at shutdown (step_resolver_links).
  std::shared_ptr<step_gate> gate = std::make_shared<step_gate>(completed, action);
  std::shared_ptr<coordination_client> client;
  caf::actor recorder;
  caf::actor resolver;
  caf::actor watcher;
};

board::board(size_t workers) : records_(workers) {}

// Each waits for all workers (or all but one): the waiting thread is woken
// only when the last of them comes, not a thousand times to count again.
void board::commit_seen(size_t index, int64_t at_ns) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (records_[index].commit_ns != 0) return;
  records_[index].commit_ns = at_ns;
  if (++commits_ + 1 >= records_.size()) cv_.notify_all();
}

void board::failure_seen(size_t index, int32_t rank, bool lost, int64_t at_ns) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& r = records_[index];
  if (r.failure_ns != 0) return;
  r.failure_ns = at_ns;
  r.failure_rank = rank;
  r.failure_lost = lost;
  if (++failures_ + 1 >= records_.size()) cv_.notify_all();
}

void board::barrier_done(size_t index, int64_t entry_ns, int64_t exit_ns, bool ok) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& r = records_[index];
  r.barrier_entry_ns = entry_ns;
  r.barrier_exit_ns = exit_ns;
  r.barrier_ok = ok;
  if (++barriers_ >= records_.size()) cv_.notify_all();
}

void board::clear() {
  std::lock_guard<std::mutex> guard{mtx_};
  records_.assign(records_.size(), record{});
  commits_ = failures_ = barriers_ = 0;
}

void board::clear_barriers() {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& r : records_) r.barrier_entry_ns = r.barrier_exit_ns = 0;
  barriers_ = 0;
}

std::optional<int64_t> board::await_commits(size_t except, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> guard{mtx_};
  int64_t last = 0;
  auto all = [&] {
    last = 0;
    for (size_t i = 0; i < records_.size(); ++i) {
      if (i == except) continue;
      if (records_[i].commit_ns == 0) return false;
      last = std::max(last, records_[i].commit_ns);
    }
    return true;
  };
  if (!cv_.wait_for(guard, timeout, all)) return std::nullopt;
  return last;
}

std::optional<int64_t> board::await_failures(int32_t rank, bool lost, size_t except,
                                             std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> guard{mtx_};
  int64_t last = 0;
  bool wrong = false;
  auto all = [&] {
    last = 0;
    for (size_t i = 0; i < records_.size(); ++i) {
      auto& r = records_[i];
      if (i == except) continue;
      if (r.failure_ns == 0) return false;
      // A failure other than the one awaited ends the wait: it is an error.
      if (r.failure_rank != rank || r.failure_lost != lost) wrong = true;
      last = std::max(last, r.failure_ns);
    }
    return true;
  };
  if (!cv_.wait_for(guard, timeout, all) || wrong) return std::nullopt;
  return last;
}

std::optional<board::barrier_times> board::await_barrier(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> guard{mtx_};
  barrier_times times;
  bool ok = true;
  auto all = [&] {
    times = barrier_times{};
    ok = true;
    for (auto& r : records_) {
      if (r.barrier_exit_ns == 0) return false;
      ok = ok && r.barrier_ok;
      times.last_entry_ns = std::max(times.last_entry_ns, r.barrier_entry_ns);
      times.last_exit_ns = std::max(times.last_exit_ns, r.barrier_exit_ns);
    }
    return true;
  };
  if (!cv_.wait_for(guard, timeout, all) || !ok) return std::nullopt;
  return times;
}

std::string board::failures_seen() {
  std::lock_guard<std::mutex> guard{mtx_};
  std::map<std::pair<int32_t, bool>, size_t> seen;
  size_t none = 0;
  for (auto& r : records_) {
    if (r.failure_ns == 0)
      ++none;
    else
      ++seen[{r.failure_rank, r.failure_lost}];
  }
  std::string out;
  for (auto& [what, count] : seen)
    out += "rank " + std::to_string(what.first) + (what.second ? " (lost)" : " (error)") + " by " +
           std::to_string(count) + " workers, ";
  return out + std::to_string(none) + " saw none";
}

worker_group::worker_group(caf::actor_system& sys, worker_options opts, std::vector<int32_t> ranks)
    : sys_(sys), opts_(std::move(opts)), board_(ranks.size()) {
  for (auto rank : ranks) {
    workers_.push_back(std::make_unique<worker>());
    workers_.back()->rank = rank;
  }
}

worker_group::~worker_group() {
  std::vector<caf::actor> actors;
  for (auto& w : workers_)
    for (auto* hdl : {&w->watcher, &w->resolver, &w->recorder})
      if (*hdl) actors.push_back(*hdl);
  stop_actors(sys_, actors, actor_stop_bound);
  // Clients that did not leave do so in their destructors, one at a time.
  leave(teardown_threads);
}

caf::error worker_group::join(size_t threads) {
  std::mutex mtx;
  caf::error first;
  parallel_for(workers_.size(), threads, [&](size_t i) {
    auto& w = *workers_[i];
    agent_config cfg;
    cfg.host = opts_.host;
    cfg.port = opts_.port;
    cfg.rank = w.rank;
    cfg.world_size = opts_.world_size;
    cfg.incarnation = opts_.incarnation;
    cfg.token = opts_.token;
    cfg.heartbeat_interval = opts_.heartbeat_interval;
    cfg.join_timeout = opts_.join_timeout;
    cfg.tls = opts_.tls;
    auto client = coordination_client::connect(sys_, cfg);
    if (!client) {
      std::lock_guard<std::mutex> guard{mtx};
      if (!first) first = std::move(client.error());
      return;
    }
    w.client = std::move(*client);
    w.recorder = sys_.middleman().spawn_broker(recorder, &board_, i, w.client->agent());
    w.client->subscribe(w.recorder);
  });
  return first;
}

void worker_group::arm() {
  board_.clear();
  std::vector<caf::actor> previous;
  for (auto& w : workers_)
    for (auto* hdl : {&w->watcher, &w->resolver})
      if (*hdl) previous.push_back(*hdl);
  stop_actors(sys_, previous, actor_stop_bound);
  for (auto& w : workers_) {
    if (!w->client) continue;
    step_resolver_state::config cfg;
    cfg.rank = w->rank;
    cfg.world_size = opts_.world_size;
    w->resolver = spawn_step_resolver(sys_, cfg, step_resolver_links{w->gate, w->client, nullptr});
    w->watcher = spawn_cluster_watcher(sys_, cluster_watcher_peers{w->resolver, {}, {}});
    w->client->subscribe(w->watcher);
  }
  // An agent reads its socket before its mailbox: a query that came before
  // the subscription would reach the recorder alone. An agent answers this
  // after the subscription, which came first.
  caf::scoped_actor self{sys_};
  for (auto& w : workers_)
    if (w->client)
      self->request(w->client->agent(), subscribe_bound, join_wait_atom::value)
          .receive([] {}, [](caf::error&) {});
}

void worker_group::notice(int32_t rank) {
  auto& w = *workers_[index_of(rank)];
  wire::Notice notice;
  notice.set_rank(rank);
  notice.set_source("simulated");
  notice.set_reason("simulated notice");
  notice.set_received_unix_ms(unix_now_ms());
  notice.set_deadline_unix_ms(unix_now_ms() + notice_deadline_ms);
  caf::anon_send(w.resolver, notice_atom::value, notice);
}

void worker_group::report_error(int32_t rank, int32_t code, const std::string& message) {
  workers_[index_of(rank)]->client->report_error(code, message);
}

void worker_group::enter_barrier(const std::string& name, std::chrono::milliseconds timeout) {
  board_.clear_barriers();
  for (auto& w : workers_)
    caf::anon_send(w->recorder, enter_atom::value, name, static_cast<int64_t>(timeout.count()));
}

caf::error worker_group::leave(size_t threads) {
  std::mutex mtx;
  caf::error first;
  parallel_for(workers_.size(), threads, [&](size_t i) {
    auto& w = *workers_[i];
    if (!w.client) return;
    auto err = w.client->leave();
    w.client.reset();
    if (!err) return;
    std::lock_guard<std::mutex> guard{mtx};
    if (!first) first = std::move(err);
  });
  return first;
}

size_t worker_group::index_of(int32_t rank) const {
  for (size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i]->rank == rank) return i;
  return workers_.size();
}

}  // namespace lifeboat::sim
