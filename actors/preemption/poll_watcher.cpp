#include "actors/preemption/poll_watcher.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/atoms.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/background_thread.hpp"
#include "messages/log.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/utf8.hpp"
#include "messages/wire.hpp"
#include "platform/clock.hpp"
#include "platform/notice_source.hpp"

namespace lifeboat {

const char* poll_watcher_state::name = "poll_watcher";

namespace {

// A failing source is retried with exponential backoff up to this bound, and
// logged on the first failure and then every `log_every_errors` failures.
constexpr auto max_backoff = std::chrono::milliseconds{30000};
constexpr int64_t log_every_errors = 30;

}  // namespace

source_poller::source_poller(std::unique_ptr<notice_source> source,
                             std::chrono::milliseconds interval, caf::actor_addr watcher)
    : source_(std::move(source)),
      name_(source_->name()),
      interval_(interval),
      watcher_(std::move(watcher)),
      thread_(background_thread([this] { loop(); })) {}

source_poller::~source_poller() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void source_poller::request_acknowledge() {
  acknowledge_ = true;
  cv_.notify_all();
}

void source_poller::loop() {
  name_this_thread("lifeboat.poll");
  auto wait = interval_;
  for (;;) {
    if (acknowledge_.exchange(false)) {
      source_->acknowledge();
      if (auto hdl = caf::actor_cast<poll_watcher_actor>(watcher_))
        caf::anon_send(hdl, acknowledged_atom::value, name_);
    }
    auto result = source_->poll(interval_);
    ++polls_;
    if (!result) {
      auto n = ++errors_;
      if (n == 1 || n % log_every_errors == 0)
        log(log_level::warning, "poll_watcher", name_, ": ", describe(result.error()), " (failure ",
            n, "; training goes on)");
      wait = std::min(wait * 2, max_backoff);
    } else {
      wait = interval_;
      if (*result) {
        wire::Notice notice;
        // A source's text may hold bytes that are not UTF-8 (a trigger
        // file's path): the peers could not parse the notice, and it would
        // not reach them.
        notice.set_source(to_utf8((*result)->source));
        notice.set_reason(to_utf8((*result)->reason));
        notice.set_deadline_unix_ms((*result)->deadline_unix_ms);
        notice.set_received_unix_ms(unix_now_ms());
        if (auto hdl = caf::actor_cast<poll_watcher_actor>(watcher_))
          caf::anon_send(hdl, notice_atom::value, name_, notice);
      }
    }
    std::unique_lock<std::mutex> lock{mtx_};
    if (cv_.wait_for(lock, wait, [this] { return stop_ || acknowledge_.load(); }) && stop_) return;
  }
}

poll_watcher_actor::behavior_type poll_watcher(
    poll_watcher_actor::stateful_pointer<poll_watcher_state> self,
    std::vector<std::unique_ptr<notice_source>>* sources, std::chrono::milliseconds interval,
    caf::actor resolver) {
  auto& st = self->state;
  st.resolver = std::move(resolver);
  for (auto& source : *sources)
    st.pollers.push_back(
        std::make_unique<source_poller>(std::move(source), interval, self->address()));
  sources->clear();
  return {
      [=](notice_atom, const std::string& poller, const wire::Notice& notice) {
        auto& st = self->state;
        st.notified_pollers.insert(poller);
        if (!st.notices.insert(notice.source()).second) return;
        // Anonymous: a typed actor cannot name itself to the untyped resolver
        // (a broker), which never answers a notice.
        caf::anon_send(st.resolver, notice_atom::value, notice);
      },
      [=](acknowledge_atom) -> caf::result<void> {
        auto& st = self->state;
        // A second request while the first is under way waits for the same.
        if (st.acknowledge_waiters.empty())
          for (auto& poller : st.pollers)
            if (st.notified_pollers.count(poller->name()) > 0) {
              st.unacknowledged.insert(poller->name());
              poller->request_acknowledge();
            }
        if (st.unacknowledged.empty()) return caf::unit;
        st.acknowledge_waiters.push_back(self->make_response_promise());
        return caf::delegated<void>{};
      },
      [=](acknowledged_atom, const std::string& poller) {
        auto& st = self->state;
        st.unacknowledged.erase(poller);
        if (!st.unacknowledged.empty()) return;
        for (auto& waiter : st.acknowledge_waiters) waiter.deliver(caf::unit);
        st.acknowledge_waiters.clear();
      },
      [=](status_atom) -> wire::ActorStatus {
        auto& st = self->state;
        wire::ActorStatus out;
        out.set_name(poll_watcher_state::name);
        out.set_state(st.pollers.empty() ? "idle" : !st.notices.empty() ? "notified" : "polling");
        out.set_mailbox(static_cast<int64_t>(self->mailbox().size()));
        double polls = 0, errors = 0;
        for (auto& p : st.pollers) {
          polls += static_cast<double>(p->polls());
          errors += static_cast<double>(p->errors());
        }
        (*out.mutable_metrics())["notice_polls_total"] = polls;
        (*out.mutable_metrics())["notice_poll_errors_total"] = errors;
        (*out.mutable_metrics())["notice_sources"] = static_cast<double>(st.pollers.size());
        return out;
      },
  };
}

}  // namespace lifeboat
