#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "actors/coordination/coordination_events.hpp"

namespace lifeboat {

/// The name of the watcher's row in the coordinator's status.
constexpr const char* preemption_watcher_name = "preemption_watcher";

/// The states of the watcher's row (PreemptionInfo.state): no worker
/// recorded a notice; one did and every worker that joined is still here;
/// some have exited and others not yet; every one has exited.
namespace preemption_state {
constexpr const char* no_notice = "no notice";
constexpr const char* notice = "notice";
constexpr const char* waiting = "waiting for workers to exit";
constexpr const char* exited = "workers exited";
}  // namespace preemption_state

/// For a controller or coordinator process (not a worker): watches the
/// coordination service it hosts, like the reference's PreemptionWatcher,
/// for any platform. Backed by an actor that follows the service's
/// membership events; every call is thread-safe.
/// Lifetime: `sys` must outlive it; the destructor stops its actor, which
/// shares the view with it, so a late event never touches freed memory.
class preemption_watcher {
 public:
  preemption_watcher(caf::actor_system& sys, caf::actor service);
  ~preemption_watcher();

  preemption_watcher(const preemption_watcher&) = delete;
  preemption_watcher& operator=(const preemption_watcher&) = delete;

  /// Empty until some worker got a notice; then which rank, the reason, the
  /// source and the deadline of the earliest one.
  std::string preemption_message() const;

  /// Returns true when every worker that joined has left or was lost, false
  /// after `timeout`. Workers that never joined are not waited for.
  bool block_until_worker_exit(std::chrono::milliseconds timeout);

  /// How many workers that joined are here now (neither left nor lost), as
  /// the service knows them when asked: a worker whose join the service
  /// logged just before is counted (the watcher first takes every event the
  /// service sent until then).
  int workers_present() const;

  /// Gives every worker joined now a notice from this process, whose own
  /// end is near (a coordinator's SIGTERM): without the service the workers
  /// could not agree on a step, and a notice lets them save and exit with
  /// the restart code while it is still here. The notice's rank is
  /// service_sender and its deadline `deadline_unix_ms`, when this process
  /// stops serving (0: none); each worker saves by then, and no later than
  /// its own grace period allows. preemption_message() and the status row
  /// show it ("the coordinator") unless a worker recorded one.
  void raise_notice(const std::string& source, const std::string& reason, int64_t deadline_unix_ms);

  /// Where the failure of `generation` (the workers' LIFEBOAT_RESTART_COUNT)
  /// began: the first error a worker reported ("rank R failed: MESSAGE") or
  /// the first worker lost ("rank R was lost: WHY"), whichever the service
  /// saw first. Waits up to `wait` for it; empty when none came.
  std::string failure_message(uint32_t generation, std::chrono::milliseconds wait) const;

  /// The ranks of `generation` that the service declared lost for their
  /// silence (membership_event::silent: their processes may live on) and
  /// that have not joined again since.
  std::vector<int32_t> silent_ranks(uint32_t generation) const;

  /// The watcher's actor, for the coordinator's status endpoint to observe:
  /// it answers (status_atom) -> wire::ActorStatus named preemption_watcher_name,
  /// whose state is one of the preemption_state names and whose `preemption`
  /// holds the earliest notice. Valid while this watcher lives.
  caf::actor actor() const { return actor_; }

  /// The shared view the watcher actor keeps up to date.
  struct view {
    std::mutex mtx;
    std::condition_variable cv;
    std::map<int32_t, bool> present;                // rank -> joined and not yet gone
    std::optional<membership_event> first_failure;  // of the latest generation that had one
    std::map<int32_t, uint32_t> silent;             // rank -> the generation it fell silent in
    std::string raised;                             // wire::Notice of raise_notice; empty: none
    bool stopped = false;
  };

 private:
  // Returns once the view holds every membership event the service sent
  // before it was asked (a round trip to the service, then to the actor).
  void catch_up() const;

  caf::actor_system& sys_;
  caf::actor service_;
  caf::actor actor_;
  std::shared_ptr<view> view_;
};

}  // namespace lifeboat
