#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/preemption/interfaces.hpp"

namespace lifeboat {

class notice_source;

/// Runs one notice source (termination_watcher_fn, a cloud metadata server, a
/// trigger file) on a thread of its own, so a slow or hanging source never
/// stalls an actor. Polls every `interval`; errors are logged with backoff.
///
/// Lifetime: owns its source and its thread; the destructor stops the thread
/// (waiting for a poll in progress). Owned by the poll watcher's state.
/// Thread-safety: request_acknowledge and the counters may be called from
/// any thread; the source is used on the poller's thread only.
class source_poller {
 public:
  source_poller(std::unique_ptr<notice_source> source, std::chrono::milliseconds interval,
                caf::actor_addr watcher);
  ~source_poller();

  /// Asks the source to acknowledge the notice (Azure StartRequests) on its
  /// thread; the watcher hears (acknowledged_atom, name()) when it is done.
  void request_acknowledge();
  const std::string& name() const { return name_; }
  int64_t polls() const { return polls_.load(); }
  int64_t errors() const { return errors_.load(); }

 private:
  void loop();

  std::unique_ptr<notice_source> source_;
  std::string name_;
  std::chrono::milliseconds interval_;
  caf::actor_addr watcher_;
  std::atomic<int64_t> polls_{0};
  std::atomic<int64_t> errors_{0};
  std::atomic<bool> acknowledge_{false};
  std::mutex mtx_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

/// Forwards each notice once to the step resolver (a notice without a
/// deadline gets now + grace period there); a source that reports a
/// different notice later (a rebalance recommendation, then the interruption)
/// is heard again. Acknowledging tells the platform it may go ahead now
/// (Azure), so the worker asks for it on its way out, after the final save
/// is committed, and waits for it. Its interface is poll_watcher_actor
/// (interfaces.hpp):
///   (notice_atom, std::string poller, wire::Notice)   from its pollers
///   (acknowledge_atom) -> void                         from the runtime
///   (acknowledged_atom, std::string poller)            from its pollers
///   (status_atom) -> wire::ActorStatus
/// Lifetime: `sources` is read while the actor initialises only (its spawner
/// waits for that, see worker_actors::spawn); it owns the pollers from then
/// on. Thread-safety: an actor.
struct poll_watcher_state {
  static const char* name;
  caf::actor resolver;
  std::vector<std::unique_ptr<source_poller>> pollers;
  std::set<std::string> notices;           // Notice.source of every notice forwarded
  std::set<std::string> notified_pollers;  // source_poller::name() of those that gave one
  std::set<std::string> unacknowledged;    // asked to acknowledge and not done yet
  std::vector<caf::response_promise> acknowledge_waiters;
};

poll_watcher_actor::behavior_type poll_watcher(
    poll_watcher_actor::stateful_pointer<poll_watcher_state> self,
    std::vector<std::unique_ptr<notice_source>>* sources, std::chrono::milliseconds interval,
    caf::actor resolver);

}  // namespace lifeboat
