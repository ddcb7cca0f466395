#pragma once

// coordination_bench's worker side: the processes the bench starts as this
// program again with --worker. Each function is a whole process's work.

#include <cstdint>

namespace lifeboat::bench::coordination_bench {

// --worker echo PORT: echoes ping_bytes messages until EOF.
int run_echo_worker(uint16_t port);

// --worker kv PORT RANK WORLD_SIZE: joins, prints "joined", then
// answers one stdin line with stdout lines:
//   get KEY       -> "waiting" once the get is registered at the service,
//                    then "got NS" (steady_clock when the get returned)
//   barrier NAME  -> "barrier ENTRY_NS EXIT_NS" (participants: ranks 1..N)
//   exit          -> leaves and exits
// Any failure answers "err WHAT".
int run_kv_worker(uint16_t port, int rank, int world_size);

}  // namespace lifeboat::bench::coordination_bench
