#include "actors/status/status_endpoint.hpp"

#include <algorithm>
#include <functional>
#include <memory>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/status/history_routes.hpp"
#include "actors/status/status_metrics.hpp"
#include "actors/status/status_page.hpp"
#include "messages/address.hpp"
#include "messages/log.hpp"

namespace lifeboat {

namespace {

constexpr const char* json_type = "application/json";
constexpr const char* html_type = "text/html; charset=utf-8";
constexpr const char* text_type = "text/plain; charset=utf-8";
constexpr const char* allowed_method = "GET";
constexpr const char* running_state = "running";
constexpr const char* requests_metric = "status_requests_total";
constexpr const char* bad_requests_metric = "status_bad_requests_total";
constexpr const char* read_timeouts_metric = "status_read_timeouts_total";
constexpr const char* rejected_metric = "status_rejected_connections_total";

// Turns every 64-bit integer field of `type` and of its nested types into a
// double: proto3's JSON mapping prints 64-bit integers as strings, doubles as
// numbers.
void int64_fields_to_double(google::protobuf::DescriptorProto& type) {
  for (auto& field : *type.mutable_field()) {
    if (field.type() == google::protobuf::FieldDescriptorProto::TYPE_INT64 ||
        field.type() == google::protobuf::FieldDescriptorProto::TYPE_UINT64)
      field.set_type(google::protobuf::FieldDescriptorProto::TYPE_DOUBLE);
  }
  for (auto& nested : *type.mutable_nested_type()) int64_fields_to_double(nested);
}

// An empty Status whose 64-bit integers are doubles. It lives in its own
// pool, built once from status.proto's own descriptor, so it always has the
// same fields, in the same order, as wire::Status.
const google::protobuf::Message& numeric_status_prototype() {
  static const google::protobuf::Message* prototype = [] {
    google::protobuf::FileDescriptorProto file;
    wire::Status::descriptor()->file()->CopyTo(&file);
    for (auto& type : *file.mutable_message_type()) int64_fields_to_double(type);
    static google::protobuf::DescriptorPool pool;
    static google::protobuf::DynamicMessageFactory factory{&pool};
    const auto* built = pool.BuildFile(file);
    return factory.GetPrototype(built->FindMessageTypeByName(wire::Status::descriptor()->name()));
  }();
  return *prototype;
}

std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

std::string unhealthy_actors(const std::vector<wire::ActorStatus>& answers) {
  std::string out;
  for (const auto& answer : answers) {
    if (status_endpoint_state::healthy({answer})) continue;
    out += " " + answer.name() + "=" + answer.state();
  }
  return out;
}

}  // namespace

std::string status_to_json(const wire::Status& status) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  // Through JSON into the numeric twin, whose parser takes the quoted
  // integers as doubles (exact up to 2^53), then out again as numbers.
  // Printing a message we built, and parsing what protobuf printed, cannot fail.
  std::string quoted;
  google::protobuf::util::MessageToJsonString(status, &quoted, options);
  std::unique_ptr<google::protobuf::Message> numeric{numeric_status_prototype().New()};
  google::protobuf::util::JsonStringToMessage(quoted, numeric.get());
  std::string json;
  google::protobuf::util::MessageToJsonString(*numeric, &json, options);
  return json;
}

status_endpoint_state::status_endpoint_state(int rank, int world_size)
    : rank_(rank), world_size_(world_size) {}

void status_endpoint_state::observe(const caf::actor_addr& addr) {
  if (!addr || std::find(observed_.begin(), observed_.end(), addr) != observed_.end()) return;
  observed_.push_back(addr);
}

void status_endpoint_state::learn_name(const caf::actor_addr& addr, const std::string& name) {
  names_[addr.id()] = name;
}

wire::ActorStatus status_endpoint_state::missing_answer(const caf::actor_addr& addr,
                                                        const char* state) const {
  wire::ActorStatus out;
  auto i = names_.find(addr.id());
  out.set_name(i != names_.end() ? i->second : "actor#" + std::to_string(addr.id()));
  out.set_state(state);
  return out;
}

status_endpoint_state::route status_endpoint_state::classify(const std::string& method,
                                                             const std::string& target) {
  if (method != allowed_method) return route::method_not_allowed;
  auto path = path_of(target);
  if (path == "/status") return route::status;
  if (path == "/metrics") return route::metrics;
  if (path == "/healthz") return route::healthz;
  if (path == "/") return route::page;
  return route::not_found;
}

bool status_endpoint_state::needs_answers(route r) {
  return r == route::status || r == route::metrics || r == route::healthz;
}

