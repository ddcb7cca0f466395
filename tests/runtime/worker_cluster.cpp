#include "tests/runtime/worker_cluster.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>

#include "checkpoint/layout.hpp"
#include "checkpoint/memory_tier.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/loopback_port.hpp"

extern char** environ;

namespace lifeboat::test {

namespace fs = std::filesystem;

namespace {

// Variables through which a worker could find a cluster or a platform other
// than the one a test describes; the tests' own environment may hold any.
const char* const foreign_prefixes[] = {"LIFEBOAT_",   "TF_CONFIG=",   "RANK=",  "WORLD_SIZE=",
                                        "LOCAL_RANK=", "MASTER_",      "SLURM_", "TORCHELASTIC_",
                                        "KUBERNETES_", "GCE_METADATA_"};

bool foreign(const std::string& entry) {
  return std::any_of(std::begin(foreign_prefixes), std::end(foreign_prefixes),
                     [&](const char* prefix) { return entry.rfind(prefix, 0) == 0; });
}

void set_var(std::vector<std::string>& env, const std::string& entry) {
  auto name = entry.substr(0, entry.find('=') + 1);
  env.erase(std::remove_if(env.begin(), env.end(),
                           [&](const std::string& e) { return e.rfind(name, 0) == 0; }),
            env.end());
  env.push_back(entry);
}

std::string random_token() {
  std::random_device rd;
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return buf;
}

}  // namespace

temp_dir::temp_dir(const std::string& name) {
  static std::atomic<int> counter{0};
  path_ =
      fs::temp_directory_path() / ("lifeboat-runtime-test-" + name + "-" +
                                   std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(path_);
  fs::create_directories(path_);
}

temp_dir::~temp_dir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  // A job in it that exited with the restart code kept its memory tier.
  (void)checkpoint::remove_orphaned_memory_tiers_in(checkpoint::default_memory_root);
}

std::vector<int64_t> committed_steps(const fs::path& dir) {
  std::vector<int64_t> out;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(dir, ec)) {
    auto step = checkpoint::parse_step_dir_name(entry.path().filename().string());
    if (step && fs::exists(entry.path() / checkpoint::manifest_file_name)) out.push_back(*step);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(dir, ec)) out.push_back(entry.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<int64_t> value_of(const std::string& line, const std::string& key) {
  auto prefix = key + "=";
  if (line.rfind(prefix, 0) != 0) return std::nullopt;
  char* end = nullptr;
  auto begin = line.c_str() + prefix.size();
  auto value = std::strtoll(begin, &end, 10);
  if (end == begin) return std::nullopt;
  return value;
}

std::optional<int64_t> field_of(const std::string& line, const std::string& field) {
  auto at = line.find(" " + field + "=");
  if (at == std::string::npos) return std::nullopt;
  return value_of(line.substr(at + 1), field);
}

cluster_options make_options(int world_size, const std::string& dir, std::vector<std::string> args,
                             int incarnation) {
  cluster_options opts;
  opts.world_size = world_size;
  opts.checkpoint_dir = dir;
  opts.args = std::move(args);
  opts.incarnation = incarnation;
  return opts;
}

std::vector<std::string> worker_cluster::environment(const cluster_options& opts, int rank,
                                                     uint16_t port, const std::string& token) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (!foreign(*e)) env.emplace_back(*e);
  // Named outright, so no worker spends its start probing cloud metadata servers.
  env.emplace_back("LIFEBOAT_PLATFORM=generic");
  if (opts.world_size > 0) {
    env.push_back("LIFEBOAT_RANK=" + std::to_string(rank));
    env.push_back("LIFEBOAT_WORLD_SIZE=" + std::to_string(opts.world_size));
    env.push_back("LIFEBOAT_COORDINATOR=127.0.0.1:" + std::to_string(port));
    env.push_back("LIFEBOAT_CLUSTER_TOKEN=" + token);
    env.push_back("LIFEBOAT_RESTART_COUNT=" + std::to_string(opts.incarnation));
  }
  for (auto& entry : opts.extra_env) set_var(env, entry);
  return env;
}

worker_cluster::worker_cluster(cluster_options opts) {
  auto port = unused_port();
  auto token = random_token();
  int n = opts.started >= 0 ? opts.started : std::max(opts.world_size, 1);
  lines_.resize(n);
  for (int rank = 0; rank < n; ++rank) {
    auto argv = opts.launcher;
    argv.push_back(opts.worker.empty() ? lifeboat::test::built(LIFEBOAT_RUNTIME_WORKER)
                                       : opts.worker);
    argv.insert(argv.end(), {"--checkpoint-dir", opts.checkpoint_dir});
    argv.insert(argv.end(), opts.args.begin(), opts.args.end());
    workers_.push_back(
        std::make_unique<child_process>(argv, true, environment(opts, rank, port, token)));
  }
}

bool worker_cluster::pump(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  for (int r = 0; r < size(); ++r) {
    if (workers_[r]->at_eof()) continue;
    fds.push_back({workers_[r]->output_fd(), POLLIN, 0});
    ranks.push_back(r);
  }
  if (fds.empty()) return true;
  if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) return false;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    // Takes one chunk and every complete line in it, never waiting.
    while (auto line = workers_[ranks[i]]->read_line(0ms)) lines_[ranks[i]].push_back(*line);
  }
  return all_eof();
}

