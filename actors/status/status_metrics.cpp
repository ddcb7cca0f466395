#include "actors/status/status_metrics.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>
#include <utility>

#include "messages/phase.hpp"

namespace lifeboat {

namespace {

constexpr const char* metric_prefix = "lifeboat_";
constexpr const char* gauge = "gauge";
constexpr const char* counter = "counter";
// Prometheus's naming rule: a counter's name ends in "_total". Actors name
// their monotonic counts so, and only those.
constexpr std::string_view counter_suffix = "_total";

struct family {
  std::string help;
  std::vector<std::string> samples;  // "{labels} value" or " value"
};

// Families by full metric name; std::map keeps the output order stable.
using families = std::map<std::string, family>;

std::string sanitize_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == ':';
    out += ok ? c : '_';
  }
  return out;
}

std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_value(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", x);
  return buf;
}

std::string labels(const std::vector<std::pair<std::string, std::string>>& pairs) {
  if (pairs.empty()) return "";
  std::string out = "{";
  for (const auto& [name, value] : pairs) {
    if (out.size() > 1) out += ',';
    out += name + "=\"" + escape_label(value) + "\"";
  }
  return out + "}";
}

bool is_counter(const std::string& name) {
  return name.size() > counter_suffix.size() &&
         name.compare(name.size() - counter_suffix.size(), counter_suffix.size(), counter_suffix) ==
             0;
}

void add(families& out, const std::string& name, const std::string& help, double value,
         const std::vector<std::pair<std::string, std::string>>& label_pairs = {}) {
  auto& f = out[metric_prefix + sanitize_name(name)];
  if (f.help.empty()) f.help = help;
  f.samples.push_back(labels(label_pairs) + " " + format_value(value));
}

}  // namespace

std::string render_metrics(const wire::Status& merged,
                           const std::vector<wire::ActorStatus>& answers) {
  families out;
  add(out, "rank", "This worker's rank.", merged.rank());
  add(out, "world_size", "The number of workers.", merged.world_size());
  add(out, "step", "The training step this worker is at.", static_cast<double>(merged.step()));
  add(out, "healthy", "1 while every observed actor answers and none reports an error.",
      merged.healthy() ? 1 : 0);
  bool known_phase = false;
  for (auto p : all_phases) {
    bool current = merged.phase() == to_string(p);
    known_phase = known_phase || current;
    add(out, "phase", "1 for the phase of the preemption protocol this worker is in.",
        current ? 1 : 0, {{"phase", to_string(p)}});
  }
  if (!known_phase) add(out, "phase", "", 1, {{"phase", merged.phase()}});
  const auto& ckpt = merged.last_checkpoint();
  add(out, "last_checkpoint_step", "Step of the last committed checkpoint.",
      static_cast<double>(ckpt.step()));
  add(out, "last_checkpoint_bytes",
      "Bytes this worker wrote for the last checkpoint (a coordinator: every worker).",
      static_cast<double>(ckpt.bytes()));
  add(out, "last_checkpoint_seconds", "Seconds the last checkpoint took.", ckpt.seconds());
  for (const auto& tier : ckpt.tiers())
    add(out, "last_checkpoint_tier_seconds",
        "Seconds this worker's shard of the last checkpoint took in each tier that holds it.",
        tier.seconds(), {{"tier", tier.name()}});
  if (merged.has_preemption()) {
    const auto& p = merged.preemption();
    add(out, "preemption_state",
        "1 for the coordinator's preemption watcher state, with the earliest notice's rank and "
        "source.",
        1,
        {{"state", p.state()}, {"rank", std::to_string(p.notice_rank())}, {"source", p.source()}});
  }
  for (const auto& actor : merged.actors()) {
    add(out, "actor_mailbox", "Messages waiting in the actor's mailbox.",
        static_cast<double>(actor.mailbox()), {{"actor", actor.name()}});
  }
  for (const auto& worker : merged.workers()) {
    auto rank = std::to_string(worker.rank());
    add(out, "worker_step", "The step a worker last reported to the coordination service.",
        static_cast<double>(worker.step()), {{"rank", rank}});
    add(out, "worker_last_heartbeat_ms", "Milliseconds since a worker's last heartbeat.",
        static_cast<double>(worker.last_heartbeat_ms()), {{"rank", rank}});
    add(out, "worker_state", "1 for the state a worker is in (joining, alive, left, lost, error).",
        1, {{"rank", rank}, {"state", worker.state()}});
    if (!worker.phase().empty())
      add(out, "worker_phase", "1 for the phase a worker's last heartbeat reported.", 1,
          {{"rank", rank}, {"phase", worker.phase()}});
    // Step times as quantiles of one family, as Prometheus summaries name them.
    add(out, "worker_step_seconds",
        "A worker's step time over a recent window, less time in lifeboat's barriers.",
        worker.step_seconds_median(), {{"rank", rank}, {"quantile", "0.5"}});
    add(out, "worker_step_seconds", "", worker.step_seconds_p99(),
        {{"rank", rank}, {"quantile", "0.99"}});
    add(out, "worker_straggler",
        "1 for a worker whose median step time is over 1.5x the cluster's.",
        worker.straggler() ? 1 : 0, {{"rank", rank}});
  }
  for (const auto& answer : answers)
    for (const auto& tier : answer.restored().tiers())
      add(out, "restore_seconds",
          "Seconds this worker's restore at start took, by the tier it read.", tier.seconds(),
          {{"tier", tier.name()}});
  for (const auto& answer : answers) {
    // Sorted, so the output does not depend on the map's iteration order.
    std::map<std::string, double> metrics{answer.metrics().begin(), answer.metrics().end()};
    for (const auto& [name, value] : metrics) {
      add(out, name, "Reported by the actor in its status.", value, {{"actor", answer.name()}});
    }
  }
  std::string text;
  for (const auto& [name, f] : out) {
    text += "# HELP " + name + " " + f.help + "\n";
    text += "# TYPE " + name + " " + (is_counter(name) ? counter : gauge) + "\n";
    for (const auto& sample : f.samples) text += name + sample + "\n";
  }
  return text;
}

}  // namespace lifeboat
