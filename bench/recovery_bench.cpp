// Recovery from a preemption, from the notice to every worker training again
// after lifeboat-launch's restart: 4 lifeboat-demo workers x 256 MiB
// (LIFEBOAT_BENCH_STATE_MB), restored from the memory tier (in /dev/shm, or
// LIFEBOAT_BENCH_MEMORY_ROOT), then from the
// peer tier (every rank's own memory tier wiped before the restart: each
// fetches its replica from the rank that keeps it), then from the checkpoint
// directory (LIFEBOAT_LOCAL_DIR=off), in the same run. The parts,
// each ending at the last worker's line (timed as it reaches this process):
//   agree    notice (SIGTERM to rank 1) to "agreed to save"
//   save     to "reached tiers" (every tier of the save written)
//   exit     to the launcher's "exited with the restart code"
//   start    to the launcher's start line of each worker of generation 1
//   join     to "joined (generation 1)"
//   restore  to "resumed at step" (the restore agreement and the read);
//            "read" is the slowest rank's own restore time ("restored step
//            ... in T s")
// After "resumed", each worker's saver thread maps and touches the staging
// memory of its next save while training goes on: printed as "staging", the
// slowest rank's, not a part of the recovery. The notice comes once every
// worker of the first generation has its staging memory (a job in its
// steady state).
// The read is set beside a memcpy of the same bytes in the same run: one
// rank's bytes on one thread, and every rank's on as many threads at once;
// and beside plain reads of as many files of a rank's size in the memory
// tiers' file system (pread into touched memory, no hashing): its floor;
// the peer's copy ("the copy took C s") beside as many loopback TCP
// connections sending one rank's bytes each at once, through a 1 MiB buffer
// at each end (in the caches), and, beside that, from and into memory of a
// rank's size at each end, as the copy itself moves them.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/loopback.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int workers = 4;
constexpr int default_state_mb = 256;
// Long enough that the notice lands mid-training; the bench stops the job.
constexpr const char* demo_steps = "100000";
constexpr const char* demo_step_ms = "5";
constexpr auto line_bound = 120s;
constexpr auto exit_bound = 60s;
constexpr int memcpy_rounds = 3;

struct bench_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int state_mb() {
  const char* text = std::getenv("LIFEBOAT_BENCH_STATE_MB");
  return text != nullptr ? std::atoi(text) : default_state_mb;
}

// Where the memory tiers go: LIFEBOAT_BENCH_MEMORY_ROOT, else /dev/shm (a
// tmpfs mounted with huge=within_size, say, to time huge pages there).
std::string memory_root() {
  const char* text = std::getenv("LIFEBOAT_BENCH_MEMORY_ROOT");
  return text != nullptr && *text != '\0' ? text : "/dev/shm";
}

// The environment of this process with `name`=`value` set.
std::vector<std::string> environment_with(const std::string& name, const std::string& value) {
  std::vector<std::string> out{name + "=" + value, "LIFEBOAT_PLATFORM=generic"};
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry{*e};
    auto key = entry.substr(0, entry.find('='));
    if (key != name && key != "LIFEBOAT_PLATFORM") out.push_back(entry);
  }
  return out;
}

// The launcher's lines, each timed on arrival.
class timed_log {
 public:
  explicit timed_log(lifeboat::test::child_process& p) : p_(p) {}

  // Reads until `count` lines containing `needle` came; the arrival of the last.
  clock_type::time_point until_count(const std::string& needle, int count) {
    int seen = 0;
    for (size_t i = 0;; ++i) {
      if (i == lines_.size()) {
        auto line = p_.read_line(line_bound);
        if (!line)
          throw bench_error("no line with '" + needle + "' (" + std::to_string(seen) + " of " +
                            std::to_string(count) + ")");
        lines_.push_back(*line);
        arrivals_.push_back(clock_type::now());
      }
      if (lines_[i].find(needle) != std::string::npos && ++seen == count) return arrivals_[i];
    }
  }

  // How many lines came so far: a mark for largest_seconds.
  size_t lines_read() const { return lines_.size(); }

  // The largest T of the lines "... <needle> ... in T s)", from line `from` on.
  double largest_seconds(const std::string& needle, size_t from = 0) const {
    double largest = 0;
    for (size_t i = from; i < lines_.size(); ++i) {
      auto& line = lines_[i];
      if (line.find(needle) == std::string::npos) continue;
      auto at = line.rfind(" in ");
      if (at != std::string::npos) largest = std::max(largest, std::atof(line.c_str() + at + 4));
    }
    return largest;
  }