bool worker_cluster::wait_for(const std::function<bool(int, const std::string&)>& pred,
                              std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (int r = 0; r < size(); ++r)
      for (auto& line : lines_[r])
        if (pred(r, line)) return true;
    // Everything was looked at: nothing more can come once all are at EOF.
    if (all_eof()) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pump(left);
  }
}

bool worker_cluster::all_eof() const {
  return std::all_of(workers_.begin(), workers_.end(), [](auto& w) { return w->at_eof(); });
}

std::optional<std::string> worker_cluster::wait_line(int rank, const std::string& prefix,
                                                     std::chrono::milliseconds timeout) {
  std::optional<std::string> found;
  wait_for(
      [&](int r, const std::string& line) {
        if (r != rank || line.rfind(prefix, 0) != 0) return false;
        found = line;
        return true;
      },
      timeout);
  return found;
}

bool worker_cluster::wait_step(int rank, int64_t step, std::chrono::milliseconds timeout) {
  return wait_for(
      [&](int r, const std::string& line) {
        auto s = value_of(line, "step");
        return r == rank && s && *s >= step;
      },
      timeout);
}

std::vector<int> worker_cluster::finish(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || pump(left)) break;
  }
  std::vector<int> codes;
  for (auto& w : workers_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto status = w->wait_exit(std::max(left, std::chrono::milliseconds{1}));
    if (!status)
      codes.push_back(-1);
    else if (WIFEXITED(*status))
      codes.push_back(WEXITSTATUS(*status));
    else
      codes.push_back(128 + WTERMSIG(*status));
  }
  return codes;
}

std::vector<int64_t> worker_cluster::values(int rank, const std::string& key) const {
  std::vector<int64_t> out;
  for (auto& line : lines_[rank])
    if (auto v = value_of(line, key)) out.push_back(*v);
  return out;
}

std::vector<std::string> worker_cluster::lines_containing(int rank, const std::string& text) const {
  std::vector<std::string> out;
  for (auto& line : lines_[rank])
    if (line.find(text) != std::string::npos) out.push_back(line);
  return out;
}

std::string worker_cluster::transcript() const {
  std::string out;
  for (int r = 0; r < size(); ++r) {
    out += "---- rank " + std::to_string(r) + " ----\n";
    for (auto& line : lines_[r])
      // The per-step lines say little once a run went wrong; the rest does.
      if (!value_of(line, "step")) out += line + "\n";
    auto steps = values(r, "step");
    if (!steps.empty())
      out +=
          "(steps " + std::to_string(steps.front()) + ".." + std::to_string(steps.back()) + ")\n";
  }
  return out;
}

}  // namespace lifeboat::test
