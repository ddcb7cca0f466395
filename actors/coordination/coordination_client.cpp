#include "actors/coordination/coordination_client.hpp"

#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// Added to a blocking call's own timeout before the client stops waiting for
// the agent: the service answers at the timeout itself, so this only matters
// when the service hangs.
constexpr std::chrono::milliseconds reply_grace{1000};

// How long the destructor waits for a clean leave before it gives up.
constexpr std::chrono::milliseconds leave_timeout{2000};
constexpr const char* agent_gone_message = "coordination agent is gone";

caf::error translate(caf::error err) {
  if (err == caf::sec::request_timeout)
    return make_error(errc::timeout, "no reply from the coordination agent");
  if (err == caf::sec::request_receiver_down)
    return make_error(errc::unavailable, agent_gone_message);
  return err;
}

// One blocking round trip to the agent from any thread. The scoped actor
// lives only for this call, so no live scoped actor outlasts it (a shutdown trap).
// An agent that has ended would never answer (see agent_config::ended); a
// request it had taken before it ended still waits out its timeout.
template <class OnReply, class... Ts>
caf::error ask(caf::actor_system& sys, const caf::actor& agent, const std::atomic<bool>& ended,
               std::chrono::milliseconds timeout, OnReply on_reply, Ts&&... xs) {
  if (ended.load()) return make_error(errc::unavailable, agent_gone_message);
  caf::error result;
  caf::scoped_actor self{sys};
  self->request(agent, timeout, std::forward<Ts>(xs)...).receive(on_reply, [&](caf::error& err) {
    result = translate(std::move(err));
  });
  return result;
}

}  // namespace

template <class OnReply, class... Ts>
caf::error coordination_client::ask_agent(std::chrono::milliseconds timeout, OnReply on_reply,
                                          Ts&&... xs) {
  return ask(sys_, agent_, *cfg_.ended, timeout, std::move(on_reply), std::forward<Ts>(xs)...);
}

caf::expected<std::unique_ptr<coordination_client>> coordination_client::connect(
    caf::actor_system& sys, agent_config cfg) {
  cfg.ended = std::make_shared<std::atomic<bool>>(false);
  auto agent = spawn_coordination_agent(sys, cfg);
  auto err = ask(
      sys, agent, *cfg.ended, cfg.join_timeout + reply_grace, [] {}, join_wait_atom::value);
  if (err) {
    caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
    return err;
  }
  return std::unique_ptr<coordination_client>(
      new coordination_client(sys, std::move(agent), std::move(cfg)));
}

coordination_client::coordination_client(caf::actor_system& sys, caf::actor agent, agent_config cfg)
    : sys_(sys), agent_(std::move(agent)), cfg_(std::move(cfg)) {}

coordination_client::~coordination_client() {
  if (!left_.exchange(true))
    ask_agent(
        leave_timeout, [] {}, leave_atom::value);
  caf::anon_send_exit(agent_, caf::exit_reason::user_shutdown);
}

caf::error coordination_client::insert(const std::string& key, const std::string& value) {
  return ask_agent(
      cfg_.request_timeout, [] {}, insert_atom::value, key, value);
}

caf::expected<std::string> coordination_client::get(const std::string& key,
                                                    std::chrono::milliseconds timeout) {
  auto handle = get_async(key, timeout);
  if (!handle) return handle.error();
  return wait(*handle);
}

caf::expected<get_handle> coordination_client::get_async(const std::string& key,
                                                         std::chrono::milliseconds timeout) {
  get_handle handle{0, timeout};
  auto err = ask_agent(
      cfg_.request_timeout, [&](uint64_t id) { handle.id = id; }, get_start_atom::value, key,
      static_cast<int64_t>(timeout.count()));
  if (err) return err;
  return handle;
}

caf::expected<std::string> coordination_client::wait(const get_handle& handle) {
  std::string value;
  auto err = ask_agent(
      handle.timeout + reply_grace, [&](std::string& x) { value = std::move(x); },
      get_wait_atom::value, handle.id);
  if (err) return err;
  return value;
}

void coordination_client::cancel(const get_handle& handle) {
  caf::anon_send(agent_, cancel_atom::value, handle.id);
}

caf::expected<std::optional<std::string>> coordination_client::try_get(const std::string& key) {
  std::optional<std::string> result;
  auto err = ask_agent(
      cfg_.request_timeout,
      [&](bool found, std::string& value) {
        if (found) result = std::move(value);
      },
      try_get_atom::value, key);
  if (err) return err;
  return result;
}

caf::expected<std::vector<std::pair<std::string, std::string>>> coordination_client::get_prefix(
    const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> result;
  auto err = ask_agent(
      cfg_.request_timeout,
      [&](std::map<std::string, std::string>& entries) {
        result.assign(entries.begin(), entries.end());
      },
      get_prefix_atom::value, prefix);
  if (err) return err;
  return result;
}

caf::error coordination_client::erase_prefix(const std::string& prefix) {
  return ask_agent(
      cfg_.request_timeout, [] {}, erase_prefix_atom::value, prefix);
}

caf::error coordination_client::barrier(const std::string& name, std::chrono::milliseconds timeout,
                                        std::vector<int32_t> participants,
                                        absent_at_timeout absent) {
  return ask_agent(
      timeout + reply_grace, [] {}, barrier_atom::value, name,
      static_cast<int64_t>(timeout.count()), std::move(participants),
      absent == absent_at_timeout::hung);
}

void coordination_client::send(int32_t to_rank, std::string channel, std::string payload) {
  caf::anon_send(agent_, peer_send_atom::value, to_rank, std::move(channel), std::move(payload));
}

void coordination_client::report_error(int32_t code, std::string message) {
  caf::anon_send(agent_, report_atom::value, code, std::move(message));
}

void coordination_client::subscribe(caf::actor subscriber) {
  caf::anon_send(agent_, subscribe_atom::value, std::move(subscriber));
}

caf::error coordination_client::leave() {
  if (left_.exchange(true)) return caf::none;
  return ask_agent(
      cfg_.request_timeout, [] {}, leave_atom::value);
}

}  // namespace lifeboat