  // The largest C of the lines "... <needle> ... <marker> C ...".
  double largest_after(const std::string& needle, const std::string& marker) const {
    double largest = 0;
    for (auto& line : lines_) {
      auto at = line.find(marker);
      if (line.find(needle) == std::string::npos || at == std::string::npos) continue;
      largest = std::max(largest, std::atof(line.c_str() + at + marker.size()));
    }
    return largest;
  }

  // The pid in "lifeboat-launch: rank=R pid=P restart=0".
  pid_t pid_of(int rank) const {
    auto prefix = "lifeboat-launch: rank=" + std::to_string(rank) + " pid=";
    for (auto& line : lines_)
      if (line.rfind(prefix, 0) == 0) return std::atoi(line.c_str() + prefix.size());
    throw bench_error("no pid for rank " + std::to_string(rank));
  }

 private:
  lifeboat::test::child_process& p_;
  std::vector<std::string> lines_;
  std::vector<clock_type::time_point> arrivals_;
};

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct recovery {
  std::map<std::string, double> parts;  // in the order of part_names
  double total = 0;
  double read = 0;
  double peer_copy = 0;  // the slowest rank's copy from its peer
  double prepared = 0;   // the slowest rank's staging memory, after it resumed
};

// Before the restart, each rank removes its own memory tier: a replaced host.
const char* const wipe_own_tier =
    "if [ \"$LIFEBOAT_RESTART_COUNT\" = 1 ]; then rm -rf \"$LIFEBOAT_LOCAL_DIR\"/rank-$(printf "
    "%05d \"$LIFEBOAT_RANK\")-of-*; fi; exec \"$@\"";

const char* const part_names[] = {"agree", "save", "exit", "start", "join", "restore"};

// A worker's staging memory, ready for its first save.
const char* const prepared_line = "] runtime: staging memory prepared";

// One preemption and restart; `local_dir` is the memory tier ("off": none);
// with `wipe`, every rank's own memory tier is gone at the restart.
recovery preempt_and_restart(const fs::path& scratch, const std::string& local_dir, bool wipe) {
  auto ckpt = scratch / ("ckpt-" + std::to_string(clock_type::now().time_since_epoch().count()));
  std::vector<std::string> argv{lifeboat::test::built("apps/lifeboat-launch"),
                                "--nproc",
                                std::to_string(workers),
                                "--max-restarts",
                                "1",
                                "--status-port",
                                "0",
                                "--"};
  if (wipe) argv.insert(argv.end(), {"/bin/sh", "-c", wipe_own_tier, "sh"});
  argv.insert(argv.end(), {lifeboat::test::built("apps/lifeboat-demo"), "--checkpoint-dir",
                           ckpt.string(), "--steps", demo_steps, "--state-mb",
                           std::to_string(state_mb()), "--step-ms", demo_step_ms});
  lifeboat::test::child_process launcher{argv, true,
                                         environment_with("LIFEBOAT_LOCAL_DIR", local_dir)};
  if (!launcher.started()) throw bench_error("cannot start lifeboat-launch");
  timed_log log{launcher};
  // Every worker training, its staging memory prepared (in the background,
  // once training started): the notice finds a job in its steady state.
  log.until_count(prepared_line, workers);
  auto notice = clock_type::now();
  ::kill(log.pid_of(1), SIGTERM);
  std::vector<clock_type::time_point> ends{log.until_count("agreed to save at step", workers),
                                           log.until_count("reached tiers", workers),
                                           log.until_count("exited with the restart code", 1),
                                           log.until_count(" restart=1", workers),
                                           log.until_count("joined (generation 1)", workers),
                                           log.until_count("resumed at step", workers)};
  recovery out;
  auto from = notice;
  for (size_t i = 0; i < ends.size(); ++i) {
    out.parts[part_names[i]] = seconds_between(from, ends[i]);
    from = ends[i];
  }
  out.total = seconds_between(notice, ends.back());
  auto resumed = log.lines_read();
  log.until_count(prepared_line, 2 * workers);
  out.prepared = log.largest_seconds(prepared_line, resumed);
  out.read = log.largest_seconds("] checkpoint: restored step ");
  out.peer_copy = log.largest_after("from the peer tier", "the copy took ");
  if (wipe && out.peer_copy == 0) throw bench_error("no rank restored from the peer tier");
  ::kill(launcher.pid(), SIGINT);
  if (!launcher.wait_exit(exit_bound))
    throw bench_error("lifeboat-launch did not exit after SIGINT");
  fs::remove_all(ckpt);
  return out;
}

