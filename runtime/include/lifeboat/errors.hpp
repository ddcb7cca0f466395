#pragma once

#include <stdexcept>
#include <string>

namespace lifeboat {

/// Bad configuration or environment, raised by the handler's constructor
/// before anything is written.
class config_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A checkpoint that could not be read back or checked (corrupt, not
/// committed, or a directory that cannot be read), raised by
/// restore_checkpoint, verify_checkpoint and committed_steps.
class checkpoint_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Raised by `run` on every worker when any worker (this one included) failed
/// or was lost; `what()` names the origin as "rank N". An origin of -1 means
/// the service reported the failure (a failed barrier) and `message`, from
/// the service, names the rank, or that a coordination service outside every
/// worker was lost. Where rank 0's process hosts the service, losing the
/// service is losing rank 0, the origin.
class peer_error : public std::runtime_error {
 public:
  peer_error(int origin_rank, const std::string& message, bool lost)
      : std::runtime_error(origin_rank < 0 ? message
                                           : "rank " + std::to_string(origin_rank) +
                                                 (lost ? " lost: " : ": ") + message),
        origin_rank_(origin_rank),
        lost_(lost) {}

  int origin_rank() const { return origin_rank_; }
  bool lost() const { return lost_; }

 private:
  int origin_rank_;
  bool lost_;
};

/// The base of what a step throws that is no failure, as a language binding
/// throws it for Python's SystemExit (the worker ends of its own will) and
/// StopIteration (the step's data ran out): `run` lets it pass as it is,
/// neither reported to the peers as a failure nor counted as a completed step.
class step_exit {
 public:
  virtual ~step_exit() = default;
};

}  // namespace lifeboat
