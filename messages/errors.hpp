#pragma once

#include <cstdint>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>

namespace lifeboat {

/// Every expected failure in lifeboat, as a CAF error category. Callers tell
/// them apart with `err == make_error(errc::already_exists)` or `err.code()`.
enum class errc : uint8_t {
  ok = 0,
  already_exists,    // insert-if-absent found the key
  not_found,         // try-get / manifest / shard missing
  timeout,           // a blocking call ran past its deadline
  cancelled,         // a blocking call was cancelled
  refused,           // authentication, duplicate rank, stale incarnation
  version_mismatch,  // wire or file schema versions differ
  peer_error,        // a peer reported an error
  peer_lost,         // a peer stopped heartbeating
  corrupt,           // a checksum or parse failure on restore
  io_error,          // a file-system call failed
  invalid_config,    // bad environment, flags or TerminationConfig
  invalid_argument,  // a malformed request
  unavailable,       // a service or device is not there (no GPU, no coordinator)
  shutting_down,     // the actor system is going away
  hung,              // a peer's training loop completed no step for the hang timeout
};

/// Exit codes of DESIGN's table that lifeboat itself chooses: a worker (a peer
/// or this one) failed or was lost; and the default after a committed
/// preemption checkpoint ("restart me"), which a platform or the launcher may change.
constexpr int failure_exit_code = 3;
constexpr int default_restart_code = 42;
/// A configuration that cannot work (README's table): bad flags or
/// environment, a checkpoint of another world size.
constexpr int config_exit_code = 2;
constexpr int max_exit_code = 255;

/// Whether `code` may be a restart code: an exit status that means nothing
/// else. TerminationConfig, LIFEBOAT_RESTART_CODE and lifeboat-launch
/// --restart-code all follow this one rule (restart_code_rule says it). Why
/// not 1 or 2: a restart after the restart code counts against no
/// --max-restarts, so a crash (Python exits 1 on an uncaught exception) or a
/// configuration error (2) taken for it restarted the job for ever.
constexpr int min_restart_code = failure_exit_code + 1;
constexpr bool is_restart_code(int64_t code) {
  return code >= min_restart_code && code <= max_exit_code;
}

/// The rule of is_restart_code, for the refusals.
constexpr const char* restart_code_rule =
    "an exit code in [4, 255] (0 is a job done, 1 what Python exits with on an uncaught "
    "exception, 2 a configuration that cannot work, 3 a failure)";
static_assert(min_restart_code == 4 && max_exit_code == 255 && failure_exit_code == 3 &&
                  config_exit_code == 2,
              "restart_code_rule names the codes: say them again there");

/// The category atom under which lifeboat errors are registered with CAF.
using error_category_atom = caf::atom_constant<caf::atom("lifeboat")>;

const char* to_string(errc x);

caf::error make_error(errc x);
caf::error make_error(errc x, std::string context);

/// Renders a CAF error readably, whichever category it belongs to.
std::string describe(const caf::error& err);

/// `inner` as code `x` with `context` in front: describes as "x: context:
/// inner", the inner code left out where it is `x` ("io_error: unusable
/// checkpoint directory: mkdir D: ...", not "...: io_error: mkdir D: ...").
caf::error wrap_error(errc x, const std::string& context, const caf::error& inner);

}  // namespace lifeboat
