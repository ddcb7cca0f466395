#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

namespace lifeboat {

/// For a controller or coordinator process (not a worker): watches the
/// coordination service it hosts, like the reference's PreemptionWatcher,
/// for any platform. Backed by an actor that follows the service's
/// membership events; every call is thread-safe.
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

  /// The shared view the watcher actor keeps up to date.
  struct view {
    std::mutex mtx;
    std::condition_variable cv;
    std::map<int32_t, bool> present;  // rank -> joined and not yet gone
    bool stopped = false;
  };

 private:
  caf::actor_system& sys_;
  caf::actor service_;
  caf::actor actor_;
  std::shared_ptr<view> view_;
};

}  // namespace lifeboat
