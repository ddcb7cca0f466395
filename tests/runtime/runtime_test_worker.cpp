// A worker for the multi-process runtime tests, built on the public handler
// API only. It trains a trivial model whose state records every step it
// applied, and says what happens on stdout, one "key=value ..." line per
// event, so that the tests synchronise on output and never on sleeps:
//
//   late                       waiting on stdin before constructing the handler (--late-rank)
//   restored=N                 total_run_calls after construction
//   step=N                     step N completed (before lifeboat looks at it)
//   hold=N                     waiting on stdin inside step N (--hold-*, --fail-on-go)
//   saving=N t=UNIX_MS         lifeboat snapshots the state at step N
//   saved=N t=UNIX_MS          save_fn called at step N (--save-fn)
//   gap expected=N got=M       the state skipped or repeated a step (a bug)
//   error=TEXT origin=R        run (or construction) raised TEXT; R: the rank it names
//   failed=0|1                 handler.failed() as that error left the loop
//   config_error=TEXT          construction refused the configuration
//   done total=N applied=N     training finished
//   left=TEXT                  the trainer's own code threw TEXT between steps
//                              (--leave-step), past the handler
//
// Exit codes: 0 finished, 1 left by --leave-step's exception, 2 usage or
// configuration error, 3 failure (from lifeboat's scope guard, or from main
// when the guard let it through), 42 (lifeboat) after a preemption checkpoint.

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lifeboat/lifeboat.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int usage_exit_code = 2;
constexpr int failure_exit_code = 3;
constexpr int64_t no_grace = std::numeric_limits<int64_t>::min();
// The per-step barrier of --lockstep: peers that fail are reported long before.
constexpr auto lockstep_barrier_timeout = 60s;

struct options {
  std::string checkpoint_dir;
  int64_t steps = 0;
  int64_t step_ms = 0;
  int64_t uneven_rank = -1;  // this rank steps at uneven_step_ms
  int64_t uneven_step_ms = 0;
  bool manual = false;  // save_checkpoint_if_preempted instead of run
  bool lockstep = false;
  int64_t fail_rank = -1;
  int64_t fail_step = -1;
  bool fail_on_go = false;  // the failing rank waits for a line on stdin first
  // At the failing step the other ranks wait in a "collective" that fails
  // once the failing rank's process has ended, as gloo's and NCCL's do.
  bool collective = false;
  int64_t hold_rank = -1;
  int64_t hold_step = -1;
  int64_t late_rank = -1;  // this rank joins only when the test says go
  int64_t self_signal_step = -1;
  int64_t grace_ms = no_grace;  // unset: the platform's; negative values go through (config test)
  bool save_fn = false;
  int64_t watcher_rank = -2;  // -1: every rank
  int64_t watcher_after = 0;  // steps after the restored step
  int64_t poll_ms = 100;
  std::string notice_file;
  std::vector<std::string> signals;
  int64_t state_kb = 0;
  // The runtime's default (10 s). No test here loses a worker by its silence;
  // four workers starting under ThreadSanitizer on a busy two-core host went
  // more than 2 s without a heartbeat during the restore agreement.
  int64_t heartbeat_ms = 10000;
  int64_t save_every_s = 0;
  int64_t unusable_nccl_rank = -2;  // hands lifeboat a communicator it cannot use (-1: every rank)
  int64_t leave_step = -1;          // after this step fail_rank's own code throws left_training
};

// What the trainer's own code throws between steps (--leave-step): no
// std::exception, so that it passes the loop's handlers and unwinds past the
// handler, as an error a trainer does not catch would.
struct left_training {
  std::string what;
};

