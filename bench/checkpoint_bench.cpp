// Checkpoint store throughput against the machine's own baselines, measured in
// the same run on the same directory:
//   write:   a shard written + committed    vs  dd if=/dev/zero bs=1M conv=fsync
//            (the removal of the previous checkpoint is timed apart: savers do
//            it after the commit barrier)
//   stall:   async save's training stall    vs  a plain memcpy of the same bytes
//   restore: restore with verification     vs  a sequential read of the same file
//   many small buffers: registering 80,000, and their snapshot vs a memcpy
//            of each (no target: a regression check of two fixed slow paths)
// Cold reads drop the file's pages from the cache first (posix_fadvise).
// LIFEBOAT_BENCH_BYTES sets the state size (default 1 GiB).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/async_saver.hpp"
#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/snapshot.hpp"
#include "checkpoint/staging.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/support/build_tree.hpp"

namespace lc = lifeboat::checkpoint;

namespace {

constexpr uint64_t default_bytes = uint64_t{1} << 30;
constexpr uint64_t mib = uint64_t{1} << 20;
constexpr uint64_t read_block = 8 * mib;
// Every figure is the best of this many runs: the machine is shared.
constexpr int rounds = 3;
constexpr auto save_timeout = std::chrono::minutes{10};

double seconds_of(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "checkpoint_bench: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T check(caf::expected<T> x, const char* what) {
  if (!x) die(std::string{what} + ": " + lifeboat::describe(x.error()));
  return std::move(*x);
}

void check(const caf::error& err, const char* what) {
  if (err) die(std::string{what} + ": " + lifeboat::describe(err));
}

void drop_cache(const std::string& path) {
  auto fd = check(lc::open_file(path, O_RDONLY), "open");
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
}

void sequential_read(const std::string& path, char* dst, uint64_t bytes) {
  auto fd = check(lc::open_file(path, O_RDONLY), "open");
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  for (uint64_t off = 0; off < bytes; off += read_block) {
    auto len = std::min(read_block, bytes - off);
    check(lc::preadv_all(fd.get(), {iovec{dst + off, len}}, static_cast<off_t>(off), path), "read");
  }
}

// The timed parts of one write + commit round.
struct write_parts {
  lc::write_breakdown files;  // inside write_shard_files
  double files_total = 0;     // write_shard_files, all of it
  double shard = 0;           // store::write_shard (the step directory made durable, the files)
  double commit = 0;          // the manifest written durably

  double total() const { return shard + commit; }
};

// `retention`: the slowest removal of the previous checkpoint (max_to_keep 1),
// which savers do after the commit barrier: outside the totals, as no peer
// waits for it, and the first round has nothing to remove.
void print_parts(const write_parts& p, double retention) {
  constexpr double ms = 1e3;
  std::printf(
      "  parts of the best write (ms): hash %.0f, write calls %.0f, data fsync %.0f, "
      "index %.0f, step dir %.0f, commit %.0f; retention after it up to %.0f\n",
      p.files.hash * ms, p.files.write * ms, p.files.fsync * ms, p.files.index * ms,
      (p.shard - p.files_total) * ms, p.commit * ms, retention * ms);
}

void print_row(const char* what, double ours, double baseline, const char* unit, double target,
               bool higher_is_better) {
  double ratio = ours / baseline;
  bool met = higher_is_better ? ratio >= target : ratio <= target;
  std::printf("%-34s %10.1f %10.1f %-5s %6.2fx  (target %s %.1fx: %s)\n", what, ours, baseline,
              unit, ratio, higher_is_better ? ">=" : "<=", target, met ? "met" : "NOT met");
}

// A model of many small tensors (80,000: 20,000 parameters with Adam's three
// tensors each): registering them, and the snapshot of a save's stall, beside
// a memcpy of each buffer in turn. Registering them once took 18 s (a search
// of every name so far for each new one), and each snapshot asked the system
// for its CPU count once per buffer (0.5 s of the stall).
void many_small_buffers() {
  constexpr size_t count = 80000;
  constexpr size_t size = 128;
  std::vector<char> memory(count * size, 1), copy(count * size, 0);
  lc::state_registry registry;
  auto register_s = seconds_of([&] {
    for (size_t i = 0; i < count; ++i)
      check(registry.add_host_buffer("model/layer" + std::to_string(i), &memory[i * size], size),
            "register");
  });
  auto pool = lc::staging_pool::make();
  check(lc::take_snapshot(registry, *pool), "snapshot");  // the staging memory, once
  double snapshot_s = 1e30, memcpy_s = 1e30;
  for (int r = 0; r < rounds; ++r) {
    snapshot_s = std::min(
        snapshot_s, seconds_of([&] { check(lc::take_snapshot(registry, *pool), "snapshot"); }));
    memcpy_s = std::min(memcpy_s, seconds_of([&] {
                          for (size_t i = 0; i < count; ++i)
                            std::memcpy(&copy[i * size], &memory[i * size], size);
                        }));
  }
  std::printf("%zu buffers of %zu B: registered in %.1f ms\n", count, size, register_s * 1e3);
  std::printf("%-34s %10.1f %10.1f %-5s %6.2fx\n", "  snapshot vs memcpy of each (ms)",
              snapshot_s * 1e3, memcpy_s * 1e3, "ms", snapshot_s / memcpy_s);
}

}  // namespace

