#pragma once

// One run of four lifeboat-demo workers under lifeboat-launch for the tests
// of the checkpoint tiers (memory_restore_test, deadline_save_test): the
// launcher restarts the job once; with a preemption, rank 1 gets a SIGTERM
// once every worker trains. What it printed is kept line by line.

#include <signal.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"

namespace lifeboat::test {

constexpr int tiered_job_workers = 4;

struct tiered_job_options {
  int64_t steps = 0;
  std::vector<std::string> launcher_wrapper;  // before the launcher's command line
  std::vector<std::string> wrapper;           // before the demo's command line
  std::vector<std::string> demo_args;         // after --checkpoint-dir and --steps
  std::map<std::string, std::string> env;
  bool preempt = false;
};

struct tiered_job_result {
  int code = -1;
  std::map<int, std::string> digests;
  std::vector<std::string> lines;

  int count(const std::string& needle) const { return count(needle, ""); }

  // The lines that hold both.
  int count(const std::string& needle, const std::string& also) const {
    return static_cast<int>(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find(needle) != std::string::npos && l.find(also) != std::string::npos;
    }));
  }

  std::string text() const {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

inline tiered_job_result run_tiered_job(const std::string& ckpt, const tiered_job_options& o) {
  std::vector<std::string> argv = o.launcher_wrapper;
  argv.insert(argv.end(), {lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc",
                           std::to_string(tiered_job_workers), "--max-restarts", "1",
                           "--status-port", "0", "--"});
  argv.insert(argv.end(), o.wrapper.begin(), o.wrapper.end());
  argv.insert(argv.end(), {lifeboat::test::built(LIFEBOAT_DEMO), "--checkpoint-dir", ckpt,
                           "--steps", std::to_string(o.steps)});
  argv.insert(argv.end(), o.demo_args.begin(), o.demo_args.end());
  auto env = o.env;
  env.emplace("LIFEBOAT_PLATFORM", "generic");
  child_process job{argv, true, environment_with(env)};
  output_log log{job};
  tiered_job_result out;
  // Past the handler's construction: a notice now is saved, not met by the
  // start-up guard (which exits without a checkpoint).
  if (o.preempt && log.read_until_count(worker_status_listening, tiered_job_workers)) {
    auto started = log.pids(0);
    if (started.count(1) != 0) ::kill(started[1], SIGTERM);
  }
  log.read_all();
  out.code = exit_code(job);
  out.digests = log.digests(o.steps);
  auto text = log.text();
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    out.lines.push_back(text.substr(at, nl - at));
  return out;
}

}  // namespace lifeboat::test
