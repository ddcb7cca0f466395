// lifeboat-status [--host H] --port P [--json] [--timeout-ms T]
//
// Fetches GET /status from a worker's or the coordinator's status endpoint
// and prints it as a readable table, or the raw JSON with --json. Exits 1
// with a message on stderr when nothing answers.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <variant>

#include <google/protobuf/util/json_util.h>

#include "messages/errors.hpp"
#include "messages/status.pb.h"
#include "platform/http_client.hpp"

namespace {

constexpr const char* program = "lifeboat-status";
constexpr const char* default_host = "127.0.0.1";
constexpr const char* status_path = "/status";
constexpr long default_timeout_ms = 3000;
constexpr int exit_usage = 2;
constexpr int exit_unreachable = 1;
constexpr int http_ok = 200;
constexpr int name_width = 22;
constexpr int state_width = 14;
constexpr int number_width = 10;

struct options {
  std::string host = default_host;
  std::optional<uint16_t> port;
  bool json = false;
  long timeout_ms = default_timeout_ms;
};

void usage(std::ostream& out) {
  out << "usage: " << program << " [--host H] --port P [--json] [--timeout-ms T]\n"
      << "Prints the status endpoint of a lifeboat worker or coordinator (GET /status).\n";
}

std::optional<long> parse_number(const char* text, long min, long max) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < min || value > max) return std::nullopt;
  return value;
}

// Returns the options, or the exit code to leave with.
std::variant<options, int> parse_args(int argc, char** argv) {
  options out;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      usage(std::cout);
      return 0;
    } else if (arg == "--json") {
      out.json = true;
    } else if (arg == "--host" && has_value) {
      out.host = argv[++i];
    } else if (arg == "--port" && has_value) {
      auto port = parse_number(argv[++i], 1, 65535);
      if (!port) {
        std::cerr << program << ": --port wants a number in 1..65535, got '" << argv[i] << "'\n";
        return exit_usage;
      }
      out.port = static_cast<uint16_t>(*port);
    } else if (arg == "--timeout-ms" && has_value) {
      auto ms = parse_number(argv[++i], 1, 600000);
      if (!ms) {
        std::cerr << program << ": --timeout-ms wants a positive number, got '" << argv[i] << "'\n";
        return exit_usage;
      }
      out.timeout_ms = *ms;
    } else {
      std::cerr << program << ": unexpected argument '" << arg << "'\n";
      usage(std::cerr);
      return exit_usage;
    }
  }
  if (!out.port) {
    std::cerr << program << ": --port is required\n";
    usage(std::cerr);
    return exit_usage;
  }
  return out;
}

std::string human_bytes(int64_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(unit == 0 ? 0 : 1) << value << " " << units[unit];
  return out.str();
}

void print_table(const lifeboat::wire::Status& s) {
  // Rank -1 is the coordinator (the launcher or lifeboat-coordinator), no worker.
  if (s.rank() < 0)
    std::cout << "coordinator of " << s.world_size() << " workers";
  else
    std::cout << "rank " << s.rank() << " of " << s.world_size();
  std::cout << "   step " << s.step() << "   phase " << s.phase() << "   "
            << (s.healthy() ? "healthy" : "UNHEALTHY") << "\n";
  const auto& ckpt = s.last_checkpoint();
  std::cout << "last checkpoint: ";
  if (ckpt.path().empty()) {
    std::cout << "none\n";
  } else {
    std::cout << "step " << ckpt.step() << ", " << human_bytes(ckpt.bytes()) << ", " << std::fixed
              << std::setprecision(2) << ckpt.seconds() << " s, " << ckpt.path() << "\n";
  }
  std::cout << "\n"
            << std::left << std::setw(name_width) << "ACTOR" << std::setw(state_width) << "STATE"
            << "MAILBOX\n";
  for (const auto& a : s.actors()) {
    std::cout << std::left << std::setw(name_width) << a.name() << std::setw(state_width)
              << a.state() << a.mailbox() << "\n";
  }
  if (s.workers_size() == 0) return;
  std::cout << "\n"
            << std::left << std::setw(number_width) << "WORKER" << std::setw(number_width) << "STEP"
            << std::setw(name_width) << "LAST HEARTBEAT" << std::setw(state_width) << "STATE"
            << "PHASE\n";
  for (const auto& w : s.workers()) {
    std::cout << std::left << std::setw(number_width) << w.rank() << std::setw(number_width)
              << w.step() << std::setw(name_width)
              << (std::to_string(w.last_heartbeat_ms()) + " ms ago") << std::setw(state_width)
              << w.state() << w.phase() << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = parse_args(argc, argv);
  if (auto* code = std::get_if<int>(&parsed)) return *code;
  const auto& opts = std::get<options>(parsed);
  auto url = "http://" + opts.host + ":" + std::to_string(*opts.port) + status_path;
  lifeboat::http_request request;
  request.host = opts.host;
  request.port = *opts.port;
  request.target = status_path;
  auto response = lifeboat::http_send(request, std::chrono::milliseconds{opts.timeout_ms});
  if (!response) {
    std::cerr << program << ": cannot reach " << url << ": " << lifeboat::describe(response.error())
              << "\n";
    return exit_unreachable;
  }
  if (response->status != http_ok) {
    std::cerr << program << ": " << url << " answered HTTP " << response->status << "\n";
    return exit_unreachable;
  }
  if (opts.json) {
    std::cout << response->body
              << (response->body.empty() || response->body.back() != '\n' ? "\n" : "");
    return EXIT_SUCCESS;
  }
  lifeboat::wire::Status status;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(response->body, &status, parse).ok()) {
    std::cerr << program << ": " << url << " did not answer a status document\n";
    return exit_unreachable;
  }
  print_table(status);
  return EXIT_SUCCESS;
}
