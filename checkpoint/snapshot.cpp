#include "checkpoint/snapshot.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "checkpoint/device_memory.hpp"
#include "messages/background_thread.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

namespace {

// Copies at least this large are split across threads: one core does not
// saturate memory bandwidth, and this copy is the training thread's whole stall.
constexpr std::size_t parallel_copy_threshold = std::size_t{64} << 20;
constexpr unsigned max_copy_threads = 4;

void copy_bytes(char* dst, const char* src, std::size_t size) {
  // The size first: hardware_concurrency() opens a file in /sys on each call,
  // and a model of 80,000 small tensors (20,000 parameters with Adam's state)
  // spent 0.5 s of every save's stall on it.
  unsigned threads =
      size < parallel_copy_threshold
          ? 1
          : std::min(max_copy_threads, std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 1) {
    std::memcpy(dst, src, size);
    return;
  }
  auto slice = (size + threads - 1) / threads;
  std::vector<std::thread> helpers;
  background_threads_block_signals block;
  for (unsigned i = 1; i < threads; ++i) {
    auto begin = std::min(size, i * slice);
    auto len = std::min(slice, size - begin);
    helpers.emplace_back([=] { std::memcpy(dst + begin, src + begin, len); });
  }
  std::memcpy(dst, src, std::min(slice, size));
  for (auto& t : helpers) t.join();
}

}  // namespace

caf::expected<snapshot> take_snapshot(const state_registry& registry, staging_pool& pool) {
  // A registration that no longer stands for the state would save memory the
  // state left: no checkpoint rather than a stale one.
  if (auto err = registry.run_checks()) return err;
  snapshot result;
  // Callback state has no size until it is saved, so save it first.
  std::vector<std::string> saved;
  uint64_t total = 0;
  for (auto& buf : registry.buffers()) {
    snapshot_entry entry{buf.name, buf.kind, total, buf.size};
    if (buf.kind == buffer_kind::callbacks) {
      saved.push_back(buf.save());
      entry.size = saved.back().size();
    }
    total += entry.size;
    result.entries.push_back(std::move(entry));
  }
  auto lease = pool.acquire(total, registry.has_device_buffers());
  if (!lease) return std::move(lease.error());
  result.bytes = std::move(*lease);
  auto saved_iter = saved.begin();
  for (size_t i = 0; i < registry.buffers().size(); ++i) {
    auto& buf = registry.buffers()[i];
    auto& entry = result.entries[i];
    char* dst = result.bytes.data() + entry.offset;
    switch (buf.kind) {
      case buffer_kind::host:
        copy_bytes(dst, static_cast<const char*>(buf.data), entry.size);
        break;
      case buffer_kind::device:
        if (auto err = device::copy_to_host(dst, buf.data, entry.size))
          return wrap_error(errc::unavailable, "snapshot of device buffer '" + buf.name + "'", err);
        break;
      case buffer_kind::callbacks:
        if (entry.size > 0) std::memcpy(dst, saved_iter->data(), entry.size);
        ++saved_iter;
        break;
    }
  }
  return result;
}

}  // namespace lifeboat::checkpoint
