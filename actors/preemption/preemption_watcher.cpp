#include "actors/preemption/preemption_watcher.hpp"

#include <optional>

#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/coordination/coordination_atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/preemption.pb.h"
#include "platform/clock.hpp"

namespace lifeboat {

namespace {

// A question to the service from a thread that is not an actor.
constexpr auto service_ask_timeout = std::chrono::seconds{5};

caf::behavior follow_membership(caf::event_based_actor* self,
                                std::shared_ptr<preemption_watcher::view> view) {
  return {
      [=](const membership_event& event) {
        std::lock_guard<std::mutex> guard{view->mtx};
        view->present[event.rank] =
            event.kind == membership_event::joined || event.kind == membership_event::error;
        // Every failure after the first of a generation is its consequence:
        // peers that learnt of it and gave up.
        auto failure =
            event.kind == membership_event::error || event.kind == membership_event::lost;
        auto& first = view->first_failure;
        if (failure && (!first || first->generation < event.generation)) first = event;
        view->cv.notify_all();
      },
      [=](caf::exit_msg& msg) {
        std::lock_guard<std::mutex> guard{view->mtx};
        view->stopped = true;
        view->cv.notify_all();
        self->quit(msg.reason);
      },
  };
}

std::string describe_failure(const membership_event& e) {
  auto who = "rank " + std::to_string(e.rank);
  if (e.kind == membership_event::lost) return who + " was lost: " + e.message;
  return e.message.empty() ? who + " failed" : who + " failed: " + e.message;
}

std::string describe_notice(const wire::Notice& n) {
  auto left_s = (n.deadline_unix_ms() - unix_now_ms()) / 1000;
  return "rank " + std::to_string(n.rank()) + ": " + n.reason() + " (source " + n.source() +
         ", deadline in " + std::to_string(left_s) + " s)";
}

}  // namespace

preemption_watcher::preemption_watcher(caf::actor_system& sys, caf::actor service)
    : sys_(sys), service_(std::move(service)), view_(std::make_shared<view>()) {
  actor_ = sys_.spawn(follow_membership, view_);
  caf::anon_send(service_, subscribe_atom::value, actor_);
}

preemption_watcher::~preemption_watcher() {
  caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
}

std::string preemption_watcher::preemption_message() const {
  std::map<std::string, std::string> notices;
  {
    caf::scoped_actor self{sys_};
    self->request(service_, service_ask_timeout, snapshot_atom::value,
                  std::string{notice_key_prefix})
        .receive([&](std::map<std::string, std::string>& kv) { notices = std::move(kv); },
                 [&](caf::error&) {});
  }
  std::optional<wire::Notice> earliest;
  for (auto& [key, value] : notices) {
    wire::Notice n;
    if (!n.ParseFromString(value)) continue;
    if (!earliest || n.deadline_unix_ms() < earliest->deadline_unix_ms()) earliest = n;
  }
  return earliest ? describe_notice(*earliest) : std::string{};
}

bool preemption_watcher::block_until_worker_exit(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock{view_->mtx};
  return view_->cv.wait_for(lock, timeout, [&] {
    if (view_->stopped) return true;
    for (auto& [rank, present] : view_->present)
      if (present) return false;
    return !view_->present.empty();
  });
}

std::string preemption_watcher::failure_message(uint32_t generation,
                                                std::chrono::milliseconds wait) const {
  std::unique_lock<std::mutex> lock{view_->mtx};
  auto& first = view_->first_failure;
  auto seen = [&] { return first && first->generation == generation; };
  view_->cv.wait_for(lock, wait, [&] { return seen() || view_->stopped; });
  return seen() ? describe_failure(*first) : std::string{};
}

}  // namespace lifeboat
