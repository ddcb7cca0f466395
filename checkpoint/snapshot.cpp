#include "checkpoint/snapshot.hpp"

#include <cstring>

#include "checkpoint/device_memory.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {

caf::expected<snapshot> take_snapshot(const state_registry& registry, staging_pool& pool) {
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
        if (entry.size > 0) std::memcpy(dst, buf.data, entry.size);
        break;
      case buffer_kind::device:
        if (auto err = device::copy_to_host(dst, buf.data, entry.size))
          return make_error(errc::unavailable,
                            "snapshot of device buffer '" + buf.name + "': " + describe(err));
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
