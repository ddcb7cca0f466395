// coordination_state's key-value store: keys normalised, insert-if-absent,
// blocking and non-blocking gets, prefix reads and erases, and the expiry of
// gets that waited out their timeout.
#include "actors/coordination/coordination_state.hpp"

namespace lifeboat {

namespace {

std::string collapse_slashes(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (char c : in)
    if (c != '/' || out.empty() || out.back() != '/') out.push_back(c);
  return out;
}

}  // namespace

std::string normalize_key(const std::string& key) {
  auto out = collapse_slashes(key);
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string normalize_prefix(const std::string& prefix) { return collapse_slashes(prefix); }

void coordination_state::on_insert(conn_id conn, const wire::KvInsert& req) {
  auto key = normalize_key(req.key());
  if (key.empty()) {
    reply(conn, req.id(), errc::invalid_argument, "empty key");
    return;
  }
  if (!kv_.emplace(key, req.value()).second) {
    reply(conn, req.id(), errc::already_exists, "key " + key);
    return;
  }
  auto [first, last] = getters_.equal_range(key);
  for (auto i = first; i != last; ++i) {
    wire::Envelope out;
    auto* r = out.mutable_reply();
    r->set_id(i->second.id);
    r->set_found(true);
    r->set_value(req.value());
    send_frame(i->second.conn, std::move(out));
  }
  getters_.erase(first, last);
  reply(conn, req.id());
}

void coordination_state::on_get(conn_id conn, const wire::KvGet& req, int64_t now_ms) {
  auto key = normalize_key(req.key());
  auto i = kv_.find(key);
  if (i != kv_.end()) {
    wire::Envelope out;
    auto* r = out.mutable_reply();
    r->set_id(req.id());
    r->set_found(true);
    r->set_value(i->second);
    send_frame(conn, std::move(out));
    return;
  }
  if (req.timeout_ms() <= 0) {
    reply(conn, req.id(), errc::timeout, "key " + key);
    return;
  }
  if (!admit_blocking(conn, req.id(), "get of key " + key)) return;
  auto due = due_after(now_ms, req.timeout_ms());
  getters_.emplace(key, waiter{conn, req.id(), due});
  request_due_.lower_to(due);
}

void coordination_state::on_try_get(conn_id conn, const wire::KvTryGet& req) {
  auto i = kv_.find(normalize_key(req.key()));
  wire::Envelope out;
  auto* r = out.mutable_reply();
  r->set_id(req.id());
  if (i != kv_.end()) {
    r->set_found(true);
    r->set_value(i->second);
  }
  send_frame(conn, std::move(out));
}

void coordination_state::on_get_prefix(conn_id conn, const wire::KvGetPrefix& req) {
  wire::Envelope out;
  auto* r = out.mutable_reply();
  r->set_id(req.id());
  for (auto& [key, value] : snapshot(req.prefix())) {
    auto* kv = r->add_entries();
    kv->set_key(key);
    kv->set_value(value);
  }
  send_frame(conn, std::move(out));
}

void coordination_state::on_erase_prefix(conn_id conn, const wire::KvErasePrefix& req) {
  auto prefix = normalize_prefix(req.prefix());
  auto first = kv_.lower_bound(prefix);
  auto last = first;
  while (last != kv_.end() && last->first.compare(0, prefix.size(), prefix) == 0) ++last;
  kv_.erase(first, last);
  reply(conn, req.id());
}

std::map<std::string, std::string> coordination_state::snapshot(const std::string& prefix) const {
  auto p = normalize_prefix(prefix);
  std::map<std::string, std::string> result;
  for (auto i = kv_.lower_bound(p); i != kv_.end() && i->first.compare(0, p.size(), p) == 0; ++i)
    result.emplace(i->first, i->second);
  return result;
}

void coordination_state::expire_gets(int64_t now_ms) {
  for (auto i = getters_.begin(); i != getters_.end();) {
    if (i->second.deadline_ms <= now_ms) {
      reply(i->second.conn, i->second.id, errc::timeout, "key " + i->first);
      i = getters_.erase(i);
    } else {
      request_due_.lower_to(i->second.deadline_ms);
      ++i;
    }
  }
}

}  // namespace lifeboat
