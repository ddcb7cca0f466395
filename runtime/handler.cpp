#include "lifeboat/handler.hpp"

#include "runtime/worker_runtime.hpp"

namespace lifeboat {

preemption_checkpoint_handler::preemption_checkpoint_handler(checkpoint_state& state,
                                                             std::string checkpoint_dir,
                                                             termination_config config)
    : runtime_(std::make_unique<worker_runtime>(state, std::move(checkpoint_dir), std::move(config),
                                                completed_step_, action_step_, in_step_)) {}

preemption_checkpoint_handler::~preemption_checkpoint_handler() {
  // A child forked from the worker without exec (os.fork() inside the
  // handler's with-block, whose exit then unwinds there too) holds a copy of
  // the runtime whose threads live only in the worker: ending it would wait
  // for them forever. The child leaves it; the worker ends its own.
  if (runtime_ && runtime_->forked_away()) {
    (void)runtime_.release();
    return;
  }
  // An exception from outside run() leaves the training loop: the other
  // workers train on and would wait for this rank at their next save or
  // step, and this one for them at the end, until the hang bound.
  if (runtime_ && std::uncaught_exceptions() > exceptions_at_construction_)
    runtime_->report_left_by_exception(
        "an exception raised outside run() unwound past the handler");
}

void preemption_checkpoint_handler::report_left_by_exception(const std::string& what) {
  runtime_->report_left_by_exception(what);
}

void preemption_checkpoint_handler::on_action_step(int64_t step) { runtime_->on_action_step(step); }

void preemption_checkpoint_handler::refuse_step(int64_t step) const {
  throw config_error("step_completed(" + std::to_string(step) +
                     "): steps must not go back, the last completed step is " +
                     std::to_string(completed_step_.load(std::memory_order_relaxed)));
}

void preemption_checkpoint_handler::on_step_failed(std::exception_ptr error) {
  runtime_->on_step_failed(std::move(error));
}

void preemption_checkpoint_handler::report_error(std::exception_ptr error) {
  runtime_->report_error(std::move(error));
}

void preemption_checkpoint_handler::barrier(const std::string& name,
                                            std::chrono::milliseconds timeout) {
  runtime_->barrier(name, timeout);
}

int preemption_checkpoint_handler::rank() const { return runtime_->rank(); }

int preemption_checkpoint_handler::world_size() const { return runtime_->world_size(); }

bool preemption_checkpoint_handler::failed() const { return runtime_->failed(); }

preemption_checkpoint_handler::scope::~scope() {
  // Left by an exception while a worker failed: end the process with the
  // failure code, as the contract says, whatever the exception was.
  if (std::uncaught_exceptions() > exceptions_ && handler_.runtime_->failed())
    handler_.runtime_->exit_after_failure();
}

}  // namespace lifeboat