// Where rank `rank` writes its pid for --collective.
std::string pid_file(const options& opts, int64_t rank) {
  return opts.checkpoint_dir + "/pid-" + std::to_string(rank);
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One write(2) per line: stdout and lifeboat's stderr may share a pipe, and
// lifeboat may end the process with _Exit right after (no stdio flush).
template <class... Ts>
void emit(const char* format, Ts... xs) {
  char line[1024];
  int n = std::snprintf(line, sizeof(line) - 1, format, xs...);
  if (n < 0) return;
  if (n > static_cast<int>(sizeof(line)) - 2) n = sizeof(line) - 2;
  line[n] = '\n';
  auto rc = ::write(STDOUT_FILENO, line, static_cast<size_t>(n) + 1);
  (void)rc;
}

bool parse(int argc, char** argv, options& o) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i];
    if (name.rfind("--", 0) != 0) return false;
    name = name.substr(2);
    // Boolean flags take no value.
    if (name == "manual" || name == "lockstep" || name == "save-fn" || name == "fail-on-go" ||
        name == "collective") {
      flags[name] = "1";
      continue;
    }
    if (i + 1 >= argc) return false;
    if (name == "signal")
      o.signals.push_back(argv[++i]);
    else
      flags[name] = argv[++i];
  }
  auto integer = [&](const char* name, int64_t& out) {
    auto it = flags.find(name);
    if (it == flags.end()) return true;
    char* end = nullptr;
    out = std::strtoll(it->second.c_str(), &end, 10);
    bool ok = end != it->second.c_str() && *end == '\0';
    flags.erase(it);
    return ok;
  };
  auto text = [&](const char* name, std::string& out) {
    if (auto it = flags.find(name); it != flags.end()) {
      out = it->second;
      flags.erase(it);
    }
  };
  auto boolean = [&](const char* name, bool& out) { out = flags.erase(name) > 0; };
  text("checkpoint-dir", o.checkpoint_dir);
  text("notice-file", o.notice_file);
  boolean("manual", o.manual);
  boolean("lockstep", o.lockstep);
  boolean("save-fn", o.save_fn);
  boolean("fail-on-go", o.fail_on_go);
  boolean("collective", o.collective);
  bool ok = integer("steps", o.steps) && integer("step-ms", o.step_ms) &&
            integer("uneven-rank", o.uneven_rank) && integer("uneven-step-ms", o.uneven_step_ms) &&
            integer("fail-rank", o.fail_rank) && integer("fail-step", o.fail_step) &&
            integer("hold-rank", o.hold_rank) && integer("hold-step", o.hold_step) &&
            integer("late-rank", o.late_rank) && integer("self-signal-step", o.self_signal_step) &&
            integer("grace-ms", o.grace_ms) && integer("watcher-rank", o.watcher_rank) &&
            integer("watcher-after", o.watcher_after) && integer("poll-ms", o.poll_ms) &&
            integer("state-kb", o.state_kb) && integer("heartbeat-ms", o.heartbeat_ms) &&
            integer("save-every-s", o.save_every_s) &&
            integer("unusable-nccl-rank", o.unusable_nccl_rank) &&
            integer("leave-step", o.leave_step);
  for (auto& [name, value] : flags)
    std::cerr << "runtime_test_worker: unknown flag --" << name << "\n";
  return ok && flags.empty() && o.steps > 0;
}

// The test's "go" line on stdin (a parked worker waits for it).
void wait_for_go() {
  std::string go;
  std::getline(std::cin, go);
}

// The model: which steps were applied, in order. A step is applied only when
// it is exactly the one after the last, so a lost or repeated step across a
// restart shows as a gap line and as applied != total at the end.
struct progress {
  int64_t applied = 0;
  int64_t last_step = 0;
};

class trainer {
 public:
  trainer(const options& opts, lifeboat::preemption_checkpoint_handler& handler, progress& model,
          std::vector<char>& ballast)
      : opts_(opts), handler_(handler), model_(model), ballast_(ballast) {}

  // Parked inside the step until the test says go: its completed step stays
  // at step - 1 for as long as the test needs.
  static void hold(int64_t step) {
    emit("hold=%lld", static_cast<long long>(step));
    wait_for_go();
  }

