#include "actors/preemption/job_history.hpp"

#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/decision_recorder.hpp"
#include "actors/preemption/job_history_state.hpp"
#include "messages/wire.hpp"
#include "platform/clock.hpp"

namespace lifeboat {

namespace {

constexpr auto sample_interval = std::chrono::seconds{1};
// The service answers from memory; a slower answer is skipped, not awaited.
constexpr auto service_ask_timeout = std::chrono::milliseconds{500};

struct job_history_actor_state {
  job_history_state logic;
  caf::actor service;
  static inline const char* name = "job_history";
};

using job_history_actor = caf::stateful_actor<job_history_actor_state>;

std::string to_json(const google::protobuf::Message& msg) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  // Printing a message we built ourselves cannot fail.
  google::protobuf::util::MessageToJsonString(msg, &json, options);
  return json;
}

std::string render(const job_history_state& logic, history_view view) {
  switch (view) {
    case history_view::rates:
      return to_json(logic.rates());
    case history_view::timeline:
      return to_json(logic.timeline());
    case history_view::checkpoints:
      break;
  }
  return to_json(logic.checkpoints());
}

void read_events(job_history_actor* self) {
  self->request(self->state.service, service_ask_timeout, snapshot_atom::value,
                std::string{decision_event_key_prefix})
      .then(
          [self](const std::map<std::string, std::string>& kv) {
            self->state.logic.on_published(kv);
          },
          [](caf::error&) {});
}

void sample(job_history_actor* self) {
  self->request(self->state.service, service_ask_timeout, status_atom::value)
      .then(
          [self](const wire::ActorStatus& st) {
            std::vector<wire::WorkerInfo> workers{st.workers().begin(), st.workers().end()};
            self->state.logic.on_steps(static_cast<double>(unix_now_ms()), workers);
          },
          [](caf::error&) {});
  read_events(self);
  self->delayed_send(self, sample_interval, tick_atom::value);
}

caf::behavior job_history(job_history_actor* self, caf::actor service) {
  self->state.service = std::move(service);
  self->send(self->state.service, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  self->send(self, tick_atom::value);
  return {
      [self](tick_atom) { sample(self); },
      // A worker that left or was lost may be the last of its generation:
      // its events are read now, before the next generation drops them.
      [self](const membership_event&) { read_events(self); },
      [self](history_atom, int32_t view) {
        return render(self->state.logic, static_cast<history_view>(view));
      },
  };
}

}  // namespace

caf::actor spawn_job_history(caf::actor_system& sys, const caf::actor& service) {
  return sys.spawn(job_history, service);
}

caf::actor spawn_local_history(caf::actor_system& sys) {
  // The recorder is an argument: CAF 0.17 dereferences a null argument tuple
  // when it spawns a function of no arguments (UBSan reports it).
  return sys.spawn(
      [](caf::event_based_actor*, decision_recorder* recorder) -> caf::behavior {
        return {
            [recorder](history_atom, int32_t view) {
              job_history_state local;
              local.on_events(recorder->events());
              return render(local, static_cast<history_view>(view));
            },
        };
      },
      &decision_recorder::process());
}

}  // namespace lifeboat