// The best of memcpy_rounds copies of `bytes` on each of `threads` threads at once.
double memcpy_seconds(size_t bytes, int threads) {
  std::vector<std::vector<char>> from(threads, std::vector<char>(bytes, 1));
  std::vector<std::vector<char>> to(threads, std::vector<char>(bytes, 0));
  double best = 1e9;
  for (int round = 0; round < memcpy_rounds; ++round) {
    auto start = clock_type::now();
    std::vector<std::thread> copies;
    for (int t = 0; t < threads; ++t)
      copies.emplace_back([&, t] { std::memcpy(to[t].data(), from[t].data(), bytes); });
    for (auto& c : copies) c.join();
    best = std::min(best, seconds_between(start, clock_type::now()));
  }
  return best;
}

// The best of memcpy_rounds plain reads, on each of `threads` threads at
// once, of a file of `bytes` in `dir` (the memory tiers' file system) into
// memory already touched, 1 MiB per pread(2) as a restore reads: what the
// kernel's read of that file system costs before a restore hashes anything.
double file_read_seconds(const fs::path& dir, size_t bytes, int threads) {
  constexpr size_t block = size_t{1} << 20;
  std::vector<std::string> paths;
  std::vector<char> content(bytes, 1);
  for (int t = 0; t < threads; ++t) {
    paths.push_back((dir / ("read-reference-" + std::to_string(t))).string());
    std::ofstream out{paths.back(), std::ios::binary};
    out.write(content.data(), static_cast<std::streamsize>(bytes));
    if (!out.flush()) throw bench_error("cannot write " + paths.back());
  }
  std::vector<std::vector<char>> to(threads, std::vector<char>(bytes, 0));
  std::atomic<bool> failed{false};
  double best = 1e9;
  for (int round = 0; round < memcpy_rounds; ++round) {
    auto start = clock_type::now();
    std::vector<std::thread> reads;
    for (int t = 0; t < threads; ++t)
      reads.emplace_back([&, t] {
        lifeboat::bench::fd_guard in{::open(paths[t].c_str(), O_RDONLY)};
        // A whole block per call from a regular file; anything less fails the bench.
        for (size_t done = 0; done < bytes && !failed; done += block) {
          auto want = std::min(block, bytes - done);
          if (in.fd < 0 || ::pread(in.fd, to[t].data() + done, want, static_cast<off_t>(done)) !=
                               static_cast<ssize_t>(want))
            failed = true;
        }
      });
    for (auto& r : reads) r.join();
    best = std::min(best, seconds_between(start, clock_type::now()));
  }
  for (auto& path : paths) fs::remove(path);
  if (failed) throw bench_error("a read of the reference files failed");
  return best;
}

// Seconds for `threads` loopback TCP connections at once to carry `bytes`
// each, sender to receiver (the best of memcpy_rounds). `whole`: each end
// sends from or receives into `bytes` of memory of its own (touched before
// the clock starts), as a peer's copy lands in a worker's state; else each
// end reuses one 1 MiB buffer, which stays in the caches: TCP's best case.
double loopback_seconds(size_t bytes, int threads, bool whole) {
  using lifeboat::bench::fd_guard;
  constexpr size_t piece = size_t{1} << 20;
  constexpr auto io_bound = std::chrono::milliseconds{30000};
  std::vector<std::vector<char>> memory;
  for (int end = 0; end < 2 * threads; ++end) memory.emplace_back(whole ? bytes : piece, 1);
  double best = 1e9;
  for (int round = 0; round < memcpy_rounds; ++round) {
    std::vector<fd_guard> senders, receivers;
    for (int t = 0; t < threads; ++t) {
      uint16_t port = 0;
      auto listener = lifeboat::bench::listen_loopback(1, port);
      auto sender = lifeboat::bench::connect_loopback(port);
      if (listener.fd < 0 || sender.fd < 0) throw bench_error("cannot connect on loopback");
      senders.push_back(std::move(sender));
      receivers.emplace_back(::accept(listener.fd, nullptr, nullptr));
    }
    std::atomic<bool> failed{false};
    auto start = clock_type::now();
    std::vector<std::thread> ends;
    for (int t = 0; t < threads; ++t)
      for (bool sending : {true, false})
        ends.emplace_back([&, t, sending] {
          auto* buffer = memory[static_cast<size_t>(2 * t + (sending ? 0 : 1))].data();
          int fd = sending ? senders[t].fd : receivers[t].fd;
          for (size_t done = 0; done < bytes && !failed; done += piece)
            if (!lifeboat::bench::transfer_all(fd, buffer + (whole ? done : 0),
                                               std::min(piece, bytes - done), sending, io_bound))
              failed = true;
        });
    for (auto& e : ends) e.join();
    if (failed) throw bench_error("a loopback transfer failed");
    best = std::min(best, seconds_between(start, clock_type::now()));
  }
  return best;
}

