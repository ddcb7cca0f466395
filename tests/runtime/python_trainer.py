"""A worker for python_binding_test, on the Python module's public API only.

It trains a model whose state records every step it applied and says what
happens on stdout, one line per event (the test synchronises on them):

  restored=N rank=R          total_run_calls after construction
  step=N                     step N completed (before lifeboat looks at it)
  saving=N                   lifeboat snapshots the state at step N
  saved=N                    save_fn called at step N (--save-fn)
  error=TEXT origin=R        run raised TEXT; R: the rank it names
  exiting=N                  step N calls sys.exit(0) (--exit-step)
  exit_fn=N                  exit_fn called after the checkpoint of step N (--exit-fn)
  preempted=N                main caught exit_fn's Preempted (--exit-fn raise)
  run_after_exit_fn=TEXT     what run raised after that
  (a traceback)              EvaluationError ended the process (--raise-outside-*)
  config_error=TEXT          construction refused the configuration
  done total=N applied=N     training finished (applied: steps run once each, in order)

Exit codes: 0 finished, 1 EvaluationError, 2 configuration error, 3 failure, 42
(lifeboat) after a preemption checkpoint; with --exit-fn 7 (sys.exit in exit_fn) or
5 (main caught exit_fn's Preempted).
"""

import argparse
import array
import contextlib
import os
import signal
import sys
import time

import lifeboat

CONFIG_EXIT_CODE = 2
FAILURE_EXIT_CODE = 3
# --lockstep's barriers per step; a failed or hung peer ends them long before.
EXIT_FN_CODE = 7
PREEMPTED_EXIT_CODE = 5
LOCKSTEP_BARRIER_TIMEOUT = 60.0


def say(line):
    # One write(2) per line, unbuffered: lifeboat's log shares the pipe (print
    # wrote a line and its newline apart, and a log line landed between), and
    # lifeboat may end the process right after a step.
    os.write(sys.stdout.fileno(), (line + "\n").encode())


class EvaluationError(Exception):
    """Raised between steps, outside run (--raise-outside-*): the trainer lets
    it end the process, as an error in a trainer's own code would."""


class Preempted(Exception):
    """Raised by exit_fn (--exit-fn raise): main catches it to end the process
    its own way, as a trainer that cleans up first would."""


