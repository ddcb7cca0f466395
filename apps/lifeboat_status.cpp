// lifeboat-status [--host H] --port P [--json] [--timeout-ms T]
//
// Fetches GET /status from a worker's or the coordinator's status endpoint
// and prints it as a readable table, or the raw JSON with --json. Exits 1
// with a message on stderr when nothing answers.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "apps/command_line.hpp"
#include "messages/errors.hpp"
#include "messages/status.pb.h"
#include "platform/http_client.hpp"
#include "platform/text_parse.hpp"

namespace {

constexpr const char* program = "lifeboat-status";
constexpr const char* default_host = "127.0.0.1";
constexpr const char* status_path = "/status";
constexpr long default_timeout_ms = 3000;
constexpr long max_timeout_ms = 600000;
constexpr int exit_unreachable = 1;
constexpr int http_ok = 200;
// Between two columns of a table, at least.
constexpr size_t column_gap = 2;

constexpr const char* synopsis =
    "usage: lifeboat-status [--host H] --port P [--json] [--timeout-ms T]\n";
constexpr const char* explanation =
    "Prints the status endpoint of a lifeboat worker or coordinator (GET /status).";

struct options {
  std::string host = default_host;
  uint16_t port = 0;
  bool json = false;
  long timeout_ms = default_timeout_ms;
};

// Returns the options, or the exit code to leave with.
std::variant<options, int> parse_args(int argc, char** argv) {
  options out;
  CLI::App app{"", program};
  lifeboat::apps::configure_app(app, synopsis, explanation);
  app.add_option("--host", out.host, "the endpoint's address")
      ->type_name("H")
      ->capture_default_str();
  lifeboat::apps::add_integer(app, "--port", out.port, 1, 65535, "the endpoint's port")
      ->type_name("P")
      ->required();
  app.add_flag("--json", out.json, "print the raw JSON");
  lifeboat::apps::add_integer(app, "--timeout-ms", out.timeout_ms, 1, max_timeout_ms,
                              "how long to wait for the answer")
      ->type_name("T")
      ->capture_default_str();
  if (auto code = lifeboat::apps::parse_command_line(app, argc, argv)) return *code;
  out.host = lifeboat::without_brackets(out.host);
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

// Rows of cells, the header first.
using table = std::vector<std::vector<std::string>>;

// Each column as wide as its widest cell and column_gap more, the last one
// unpadded. Fixed widths ran a long state ("notice from the coordinator",
// "waiting for workers to exit") into the next column.
void print_table(const table& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  for (const auto& row : rows) {
    for (size_t i = 0; i + 1 < row.size(); ++i)
      std::cout << std::left << std::setw(static_cast<int>(widths[i] + column_gap)) << row[i];
    if (!row.empty()) std::cout << row.back();
    std::cout << "\n";
  }
}

// A step time as the workers table shows it; "-" before the first sample.
std::string step_time(double seconds) {
  if (seconds <= 0) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(3) << seconds << " s";
  return out.str();
}

void print_status(const lifeboat::wire::Status& s) {
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
    std::cout << "step " << ckpt.step() << ", " << human_bytes(ckpt.bytes()) << ", ";
    // A coordinator knows no seconds of the checkpoint the workers restored.
    if (ckpt.seconds() > 0)
      std::cout << std::fixed << std::setprecision(2) << ckpt.seconds() << " s, ";
    if (ckpt.tiers_size() > 0) {
      std::cout << "in ";
      for (int i = 0; i < ckpt.tiers_size(); ++i)
        std::cout << (i == 0 ? "" : " + ") << ckpt.tiers(i).name();
      std::cout << ", ";
    }
    std::cout << ckpt.path() << "\n";
  }
  // A coordinator's earliest notice, as the launcher prints it: the
  // reference's PreemptionWatcher.preemption_message, for an operator.
  if (s.has_preemption() && !s.preemption().message().empty())
    std::cout << "preemption: " << s.preemption().message() << "\n";
  const auto& restored = s.restored();
  if (!restored.path().empty()) {
    std::cout << "restored at start: step " << restored.step() << ", "
              << human_bytes(restored.bytes()) << ", from";
    for (int i = 0; i < restored.tiers_size(); ++i)
      std::cout << (i == 0 ? " " : ", ") << restored.tiers(i).name();
    std::cout << " in " << std::fixed << std::setprecision(2) << restored.seconds() << " s, "
              << restored.path() << "\n";
  }
  table actors{{"ACTOR", "STATE", "MAILBOX"}};
  for (const auto& a : s.actors())
    actors.push_back({a.name(), a.state(), std::to_string(a.mailbox())});
  std::cout << "\n";
  print_table(actors);
  if (s.workers_size() == 0) return;
  // Step times show the skew between ranks (a straggler is marked where
  // its state is), which /status carried and the table left out.
  table workers{{"WORKER", "STEP", "STEP TIME", "P99", "LAST HEARTBEAT", "STATE", "PHASE"}};
  for (const auto& w : s.workers())
    workers.push_back({std::to_string(w.rank()), std::to_string(w.step()),
                       step_time(w.step_seconds_median()), step_time(w.step_seconds_p99()),
                       std::to_string(w.last_heartbeat_ms()) + " ms ago",
                       w.state() + (w.straggler() ? " (straggler)" : ""), w.phase()});
  std::cout << "\n";
  print_table(workers);
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = parse_args(argc, argv);
  if (auto* code = std::get_if<int>(&parsed)) return *code;
  const auto& opts = std::get<options>(parsed);
  auto url = "http://" + lifeboat::endpoint{opts.host, opts.port}.to_string() + status_path;
  lifeboat::http_request request;
  request.host = opts.host;
  request.port = opts.port;
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
  print_status(status);
  return EXIT_SUCCESS;
}
