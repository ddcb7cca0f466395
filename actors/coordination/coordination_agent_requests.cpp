// The coordination agent's requests: each is sent with an id and completed
// by the service's Reply with that id (or failed at once without a joined
// connection, and all together when the service is lost); blocking gets
// wait in slots until collected.
#include "actors/coordination/coordination_agent_state.hpp"

#include "messages/errors.hpp"

namespace lifeboat::agent_detail {

caf::error reply_error(const wire::Reply& r) {
  if (r.error_code() == 0) return caf::none;
  return make_error(static_cast<errc>(r.error_code()), r.error_message());
}

std::optional<std::string> send_envelope(agent_broker* self, const wire::Envelope& env) {
  auto frame = encode_frame(env);
  if (auto bytes = frame.size() - frame_header_bytes; bytes > max_frame_bytes)
    return "a message of " + std::to_string(bytes) +
           " bytes is over the coordination frame limit of " + std::to_string(max_frame_bytes) +
           " bytes";
  self->state.stream.send(self, self->state.hdl, frame);
  return std::nullopt;
}

void notify(agent_broker* self, const caf::message& msg) {
  if (self->state.subscribers.empty()) self->state.unclaimed.push_back(msg);
  for (auto& sub : self->state.subscribers) self->send(sub, msg);
}

void complete_get(agent_broker* self, uint64_t handle, caf::expected<std::string> result) {
  auto i = self->state.gets.find(handle);
  if (i == self->state.gets.end()) return;
  if (i->second.waiters.empty()) {
    i->second.result = std::move(result);
    return;
  }
  for (auto& rp : i->second.waiters) {
    if (result)
      rp.deliver(*result);
    else
      rp.deliver(result.error());
  }
  self->state.gets.erase(i);
}

void complete(agent_broker* self, pending_request& p, const wire::Reply& r) {
  auto err = reply_error(r);
  if (p.kind == pending_request::get) {
    if (err)
      complete_get(self, p.get_handle, err);
    else
      complete_get(self, p.get_handle, r.value());
    return;
  }
  if (err) {
    p.promise.deliver(err);
    return;
  }
  switch (p.kind) {
    case pending_request::try_get:
      p.promise.deliver(r.found(), r.value());
      return;
    case pending_request::get_prefix: {
      std::map<std::string, std::string> entries;
      for (auto& kv : r.entries()) entries.emplace(kv.key(), kv.value());
      p.promise.deliver(std::move(entries));
      return;
    }
    case pending_request::leave:
      self->state.left = true;
      self->state.joined = false;
      self->state.connected = false;
      self->close(self->state.hdl);
      p.promise.deliver(caf::unit);
      return;
    default:
      p.promise.deliver(caf::unit);
      return;
  }
}

void fail_pending(agent_broker* self, const caf::error& err) {
  auto pending = std::move(self->state.pending);
  self->state.pending.clear();
  for (auto& [id, p] : pending) {
    if (p.kind == pending_request::get)
      complete_get(self, p.get_handle, err);
    else
      p.promise.deliver(err);
  }
}

uint64_t start_request(agent_broker* self, wire::Envelope env, pending_request p) {
  auto& st = self->state;
  auto id = st.next_id++;
  switch (env.body_case()) {
    case wire::Envelope::kInsert:
      env.mutable_insert()->set_id(id);
      break;
    case wire::Envelope::kGet:
      env.mutable_get()->set_id(id);
      break;
    case wire::Envelope::kTryGet:
      env.mutable_try_get()->set_id(id);
      break;
    case wire::Envelope::kGetPrefix:
      env.mutable_get_prefix()->set_id(id);
      break;
    case wire::Envelope::kErasePrefix:
      env.mutable_erase_prefix()->set_id(id);
      break;
    case wire::Envelope::kBarrier:
      env.mutable_barrier()->set_id(id);
      break;
    case wire::Envelope::kLeave:
      env.mutable_leave()->set_id(id);
      break;
    default:
      break;
  }
  caf::error err;
  if (!st.joined)
    err = make_error(errc::unavailable,
                     st.left ? "coordination agent has left" : "coordination agent is not joined");
  else if (auto oversized = send_envelope(self, env))
    err = make_error(errc::invalid_argument, *oversized);
  if (err) {
    if (p.kind == pending_request::get)
      complete_get(self, p.get_handle, err);
    else
      p.promise.deliver(err);
    return id;
  }
  // The reply comes in a later message of this actor: recorded in time.
  st.pending.emplace(id, std::move(p));
  return id;
}

}  // namespace lifeboat::agent_detail