def hang_forever():
    """The step that never ends, its runtime alive (a hang)."""
    while True:
        time.sleep(3600)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--step-ms", type=int, default=0)
    parser.add_argument("--self-signal-step", type=int, default=-1)
    parser.add_argument("--fail-rank", type=int, default=-1)
    parser.add_argument("--fail-step", type=int, default=-1)
    parser.add_argument("--watcher-after", type=int, default=-1)
    parser.add_argument("--watcher-says", default=None,
                        help="the watcher returns this text once it fires and '' before, "
                             "not True and False")
    parser.add_argument("--grace-period", type=float, default=None)
    parser.add_argument("--save-fn", action="store_true")
    parser.add_argument("--save-fn-fails-rank", type=int, default=-1,
                        help="with --save-fn, this rank's save_fn raises OSError (a full disk)")
    parser.add_argument("--watcher-raises", action="store_true",
                        help="the watcher raises FileNotFoundError at every poll")
    parser.add_argument("--lockstep", action="store_true")
    parser.add_argument("--lockstep-end", action="store_true",
                        help="the barrier at the end of each step, as DDP's all-reduce in "
                             "its backward: a rank stuck before it holds the others in it")
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--hang-step", type=int, default=-1)
    parser.add_argument("--hang-timeout", type=float, default=None)
    parser.add_argument("--uneven-rank", type=int, default=-1,
                        help="this rank runs one step more than --steps (uneven data shards)")
    parser.add_argument("--hang-outside", action="store_true",
                        help="the hang comes between steps, before run (a stuck data loader)")
    parser.add_argument("--exit-step", type=int, default=-1,
                        help="every rank's step N calls sys.exit(0), as early stopping would")
    parser.add_argument("--block-sigterm", action="store_true",
                        help="block SIGTERM on the main thread once lifeboat's handler is in place")
    parser.add_argument("--replace-sigterm", action="store_true",
                        help="install a SIGTERM handler of its own once lifeboat's is in place")
    parser.add_argument("--raise-outside-rank", type=int, default=-1)
    parser.add_argument("--raise-outside-step", type=int, default=-1,
                        help="after this step, that rank raises EvaluationError outside run, "
                             "which ends the process")
    parser.add_argument("--exit-fn", choices=["exit", "raise"], default=None,
                        help="exit_fn calls sys.exit(7) (exit) or raises Preempted (raise)")
    parser.add_argument("--no-with", action="store_true",
                        help="the handler is kept in a variable, never entered with `with`, "
                             "and the loop is in no watch_preemption_scope")
    opts = parser.parse_args()

    # The model: [steps applied, last step]; a step is applied only when it
    # is the one after the last, so a lost or repeated step shows at the end.
    model = array.array("q", [0, 0])
    state = lifeboat.CheckpointState()
    state.add_buffer("model", model)
    state.add_callbacks("probe", lambda: (say(f"saving={model[1]}"), b"probe")[1],
                        lambda data: None)

    handler = None

    def watcher():
        # On lifeboat's polling thread: true once this run did enough steps.
        h = handler
        if opts.watcher_raises:
            raise FileNotFoundError("/run/notice")
        fired = h is not None and opts.watcher_after >= 0 and h.total_run_calls >= opts.watcher_after
        if opts.watcher_says is not None:
            return opts.watcher_says if fired else ""
        return fired

    def save_fn(step, checkpoint_dir):
        # The trainer's own checkpoint: a marker per rank and step.
        if handler.rank == opts.save_fn_fails_rank:
            raise OSError(28, "No space left on device")
        say(f"saved={step}")
        with open(os.path.join(checkpoint_dir, f"user-rank-{handler.rank}-step-{step}"), "w") as f:
            f.write(f"{step}\n")

    def exit_fn():
        say(f"exit_fn={handler.total_run_calls}")
        if opts.exit_fn == "exit":
            sys.exit(EXIT_FN_CODE)
        raise Preempted(f"preempted after step {handler.total_run_calls}")

    config = lifeboat.TerminationConfig(termination_watcher_fn=watcher, grace_period=opts.grace_period,
                                        save_fn=save_fn if opts.save_fn else None,
                                        exit_fn=exit_fn if opts.exit_fn else None,
                                        notice_sources=[], poll_interval=0.05,
                                        hang_timeout=opts.hang_timeout)
    try:
        handler = lifeboat.PreemptionCheckpointHandler(state, opts.checkpoint_dir, config)
    except lifeboat.ConfigError as e:
        say(f"config_error={e}")
        return CONFIG_EXIT_CODE
    say(f"restored={handler.total_run_calls} rank={handler.rank}")
    if opts.block_sigterm:
        # What a library that masks signals on the main thread does: with
        # lifeboat's threads blocking every signal, no thread takes SIGTERM.
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    if opts.replace_sigterm:
        # What a framework's own signal handling does behind lifeboat's back.
        signal.signal(signal.SIGTERM, lambda signo, frame: say("own_sigterm"))

    def step():
        n = handler.total_run_calls + 1
        if opts.lockstep:
            handler.barrier(f"step/{n}", LOCKSTEP_BARRIER_TIMEOUT)
        if handler.rank == opts.hang_rank and n == opts.hang_step and not opts.hang_outside:
            hang_forever()
        if handler.rank == opts.fail_rank and n == opts.fail_step:
            raise ValueError(f"injected failure at step {n}")
        if n == opts.exit_step:
            say(f"exiting={n}")
            sys.exit(0)
        if n == model[1] + 1:
            model[0] += 1
        model[1] = n
        time.sleep(opts.step_ms / 1000)
        if opts.lockstep_end:
            handler.barrier(f"step-end/{n}", LOCKSTEP_BARRIER_TIMEOUT)
        say(f"step={n}")
        if n == opts.self_signal_step:
            os.kill(os.getpid(), signal.SIGTERM)

    steps = opts.steps + (1 if handler.rank == opts.uneven_rank else 0)
    with handler if not opts.no_with else contextlib.nullcontext():
        try:
            with handler.watch_preemption_scope() if not opts.no_with else contextlib.nullcontext():
                try:
                    while handler.total_run_calls < steps:
                        if (handler.rank == opts.hang_rank and opts.hang_outside
                                and handler.total_run_calls + 1 == opts.hang_step):
                            hang_forever()
                        handler.run(step)
                        if (handler.rank == opts.raise_outside_rank
                                and handler.total_run_calls == opts.raise_outside_step):
                            raise EvaluationError(f"evaluation broke after step "
                                                  f"{handler.total_run_calls}")
                except (EvaluationError, Preempted):
                    raise
                except Exception as e:
                    say(f"error={e} origin={getattr(e, 'origin_rank', handler.rank)}")
                    raise
        except EvaluationError:
            raise
        except Preempted:
            say(f"preempted={handler.total_run_calls}")
            # A trainer that goes on anyway is told: the worker left the cluster.
            try:
                handler.run(step)
            except RuntimeError as e:
                say(f"run_after_exit_fn={e}")
            return PREEMPTED_EXIT_CODE
        except Exception:
            # A peer's failure ends the process in the scope; this worker's own
            # gets here, as it would in a trainer's main.
            return FAILURE_EXIT_CODE
        say(f"done total={handler.total_run_calls} applied={model[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
