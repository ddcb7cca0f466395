#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lifeboat::checkpoint {

/// A memory tier on a RAM-backed file system (tmpfs: /dev/shm) takes host
/// memory that nothing reclaims: beyond what the host, or the process's
/// cgroup (a container's limit, which counts tmpfs pages too), can spare, a
/// save would push the trainer into the OOM killer. The tier leaves this
/// share of the memory free, and at least ram_reserve_floor.
constexpr uint64_t ram_reserve_percent = 10;
constexpr uint64_t ram_reserve_floor = uint64_t{1} << 30;

/// Memory that is free to take, out of a total, in bytes.
struct memory_state {
  uint64_t available = 0;
  uint64_t total = 0;
};

/// MemAvailable and MemTotal of /proc/meminfo's text; none when either is missing.
std::optional<memory_state> parse_meminfo(const std::string& text);

/// A cgroup's limit and usage: cgroup v2's memory.max and memory.current, or
/// v1's memory.limit_in_bytes and memory.usage_in_bytes. None for no limit
/// ("max", or v1's page-counter maximum) or text that is no number.
std::optional<memory_state> parse_cgroup_memory(const std::string& limit, const std::string& usage);

/// What a tier may still take of `state`: its available memory less the
/// reserve (ram_reserve_percent of the total, at least ram_reserve_floor).
uint64_t ram_room(const memory_state& state);

/// ram_room of this host and of this process's cgroup (v2, else v1's memory
/// controller), the smaller; none when neither can be read.
std::optional<uint64_t> host_ram_room();

/// Whether `dir` lies on a RAM-backed file system (tmpfs, ramfs).
bool ram_backed(const std::string& dir);

}  // namespace lifeboat::checkpoint