  // A collective with the failing rank: it ends when that rank's process
  // does (its pid is in the checkpoint directory), with the error a
  // collective library raises then.
  void await_failing_rank_exit() {
    pid_t pid = 0;
    std::ifstream{pid_file(opts_, opts_.fail_rank)} >> pid;
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
      pollfd pfd{fd, POLLIN, 0};
      while (::poll(&pfd, 1, -1) < 0 && errno == EINTR) {
      }
      ::close(fd);
    }
    throw std::runtime_error("collective failed: connection closed by peer");
  }

  // Training proper: everything one step does, on the trainer's thread.
  void step() {
    auto step = handler_.total_run_calls() + 1;
    int rank = handler_.rank();
    if (opts_.lockstep) handler_.barrier("step/" + std::to_string(step), lockstep_barrier_timeout);
    if (rank == opts_.fail_rank && step == opts_.fail_step) {
      if (opts_.fail_on_go) hold(step);
      throw std::runtime_error("injected failure at step " + std::to_string(step));
    }
    if (opts_.collective && step == opts_.fail_step) await_failing_rank_exit();
    if (rank == opts_.hold_rank && step == opts_.hold_step) hold(step);
    if (step != model_.last_step + 1)
      emit("gap expected=%lld got=%lld", static_cast<long long>(model_.last_step + 1),
           static_cast<long long>(step));
    else
      ++model_.applied;
    model_.last_step = step;
    if (!ballast_.empty()) ballast_[static_cast<size_t>(step) % ballast_.size()] ^= 1;
    auto ms = rank == opts_.uneven_rank ? opts_.uneven_step_ms : opts_.step_ms;
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds{ms});
    emit("step=%lld", static_cast<long long>(step));
    if (step == opts_.self_signal_step) ::kill(::getpid(), SIGTERM);
  }

 private:
  const options& opts_;
  lifeboat::preemption_checkpoint_handler& handler_;
  progress& model_;
  std::vector<char>& ballast_;
};

// What the callbacks lifeboat runs on its own threads may look at: set once
// construction finished (the watcher runs from construction on).
struct published {
  std::atomic<lifeboat::preemption_checkpoint_handler*> handler{nullptr};
  std::atomic<int64_t> restored{0};
};

lifeboat::termination_config make_config(const options& opts, published& pub) {
  lifeboat::termination_config config;
  if (opts.grace_ms != no_grace) config.grace_period = std::chrono::milliseconds{opts.grace_ms};
  config.poll_interval = std::chrono::milliseconds{opts.poll_ms};
  config.heartbeat_timeout = std::chrono::milliseconds{opts.heartbeat_ms};
  config.save_every_seconds = std::chrono::seconds{opts.save_every_s};
  for (auto& s : opts.signals) config.signals.push_back(s);
  // No platform sources: the tests run on machines that may look like a cloud.
  config.notice_sources = std::vector<std::string>{};
  if (!opts.notice_file.empty()) config.notice_sources->push_back("file:" + opts.notice_file);
  if (opts.save_fn) {
    config.save_fn = [&pub](int64_t step, const std::string& dir) {
      emit("saved=%lld t=%lld", static_cast<long long>(step), static_cast<long long>(unix_ms()));
      // A marker per rank and step, so the test can tell these files from
      // anything lifeboat would have written.
      std::ofstream{dir + "/user-rank-" + std::to_string(pub.handler.load()->rank()) + "-step-" +
                    std::to_string(step)}
          << step << "\n";
    };
  }
  if (opts.watcher_rank >= -1) {
    // True (again and again) once this run did `watcher_after` steps: a
    // notice source that keeps firing, as cloud metadata does.
    config.termination_watcher_fn = [&pub, &opts] {
      auto* h = pub.handler.load();
      if (h == nullptr) return false;
      if (opts.watcher_rank >= 0 && h->rank() != opts.watcher_rank) return false;
      return h->total_run_calls() >= pub.restored.load() + opts.watcher_after;
    };
  }
  // No communicator at all: lifeboat must never touch it, which it does only
  // where every rank has one and a GPU can be used (that test skips there).
  static int not_a_communicator = 0;
  auto* rank = std::getenv("LIFEBOAT_RANK");
  if (opts.unusable_nccl_rank == -1 || (rank && std::atoll(rank) == opts.unusable_nccl_rank))
    config.nccl_communicator = &not_a_communicator;
  return config;
}