wire::Status status_endpoint_state::merge(const std::vector<wire::ActorStatus>& answers) const {
  wire::Status out;
  out.set_rank(rank_);
  out.set_world_size(world_size_);
  out.set_phase(default_phase);
  out.mutable_last_checkpoint();
  out.mutable_restored();
  bool have_step = false;
  bool have_phase = false;
  bool have_checkpoint = false;
  bool have_workers = false;
  for (const auto& answer : answers) {
    if (answer.has_step() && !have_step) {
      out.set_step(answer.step());
      have_step = true;
    }
    if (answer.has_phase() && !have_phase) {
      out.set_phase(answer.phase());
      have_phase = true;
    }
    // A worker's checkpoint writer answers before a service the worker
    // hosts (worker_actors observes it first): a worker shows its own
    // shard's checkpoint, a coordinator the job's (the service's answer).
    if (answer.has_last_checkpoint() && !have_checkpoint) {
      *out.mutable_last_checkpoint() = answer.last_checkpoint();
      have_checkpoint = true;
    }
    if (!answer.restored().path().empty() && out.restored().path().empty())
      *out.mutable_restored() = answer.restored();
    if (answer.workers_size() > 0 && !have_workers) {
      *out.mutable_workers() = answer.workers();
      have_workers = true;
    }
    if (answer.has_preemption() && !out.has_preemption())
      *out.mutable_preemption() = answer.preemption();
    auto* summary = out.add_actors();
    summary->set_name(answer.name());
    summary->set_state(answer.state());
    summary->set_mailbox(answer.mailbox());
  }
  out.set_healthy(healthy(answers));
  return out;
}

bool status_endpoint_state::healthy(const std::vector<wire::ActorStatus>& answers) {
  return std::none_of(answers.begin(), answers.end(), [](const wire::ActorStatus& answer) {
    const auto& state = answer.state();
    return state == unresponsive_state || state == down_state || state == error_state;
  });
}

status_http_reply status_endpoint_state::render(
    route r, const std::vector<wire::ActorStatus>& answers) const {
  switch (r) {
    case route::status:
      return {200, json_type, status_to_json(merge(answers)), {}};
    case route::metrics:
      return {200, prometheus_content_type, render_metrics(merge(answers), answers), {}};
    case route::healthz:
      if (healthy(answers)) return {200, text_type, "ok\n", {}};
      return {503, text_type, "unhealthy:" + unhealthy_actors(answers) + "\n", {}};
    case route::page:
      return {200, html_type, status_page_html(), {}};
    case route::method_not_allowed:
      return {405, text_type, "only GET is allowed\n", {{"Allow", allowed_method}}};
    case route::not_found:
      break;
  }
  return {404, text_type, "not found; try /, /status, /metrics or /healthz\n", {}};
}

wire::ActorStatus status_endpoint_state::own_status(int64_t mailbox,
                                                    const status_http_stats& stats) const {
  wire::ActorStatus out;
  out.set_name(status_endpoint_name);
  out.set_state(running_state);
  out.set_mailbox(mailbox);
  auto& metrics = *out.mutable_metrics();
  metrics[requests_metric] = static_cast<double>(stats.requests);
  metrics[bad_requests_metric] = static_cast<double>(stats.bad_requests);
  metrics[read_timeouts_metric] = static_cast<double>(stats.timeouts);
  metrics[rejected_metric] = static_cast<double>(stats.rejected_connections);
  return out;
}