int main() {
  uint64_t bytes = default_bytes;
  if (const char* env = std::getenv("LIFEBOAT_BENCH_BYTES"))
    bytes = std::strtoull(env, nullptr, 10);
  bytes = std::max(mib, bytes / mib * mib);
  const double mb = bytes / 1e6;
  const std::string dir = (lifeboat::test::build_tree() / "checkpoint-bench-data").string();
  check(lc::remove_tree(dir), "clean");
  auto st = check(lc::store::open({dir, 0, 1, 1}), "open store");

  std::vector<char> state(bytes);
  for (uint64_t i = 0; i < bytes; i += sizeof(uint64_t)) {
    uint64_t x = i * 0x9e3779b97f4a7c15ULL;
    std::memcpy(state.data() + i, &x, sizeof(x));
  }
  lc::state_registry registry;
  check(registry.add_host_buffer("state", state.data(), state.size()), "register");

  // Write bandwidth: best of `rounds`, alternating with dd. The parts of the
  // best round are printed beside it, to show where a slow save spends its time.
  double dd_best = 1e30, write_best = 1e30;
  write_parts best_parts;
  double retention = 0;
  int64_t step = 0;
  for (int r = 0; r < rounds; ++r) {
    auto dd = "dd if=/dev/zero of=" + dir + "/dd.bin bs=1M count=" + std::to_string(bytes / mib) +
              " conv=fsync status=none";
    dd_best = std::min(dd_best, seconds_of([&] {
                         if (std::system(dd.c_str()) != 0) die("dd failed");
                       }));
    ::unlink((dir + "/dd.bin").c_str());
    auto snap = check(st.take_snapshot(registry), "snapshot");
    ++step;
    write_parts parts;
    lc::checkpoint_info info;
    parts.shard = seconds_of([&] { info = check(st.write_shard(snap, step), "write"); });
    parts.commit = seconds_of([&] { check(st.write_manifest(step, step), "commit"); });
    retention =
        std::max(retention, seconds_of([&] { check(st.apply_retention(step), "retention"); }));
    parts.files = info.breakdown;
    parts.files_total = info.seconds;
    if (parts.total() < write_best) {
      write_best = parts.total();
      best_parts = parts;
    }
  }

  // Training stall: a plain memcpy into pre-faulted memory vs the async save
  // (staging memory is prepared at start-up and reused by every save).
  std::vector<char> copy(bytes, 1);
  double memcpy_s = 1e30;
  for (int r = 0; r < rounds; ++r)
    memcpy_s =
        std::min(memcpy_s, seconds_of([&] { std::memcpy(copy.data(), state.data(), bytes); }));
  double prepare_s = 0, first_stall = 0, stall = 0;
  {
    auto fresh_store = check(lc::store::open({dir, 0, 1, 1}), "open store");
    prepare_s = seconds_of([&] { check(fresh_store.prepare(registry), "prepare"); });
    lc::async_saver saver{fresh_store, nullptr};
    auto done = [](const caf::expected<lc::checkpoint_info>& r) { check(r, "async save"); };
    ++step;
    first_stall = seconds_of([&] { check(saver.save(registry, step, step, done), "save"); });
    check(saver.wait(save_timeout), "wait");
    stall = 1e30;
    for (int r = 0; r < rounds; ++r) {
      ++step;
      stall = std::min(stall,
                       seconds_of([&] { check(saver.save(registry, step, step, done), "save"); }));
      check(saver.wait(save_timeout), "wait");
    }
  }

  // Restore (verification included) vs a sequential read of the same data file.
  auto data_file = st.step_path(step) + "/" + lc::shard_data_name(0, 1);
  double read_cold = 1e30, restore_cold = 1e30, read_warm = 1e30, restore_warm = 1e30;
  for (int r = 0; r < rounds; ++r) {
    drop_cache(data_file);
    read_cold =
        std::min(read_cold, seconds_of([&] { sequential_read(data_file, copy.data(), bytes); }));
    drop_cache(data_file);
    restore_cold = std::min(restore_cold, seconds_of([&] {
                              auto info = check(st.restore_latest(registry), "restore");
                              if (!info) die("nothing restored");
                            }));
    read_warm =
        std::min(read_warm, seconds_of([&] { sequential_read(data_file, copy.data(), bytes); }));
    restore_warm =
        std::min(restore_warm, seconds_of([&] { check(st.restore_latest(registry), "restore"); }));
  }
  check(lc::remove_tree(dir), "clean up");

  std::printf("checkpoint_bench: %.0f MiB state, directory %s\n", bytes / double(mib), dir.c_str());
  std::printf("%-34s %10s %10s %-5s %7s\n", "", "lifeboat", "baseline", "", "ratio");
  print_row("write+fsync+commit vs dd (MB/s)", mb / write_best, mb / dd_best, "MB/s", 0.9, true);
  print_parts(best_parts, retention);
  print_row("training stall vs memcpy (ms)", stall * 1e3, memcpy_s * 1e3, "ms", 1.2, false);
  std::printf("%-34s %10.1f %10s %-5s (after prepare: %.1f ms at start-up)\n",
              "  first save's stall (ms)", first_stall * 1e3, "", "ms", prepare_s * 1e3);
  print_row("restore vs read, cold (MB/s)", mb / restore_cold, mb / read_cold, "MB/s", 0.9, true);
  print_row("restore vs read, warm (MB/s)", mb / restore_warm, mb / read_warm, "MB/s", 0.9, true);
  many_small_buffers();
  return 0;
}
