// lifeboat-metadata-mock: one loopback HTTP server that speaks the metadata
// protocols of GCE, AWS (IMDSv2) and Azure (Scheduled Events) closely enough to
// test notice sources and platform detection end to end.
//
// Usage: lifeboat-metadata-mock [--port P] [--gce-maintenance-event V]
//          [--gce-preempted V] [--aws-instance-action JSON] [--aws-rebalance JSON]
//          [--azure-events JSON-ARRAY] [--delay-ms N] [--garbage]
//   --port P                  listen on 127.0.0.1:P (default 0: any free port)
//   --gce-maintenance-event   initial instance/maintenance-event (default NONE)
//   --gce-preempted           initial instance/preempted (default FALSE)
//   --aws-instance-action     initial spot/instance-action body (default: none, 404)
//   --aws-rebalance           initial events/recommendations/rebalance body (default: 404)
//   --azure-events            initial "Events" array of Scheduled Events (default [])
//   --delay-ms N              wait N ms before answering any metadata request
//   --garbage                 answer metadata requests with bytes that are not HTTP
// When ready it prints "listening on PORT" (one line, flushed) on stdout. It runs
// until killed (SIGTERM).
//
// Protocols (as the platforms document them):
//   GCE   GET /computeMetadata/v1/instance/{maintenance-event,preempted,hostname}
//         needs `Metadata-Flavor: Google` (else 403); replies carry it and an ETag.
//         `?wait_for_change=true&last_etag=E[&timeout_sec=N]` hangs while E is the
//         current ETag, up to N s (default 60), then answers the current value.
//   AWS   PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds (1..21600,
//         else 400) returns a token; GET /latest/meta-data/spot/instance-action and
//         .../events/recommendations/rebalance need X-aws-ec2-metadata-token (else
//         401) and answer 404 while unset.
//   Azure GET /metadata/scheduledevents?api-version=... and /metadata/instance?...
//         need `Metadata: true` (else 400). POST /metadata/scheduledevents with
//         {"StartRequests": [{"EventId": "..."}]} records the acknowledged ids.
//
// Control API (no headers needed; replies 200 "ok" unless stated):
//   POST /control/gce/maintenance-event  body: new value; new ETag, wakes hanging GETs
//   POST /control/gce/preempted          body: new value (e.g. TRUE)
//   POST /control/gce/unavailable        body: N; the next N GCE requests get 503
//   POST /control/gce/flavor             body: 0 drops `Metadata-Flavor` from replies, 1 restores
//   POST /control/aws/instance-action    body: JSON, or empty for 404 again
//   POST /control/aws/rebalance          body: JSON, or empty for 404 again
//   POST /control/aws/expire-tokens      tokens issued so far are refused (401)
//   POST /control/azure/events           body: the "Events" JSON array
//   POST /control/delay-ms               body: N, delay of every metadata reply (0: none)
//   POST /control/garbage                body: 1 or 0
//   GET  /control/azure/acknowledged     acknowledged EventIds, one per line
//   GET  /control/stats                  lines "name value": gce_requests, gce_hanging
//                                        (hanging GETs waiting now), aws_token_puts,
//                                        aws_unauthorized, azure_requests
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "messages/platform.pb.h"
#include "platform/json.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using request_t = http::request<http::string_body>;
using response_t = http::response<http::string_body>;

constexpr char kGcePrefix[] = "/computeMetadata/v1/";
constexpr char kControlPrefix[] = "/control/";
constexpr char kGarbage[] = "\x01\x7f not http at all \xff\r\n\r\n";
constexpr char kAwsTokenTtlHeader[] = "X-aws-ec2-metadata-token-ttl-seconds";
constexpr char kAwsTokenHeader[] = "X-aws-ec2-metadata-token";
constexpr int kAwsMaxTtl = 21600;
constexpr std::chrono::seconds kDefaultHangingWait{60};

struct gce_key {
  std::string value;
  uint64_t version = 1;
  std::string etag() const { return "etag-" + std::to_string(version); }
};

struct mock_state {
  std::mutex mutex;
  std::condition_variable gce_changed;
  std::map<std::string, gce_key> gce{{"instance/maintenance-event", {"NONE"}},
                                     {"instance/preempted", {"FALSE"}},
                                     {"instance/hostname", {"mock-vm.internal"}}};
  int gce_unavailable = 0;
  bool gce_flavor = true;
  std::string aws_instance_action;
  std::string aws_rebalance;
  std::set<std::string> aws_tokens;
  uint64_t aws_token_counter = 0;
  std::string azure_events = "[]";
  int64_t azure_incarnation = 1;
  std::vector<std::string> azure_acknowledged;
  int delay_ms = 0;
  bool garbage = false;
  std::map<std::string, int64_t> stats{{"gce_requests", 0},
                                       {"gce_hanging", 0},
                                       {"aws_token_puts", 0},
                                       {"aws_unauthorized", 0},
                                       {"azure_requests", 0}};
};

