#include "actors/preemption/preemption_watcher.hpp"

#include <algorithm>

#include <optional>

#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/clock.hpp"

namespace lifeboat {

namespace {

// A question to the service from a thread that is not an actor.
constexpr auto service_ask_timeout = std::chrono::seconds{5};
// The watcher's status row must come within the endpoint's ask timeout (500 ms).
constexpr auto row_ask_timeout = std::chrono::milliseconds{400};

// (sync_atom) -> void: answered once the watcher's actor took every message
// that came before it.
using sync_atom = caf::atom_constant<caf::atom("pwsync")>;

std::string notice_sender(const wire::Notice& n) {
  return n.rank() == service_sender ? "the coordinator" : "rank " + std::to_string(n.rank());
}

std::string describe_failure(const membership_event& e) {
  // Rank -1: the job's, whose message says what it is.
  if (e.rank < 0) return e.message;
  auto who = "rank " + std::to_string(e.rank);
  if (e.kind == membership_event::lost) return who + " was lost: " + e.message;
  return e.message.empty() ? who + " failed" : who + " failed: " + e.message;
}

// The message is read once the workers have exited, often after the
// deadline: that one is "passed", where a count of seconds read "in -1 s".
// A notice due as it came had no grace period (a plain SIGTERM where no
// platform gives one): said so, where "passed" read as a deadline missed.
// A notice this process raised without a deadline leaves it to each
// worker's grace period.
std::string describe_notice(const wire::Notice& n) {
  auto left_ms = n.deadline_unix_ms() - unix_now_ms();
  auto deadline = n.deadline_unix_ms() == 0 ? std::string{"each worker's grace period"}
                  : n.deadline_unix_ms() == n.received_unix_ms()
                      ? std::string{"at once: no grace period"}
                  : left_ms > 0 ? "in " + std::to_string(left_ms / 1000) + " s"
                                : "passed";
  return notice_sender(n) + ": " + n.reason() + " (source " + n.source() + ", deadline " +
         deadline + ")";
}

// The earliest deadline among the notices workers recorded (the values of
// `notices`), else the one this process raised (`raised`, empty: none).
std::optional<wire::Notice> earliest_notice(const std::map<std::string, std::string>& notices,
                                            const std::string& raised) {
  std::optional<wire::Notice> earliest;
  for (auto& [key, value] : notices) {
    wire::Notice n;
    if (!n.ParseFromString(value)) continue;
    if (!earliest || n.deadline_unix_ms() < earliest->deadline_unix_ms()) earliest = n;
  }
  wire::Notice own;
  if (!earliest && !raised.empty() && own.ParseFromString(raised)) earliest = own;
  return earliest;
}

std::string raised_notice(preemption_watcher::view& v) {
  std::lock_guard<std::mutex> guard{v.mtx};
  return v.raised;
}

// The watcher's row: what it would tell the launcher now.
wire::ActorStatus watcher_status(const std::optional<wire::Notice>& notice,
                                 preemption_watcher::view& v, int64_t mailbox) {
  int present = 0;
  int gone = 0;
  {
    std::lock_guard<std::mutex> guard{v.mtx};
    for (auto& [rank, here] : v.present) ++(here ? present : gone);
  }
  wire::ActorStatus out;
  out.set_name(preemption_watcher_name);
  out.set_mailbox(mailbox);
  auto& info = *out.mutable_preemption();
  info.set_notice_rank(-1);
  if (!notice) {
    info.set_state(preemption_state::no_notice);
  } else {
    info.set_state(gone == 0     ? preemption_state::notice
                   : present > 0 ? preemption_state::waiting
                                 : preemption_state::exited);
    info.set_notice_rank(notice->rank());
    info.set_source(notice->source());
    info.set_reason(notice->reason());
    info.set_deadline_unix_ms(static_cast<double>(notice->deadline_unix_ms()));
    info.set_message(describe_notice(*notice));
  }
  out.set_state(gone == 0 && notice ? "notice from " + notice_sender(*notice) : info.state());
  auto& metrics = *out.mutable_metrics();
  metrics["workers_present"] = present;
  metrics["notice_rank"] = info.notice_rank();
  metrics["notice_deadline_unix_ms"] = info.deadline_unix_ms();
  return out;
}

caf::behavior follow_membership(caf::event_based_actor* self,
                                std::shared_ptr<preemption_watcher::view> view,
                                caf::actor service) {
  return {
      [=](const membership_event& event) {
        std::lock_guard<std::mutex> guard{view->mtx};
        if (event.rank >= 0) {
          view->present[event.rank] =
              event.kind == membership_event::joined || event.kind == membership_event::error;
          if (event.kind == membership_event::lost && event.silent)
            view->silent[event.rank] = event.generation;
          if (event.kind == membership_event::joined) view->silent.erase(event.rank);
        }
        // Every failure after the first of a generation is its consequence:
        // peers that learnt of it and gave up.
        auto failure =
            event.kind == membership_event::error || event.kind == membership_event::lost;
        auto& first = view->first_failure;
        if (failure && (!first || first->generation < event.generation)) first = event;
        view->cv.notify_all();
      },
      // The service's notices are asked for here, so that a slow answer
      // delays only this row.
      [=](status_atom) {
        auto rp = self->make_response_promise<wire::ActorStatus>();
        auto mailbox = static_cast<int64_t>(self->mailbox().size());
        self->request(service, row_ask_timeout, snapshot_atom::value,
                      std::string{notice_key_prefix})
            .then(
                [=](const std::map<std::string, std::string>& kv) mutable {
                  rp.deliver(
                      watcher_status(earliest_notice(kv, raised_notice(*view)), *view, mailbox));
                },
                [=](caf::error&) mutable {
                  rp.deliver(
                      watcher_status(earliest_notice({}, raised_notice(*view)), *view, mailbox));
                });
        return rp;
      },
      [=](sync_atom) {},
      [=](caf::exit_msg& msg) {
        std::lock_guard<std::mutex> guard{view->mtx};
        view->stopped = true;
        view->cv.notify_all();
        self->quit(msg.reason);
      },
  };
}

}  // namespace

preemption_watcher::preemption_watcher(caf::actor_system& sys, caf::actor service)
    : sys_(sys), service_(std::move(service)), view_(std::make_shared<view>()) {
  actor_ = sys_.spawn(follow_membership, view_, service_);
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
  auto earliest = earliest_notice(notices, raised_notice(*view_));
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

// The service sends its membership events to the watcher's actor before it
// answers this request, so they are in that actor's mailbox before the
// second request, and in the view once it is answered.
void preemption_watcher::catch_up() const {
  caf::scoped_actor self{sys_};
  self->request(service_, service_ask_timeout, snapshot_atom::value, std::string{notice_key_prefix})
      .receive([](std::map<std::string, std::string>&) {}, [](caf::error&) {});
  self->request(actor_, service_ask_timeout, sync_atom::value).receive([] {}, [](caf::error&) {});
}

int preemption_watcher::workers_present() const {
  catch_up();
  std::lock_guard<std::mutex> guard{view_->mtx};
  return static_cast<int>(std::count_if(view_->present.begin(), view_->present.end(),
                                        [](const auto& row) { return row.second; }));
}

void preemption_watcher::raise_notice(const std::string& source, const std::string& reason,
                                      int64_t deadline_unix_ms) {
  wire::Notice notice;
  notice.set_rank(service_sender);
  notice.set_source(source);
  notice.set_reason(reason);
  notice.set_received_unix_ms(unix_now_ms());
  notice.set_deadline_unix_ms(deadline_unix_ms);
  {
    std::lock_guard<std::mutex> guard{view_->mtx};
    view_->raised = notice.SerializeAsString();
  }
  wire::ProtocolMessage msg;
  *msg.mutable_notice() = std::move(notice);
  caf::anon_send(service_, peer_send_atom::value, every_rank, std::string{protocol_channel},
                 msg.SerializeAsString());
}

std::vector<int32_t> preemption_watcher::silent_ranks(uint32_t generation) const {
  std::lock_guard<std::mutex> guard{view_->mtx};
  std::vector<int32_t> out;
  for (auto& [rank, silent_in] : view_->silent)
    if (silent_in == generation) out.push_back(rank);
  return out;
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