void print(const char* what, const recovery& r) {
  std::printf("%-22s total %6.3f s  (", what, r.total);
  for (auto* name : part_names) std::printf(" %s %.3f", name, r.parts.at(name));
  std::printf(" )  read %.3f s, then staging %.3f s in the background\n", r.read, r.prepared);
}

}  // namespace

int main() {
  try {
    auto scratch =
        fs::temp_directory_path() / ("lifeboat-recovery-bench-" + std::to_string(::getpid()));
    auto memory =
        fs::path{memory_root()} / ("lifeboat-recovery-bench-" + std::to_string(::getpid()));
    fs::create_directories(scratch);
    auto bytes = static_cast<size_t>(state_mb()) << 20;
    std::printf("%d lifeboat-demo workers x %d MiB under lifeboat-launch, SIGTERM to rank 1\n",
                workers, state_mb());
    // A first round pays this virtual machine's first touch of memory that
    // the host has not backed lately (staging memory took 2.5 s in it, 0.05
    // s in later rounds; memory-tier writes 1-1.8 s, 0.1-0.2 s later): it
    // warms the host up and is printed, not compared.
    auto warm_up = preempt_and_restart(scratch, memory.string(), false);
    fs::remove_all(memory);
    auto from_memory = preempt_and_restart(scratch, memory.string(), false);
    fs::remove_all(memory);
    auto from_peer = preempt_and_restart(scratch, memory.string(), true);
    fs::remove_all(memory);
    auto from_directory = preempt_and_restart(scratch, "off", false);
    fs::remove_all(scratch);
    auto one = memcpy_seconds(bytes, 1);
    auto all = memcpy_seconds(bytes, workers);
    fs::create_directories(memory);
    auto file_read = file_read_seconds(memory, bytes, workers);
    fs::remove_all(memory);
    auto tcp = loopback_seconds(bytes, workers, false);
    auto tcp_memory = loopback_seconds(bytes, workers, true);
    print("warm-up, from memory", warm_up);
    print("from the memory tier", from_memory);
    print("from the peer tier", from_peer);
    print("from the directory", from_directory);
    std::printf("memcpy of %d MiB: %.3f s on 1 thread, %.3f s on %d threads at once\n", state_mb(),
                one, all, workers);
    std::printf("memory-tier read vs memcpy (%d threads): %.2fx the memcpy's speed\n", workers,
                from_memory.read > 0 ? all / from_memory.read : 0.0);
    std::printf(
        "plain pread of %d files of %d MiB in %s at once: %.3f s; the memory-tier read "
        "is %.2fx its speed\n",
        workers, state_mb(), memory_root().c_str(), file_read,
        from_memory.read > 0 ? file_read / from_memory.read : 0.0);
    std::printf("loopback TCP, %d connections of %d MiB at once: %.3f s\n", workers, state_mb(),
                tcp);
    std::printf("peer copy %.3f s vs loopback TCP: %.2fx its speed\n", from_peer.peer_copy,
                from_peer.peer_copy > 0 ? tcp / from_peer.peer_copy : 0.0);
    // Beside it, not in its place: the target is held to the figure above.
    std::printf(
        "  the same connections from and into %d MiB of memory each, as the copy lands in a "
        "worker's state: %.3f s; the peer copy is %.2fx its speed\n",
        state_mb(), tcp_memory, from_peer.peer_copy > 0 ? tcp_memory / from_peer.peer_copy : 0.0);
    std::printf("directory read vs memcpy (%d threads): %.2fx the memcpy's speed\n", workers,
                from_directory.read > 0 ? all / from_directory.read : 0.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "recovery_bench: %s\n", e.what());
    return 1;
  }
}