response_t reply(const request_t& req, http::status status, std::string body) {
  response_t res{status, req.version()};
  res.set(http::field::content_type, "text/plain");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// The value of `key` in the query string of `target`, or "".
std::string query_param(const std::string& target, const std::string& key) {
  auto query = target.find('?');
  if (query == std::string::npos) return "";
  auto params = target.substr(query + 1);
  size_t start = 0;
  while (start <= params.size()) {
    auto end = params.find('&', start);
    auto item = params.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto eq = item.find('=');
    if (item.substr(0, eq) == key) return eq == std::string::npos ? "" : item.substr(eq + 1);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

response_t handle_gce(const request_t& req, mock_state& state, std::unique_lock<std::mutex>& lock) {
  ++state.stats["gce_requests"];
  if (req["Metadata-Flavor"] != "Google")
    return reply(req, http::status::forbidden, "Missing Metadata-Flavor:Google header.\n");
  if (state.gce_unavailable > 0) {
    --state.gce_unavailable;
    return reply(req, http::status::service_unavailable, "try again\n");
  }
  std::string target{req.target()};
  auto key = path_of(target).substr(sizeof(kGcePrefix) - 1);
  auto i = state.gce.find(key);
  if (i == state.gce.end()) return reply(req, http::status::not_found, "not found\n");
  if (query_param(target, "wait_for_change") == "true") {
    auto last = query_param(target, "last_etag");
    auto seconds = query_param(target, "timeout_sec");
    auto wait =
        seconds.empty() ? kDefaultHangingWait : std::chrono::seconds{std::atoi(seconds.c_str())};
    ++state.stats["gce_hanging"];
    state.gce_changed.wait_for(lock, wait, [&] { return state.gce[key].etag() != last; });
    --state.stats["gce_hanging"];
  }
  auto& entry = state.gce[key];
  auto res = reply(req, http::status::ok, entry.value);
  if (state.gce_flavor) res.set("Metadata-Flavor", "Google");
  res.set(http::field::etag, entry.etag());
  return res;
}

response_t handle_aws(const request_t& req, mock_state& state) {
  auto path = path_of(std::string{req.target()});
  if (req.method() == http::verb::put && path == "/latest/api/token") {
    ++state.stats["aws_token_puts"];
    auto ttl = std::atoi(std::string{req[kAwsTokenTtlHeader]}.c_str());
    if (ttl < 1 || ttl > kAwsMaxTtl) return reply(req, http::status::bad_request, "bad ttl\n");
    auto token = "token-" + std::to_string(++state.aws_token_counter);
    state.aws_tokens.insert(token);
    return reply(req, http::status::ok, token);
  }
  if (state.aws_tokens.count(std::string{req[kAwsTokenHeader]}) == 0) {
    ++state.stats["aws_unauthorized"];
    return reply(req, http::status::unauthorized, "unauthorized\n");
  }
  const std::string* body = nullptr;
  if (path == "/latest/meta-data/spot/instance-action") body = &state.aws_instance_action;
  if (path == "/latest/meta-data/events/recommendations/rebalance") body = &state.aws_rebalance;
  if (body == nullptr || body->empty()) return reply(req, http::status::not_found, "not found\n");
  return reply(req, http::status::ok, *body);
}

response_t handle_azure(const request_t& req, mock_state& state) {
  ++state.stats["azure_requests"];
  if (req["Metadata"] != "true")
    return reply(req, http::status::bad_request, "{\"error\": \"Bad request. Metadata header\"}");
  auto path = path_of(std::string{req.target()});
  if (path == "/metadata/instance")
    return reply(req, http::status::ok, "{\"compute\": {\"name\": \"mock-vm\"}}");
  if (path != "/metadata/scheduledevents") return reply(req, http::status::not_found, "{}");
  if (req.method() == http::verb::post) {
    lifeboat::wire::AzureStartRequests starts;
    if (lifeboat::parse_json(req.body(), starts, "StartRequests"))
      return reply(req, http::status::bad_request, "{\"error\": \"bad StartRequests\"}");
    for (auto& start : starts.start_requests())
      state.azure_acknowledged.push_back(start.event_id());
    return reply(req, http::status::ok, "");
  }
  return reply(req, http::status::ok,
               "{\"DocumentIncarnation\": " + std::to_string(state.azure_incarnation) +
                   ", \"Events\": " + state.azure_events + "}");
}

response_t handle_control(const request_t& req, mock_state& state) {
  auto path = path_of(std::string{req.target()}).substr(sizeof(kControlPrefix) - 1);
  auto& body = req.body();
  if (req.method() == http::verb::get && path == "azure/acknowledged") {
    std::string out;
    for (auto& id : state.azure_acknowledged) out += id + "\n";
    return reply(req, http::status::ok, out);
  }
  if (req.method() == http::verb::get && path == "stats") {
    std::string out;
    for (auto& [name, value] : state.stats) out += name + " " + std::to_string(value) + "\n";
    return reply(req, http::status::ok, out);
  }
  if (req.method() != http::verb::post) return reply(req, http::status::not_found, "unknown\n");
  if (path == "gce/maintenance-event" || path == "gce/preempted") {
    auto& entry = state.gce["instance/" + path.substr(4)];
    entry.value = body;
    ++entry.version;
    state.gce_changed.notify_all();
  } else if (path == "gce/unavailable") {
    state.gce_unavailable = std::atoi(body.c_str());
  } else if (path == "gce/flavor") {
    state.gce_flavor = body != "0";
  } else if (path == "aws/instance-action") {
    state.aws_instance_action = body;
  } else if (path == "aws/rebalance") {
    state.aws_rebalance = body;
  } else if (path == "aws/expire-tokens") {
    state.aws_tokens.clear();
  } else if (path == "azure/events") {
    state.azure_events = body;
    ++state.azure_incarnation;
  } else if (path == "delay-ms") {
    state.delay_ms = std::atoi(body.c_str());
  } else if (path == "garbage") {
    state.garbage = body == "1";
  } else {
    return reply(req, http::status::not_found, "unknown control " + path + "\n");
  }
  return reply(req, http::status::ok, "ok\n");
}

response_t handle_metadata(const request_t& req, mock_state& state,
                           std::unique_lock<std::mutex>& lock) {
  std::string target{req.target()};
  if (target.rfind(kGcePrefix, 0) == 0) return handle_gce(req, state, lock);
  if (target.rfind("/latest/", 0) == 0) return handle_aws(req, state);
  if (target.rfind("/metadata/", 0) == 0) return handle_azure(req, state);
  return reply(req, http::status::not_found, "not found\n");
}

void serve(tcp::socket socket, mock_state& state) {
  beast::flat_buffer buffer;
  beast::error_code ec;
  for (;;) {
    request_t req;
    http::read(socket, buffer, req, ec);
    if (ec) break;
    response_t res;
    if (std::string{req.target()}.rfind(kControlPrefix, 0) == 0) {
      std::lock_guard<std::mutex> guard{state.mutex};
      res = handle_control(req, state);
    } else {
      std::unique_lock<std::mutex> lock{state.mutex};
      auto delay = std::chrono::milliseconds{state.delay_ms};
      bool garbage = state.garbage;
      if (delay.count() > 0) {
        // Slow mode: hold this connection only, the server keeps answering others.
        lock.unlock();
        std::this_thread::sleep_for(delay);
        lock.lock();
      }
      if (garbage) {
        lock.unlock();
        asio::write(socket, asio::buffer(kGarbage, sizeof(kGarbage) - 1), ec);
        break;
      }
      res = handle_metadata(req, state, lock);
    }
    http::write(socket, res, ec);
    if (ec || !res.keep_alive()) break;
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
}

int usage(const char* why) {
  std::cerr << "lifeboat-metadata-mock: " << why
            << "\nusage: lifeboat-metadata-mock [--port P] [--gce-maintenance-event V] "
               "[--gce-preempted V] [--aws-instance-action JSON] [--aws-rebalance JSON] "
               "[--azure-events JSON] [--delay-ms N] [--garbage]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  mock_state state;
  unsigned short port = 0;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--garbage") {
      state.garbage = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("missing value for " + flag).c_str());
    std::string value = argv[++i];
    if (flag == "--port")
      port = static_cast<unsigned short>(std::atoi(value.c_str()));
    else if (flag == "--gce-maintenance-event")
      state.gce["instance/maintenance-event"].value = value;
    else if (flag == "--gce-preempted")
      state.gce["instance/preempted"].value = value;
    else if (flag == "--aws-instance-action")
      state.aws_instance_action = value;
    else if (flag == "--aws-rebalance")
      state.aws_rebalance = value;
    else if (flag == "--azure-events")
      state.azure_events = value;
    else if (flag == "--delay-ms")
      state.delay_ms = std::atoi(value.c_str());
    else
      return usage(("unknown flag " + flag).c_str());
  }
  asio::io_context io;
  beast::error_code ec;
  tcp::acceptor acceptor{io};
  tcp::endpoint where{asio::ip::make_address("127.0.0.1"), port};
  acceptor.open(where.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(where, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::cerr << "lifeboat-metadata-mock: cannot listen on 127.0.0.1:" << port << ": "
              << ec.message() << "\n";
    return 1;
  }
  std::cout << "listening on " << acceptor.local_endpoint().port() << std::endl;
  for (;;) {
    tcp::socket socket{io};
    acceptor.accept(socket, ec);
    if (ec) continue;
    // One thread per connection: hanging GETs and slow replies block only their own.
    std::thread{[s = std::move(socket), &state]() mutable { serve(std::move(s), state); }}.detach();
  }
}