// Constructs the handler and trains; returns the exit code.
int train(const options& opts) {
  published pub;
  progress model;
  std::vector<char> ballast(static_cast<size_t>(opts.state_kb) * 1024);
  lifeboat::checkpoint_state state;
  state.add_buffer("progress", &model, sizeof(model));
  if (!ballast.empty()) state.add_buffer("ballast", ballast.data(), ballast.size());
  // Called on the trainer's thread when lifeboat snapshots the state: one
  // line per save, with the step it saves.
  state.add_callbacks(
      "probe",
      [&model] {
        emit("saving=%lld t=%lld", static_cast<long long>(model.last_step),
             static_cast<long long>(unix_ms()));
        return std::to_string(model.last_step);
      },
      [](const std::string&) {});
  auto* own_rank = std::getenv("LIFEBOAT_RANK");
  // Before the handler, whose start waits for every rank: a peer past its
  // start finds the file. Written after it, a peer reached the failing step
  // first once (under ThreadSanitizer), found no pid and failed at once.
  if (opts.collective && own_rank && std::atoll(own_rank) == opts.fail_rank) {
    std::filesystem::create_directories(opts.checkpoint_dir);
    std::ofstream{pid_file(opts, opts.fail_rank)} << ::getpid() << "\n";
  }
  if (own_rank && std::atoll(own_rank) == opts.late_rank) {
    emit("late");
    wait_for_go();
  }
  std::optional<lifeboat::preemption_checkpoint_handler> handler;
  try {
    handler.emplace(state, opts.checkpoint_dir, make_config(opts, pub));
  } catch (const lifeboat::config_error& e) {
    emit("config_error=%s", e.what());
    return usage_exit_code;
  } catch (const lifeboat::peer_error& e) {
    emit("error=%s origin=%d", e.what(), e.origin_rank());
    return failure_exit_code;
  }
  pub.restored = handler->total_run_calls();
  pub.handler = &*handler;
  emit("restored=%lld rank=%d", static_cast<long long>(pub.restored.load()), handler->rank());
  trainer t{opts, *handler, model, ballast};
  try {
    // The guard ends the process with code 3 when a peer's failure leaves it.
    auto guard = handler->watch_preemption_scope();
    try {
      while (handler->total_run_calls() < opts.steps) {
        if (opts.manual) {
          // Without run, reporting a failing step to the peers is the loop's job.
          try {
            t.step();
          } catch (...) {
            handler->report_error(std::current_exception());
            throw;
          }
          handler->save_checkpoint_if_preempted();
        } else {
          handler->run([&] { t.step(); });
        }
        if (handler->rank() == opts.fail_rank && handler->total_run_calls() == opts.leave_step)
          throw left_training{"evaluation broke after step " + std::to_string(opts.leave_step)};
      }
    } catch (const std::exception& e) {
      auto* peer = dynamic_cast<const lifeboat::peer_error*>(&e);
      emit("error=%s origin=%d", e.what(), peer ? peer->origin_rank() : handler->rank());
      emit("failed=%d", handler->failed() ? 1 : 0);
      throw;
    }
  } catch (const std::exception&) {
    // The guard let it through (this worker's own failure, before the
    // cluster confirmed it): leave the way a trainer's main would.
    emit("exit_from=main");
    return failure_exit_code;
  }
  emit("done total=%lld applied=%lld", static_cast<long long>(handler->total_run_calls()),
       static_cast<long long>(model.applied));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options opts;
  if (!parse(argc, argv, opts)) {
    std::cerr << "usage: runtime_test_worker --steps N --checkpoint-dir D [flags]\n";
    return usage_exit_code;
  }
  try {
    return train(opts);
  } catch (const left_training& e) {
    emit("left=%s", e.what.c_str());
    return 1;
  }
}