namespace {

struct endpoint_actor_state {
  std::unique_ptr<status_endpoint_state> logic;
  std::chrono::milliseconds ask_timeout{status_endpoint_config::default_ask_timeout};
  // Destroyed with the state when the actor terminates, which stops and
  // joins the HTTP thread; it holds only a weak reference to this actor.
  std::shared_ptr<status_http_server> server;
  caf::actor history;
  static inline const char* name = status_endpoint_name;
};

using endpoint_pointer = status_endpoint_actor::stateful_pointer<endpoint_actor_state>;

wire::ActorStatus own_answer(endpoint_pointer self) {
  return self->state.logic->own_status(static_cast<int64_t>(self->mailbox().size()),
                                       self->state.server->stats());
}

// Asks every observed actor for its status at once and calls `done` with all
// answers (stand-ins for the silent ones) plus the endpoint's own, after the
// last answer or ask_timeout, whichever comes first.
void gather(endpoint_pointer self, std::function<void(std::vector<wire::ActorStatus>)> done) {
  struct round {
    std::vector<wire::ActorStatus> answers;
    std::size_t outstanding = 0;
    std::function<void(std::vector<wire::ActorStatus>)> done;
  };
  auto& logic = *self->state.logic;
  auto targets = logic.observed();
  auto shared = std::make_shared<round>();
  shared->answers.resize(targets.size());
  shared->outstanding = targets.size() + 1;
  shared->done = std::move(done);
  auto settle = [self, shared] {
    if (--shared->outstanding > 0) return;
    shared->answers.push_back(own_answer(self));
    shared->done(std::move(shared->answers));
  };
  for (std::size_t i = 0; i < targets.size(); ++i) {
    auto addr = targets[i];
    auto target = caf::actor_cast<caf::actor>(addr);
    if (!target) {
      shared->answers[i] = logic.missing_answer(addr, status_endpoint_state::down_state);
      settle();
      continue;
    }
    self->request(target, self->state.ask_timeout, status_atom::value)
        .then(
            [self, shared, settle, addr, i](wire::ActorStatus& answer) {
              self->state.logic->learn_name(addr, answer.name());
              shared->answers[i] = std::move(answer);
              settle();
            },
            [self, shared, settle, addr, i](caf::error& err) {
              auto state = err == caf::sec::request_receiver_down
                               ? status_endpoint_state::down_state
                               : status_endpoint_state::unresponsive_state;
              shared->answers[i] = self->state.logic->missing_answer(addr, state);
              settle();
            });
  }
  settle();
}

// Answers a history route with what the history says (history_routes.hpp).
void ask_history(endpoint_pointer self, uint64_t id, history_view view) {
  auto complete = [self, id](status_http_reply reply) {
    self->state.server->complete(id, std::move(reply));
  };
  if (!self->state.history) return complete(no_history_reply());
  self->request(self->state.history, history_ask_timeout, history_atom::value,
                static_cast<int32_t>(view))
      .then([complete](std::string& json) { complete(history_reply(json)); },
            [complete](caf::error& err) { complete(history_reply(err)); });
}

status_endpoint_actor::behavior_type endpoint_behavior(endpoint_pointer self,
                                                       status_endpoint_config cfg,
                                                       std::vector<caf::actor_addr> observed,
                                                       std::shared_ptr<status_http_server> server) {
  self->state.logic = std::make_unique<status_endpoint_state>(cfg.rank, cfg.world_size);
  for (const auto& addr : observed) self->state.logic->observe(addr);
  self->state.ask_timeout = cfg.ask_timeout;
  self->state.server = std::move(server);
  self->state.history = cfg.history;
  if (cfg.history) self->link_to(cfg.history);
  // The I/O thread reaches this actor through a weak address only, so the
  // server never keeps the actor (or the actor system) alive.
  self->state.server->serve([addr = self->address()](const status_http_request& req, uint64_t id) {
    auto endpoint = caf::actor_cast<status_endpoint_actor>(addr);
    if (!endpoint) return false;
    caf::anon_send(endpoint, http_request_atom::value, id, req.method, req.target);
    return true;
  });
  return {
      [self](http_request_atom, uint64_t id, const std::string& method, const std::string& target) {
        if (auto view = history_view_of(method, target)) return ask_history(self, id, *view);
        auto r = status_endpoint_state::classify(method, target);
        if (!status_endpoint_state::needs_answers(r)) {
          self->state.server->complete(id, self->state.logic->render(r, {}));
          return;
        }
        gather(self, [self, id, r](std::vector<wire::ActorStatus> answers) {
          self->state.server->complete(id, self->state.logic->render(r, answers));
        });
      },
      [self](status_atom) { return own_answer(self); },
      [self](caf::add_atom, const caf::actor& target) {
        self->state.logic->observe(target.address());
      },
  };
}

}  // namespace

caf::expected<std::pair<status_endpoint_actor, uint16_t>> spawn_status_endpoint(
    caf::actor_system& sys, status_endpoint_config cfg) {
  auto server = status_http_server::bind(cfg.port, cfg.limits, cfg.host);
  if (!server) return std::move(server.error());
  auto port = (*server)->port();
  auto cfg_host = cfg.host;
  std::vector<caf::actor_addr> observed;
  for (const auto& target : cfg.observed) observed.push_back(target.address());
  cfg.observed.clear();
  auto endpoint = sys.spawn(endpoint_behavior, std::move(cfg), std::move(observed),
                            std::shared_ptr<status_http_server>{std::move(*server)});
  log(log_level::info, status_endpoint_component, "status endpoint listening on ",
      host_port(cfg_host, port));
  return std::make_pair(std::move(endpoint), port);
}

caf::expected<std::pair<status_endpoint_actor, uint16_t>> spawn_coordinator_status_endpoint(
    caf::actor_system& sys, const caf::actor& service, const caf::actor& watcher,
    const caf::actor& history, int world_size, uint16_t port) {
  status_endpoint_config cfg;
  cfg.rank = coordinator_status_rank;
  cfg.world_size = world_size;
  cfg.port = port;
  cfg.observed.push_back(service);
  if (watcher) cfg.observed.push_back(watcher);
  cfg.history = history;
  auto spawned = spawn_status_endpoint(sys, std::move(cfg));
  if (!spawned) caf::anon_send_exit(history, caf::exit_reason::user_shutdown);
  return spawned;
}

void stop_status_endpoint(status_endpoint_actor& endpoint) {
  if (!endpoint) return;
  caf::anon_send_exit(endpoint, caf::exit_reason::user_shutdown);
  endpoint = nullptr;
}

}  // namespace lifeboat
