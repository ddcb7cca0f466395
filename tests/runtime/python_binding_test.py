"""The Python module end to end: python_trainer.py workers, real signals, real
sockets on 127.0.0.1, real checkpoint files. The tests wait on the workers'
output lines with deadlines, never on sleeps.

Run by ctest with PYTHONPATH naming the directory of the built module, which
the checks of the module's own argument handling import, and
LIFEBOAT_COORDINATOR_PROGRAM the built lifeboat-coordinator.
"""

import array
import multiprocessing
import os
import pathlib
import secrets
import select
import shutil
import signal
import subprocess
import sys
import time
import unittest

import lifeboat

import loopback_ports
import output_lines
import scratch_case

TRAINER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_trainer.py")
RESTART_EXIT_CODE = 42
FAILURE_EXIT_CODE = 3
CONFIG_EXIT_CODE = 2
# Generous bounds: the tests share two cores with other tests.
EVENT_TIMEOUT = 30
RUN_TIMEOUT = 60
STEPS = 30


class Worker(output_lines.Process):
    """One python_trainer.py process."""

    def __init__(self, args, env):
        super().__init__([sys.executable, TRAINER] + args, env)

    def wait_line(self, prefix, timeout=EVENT_TIMEOUT):
        return super().wait_line(prefix, timeout)

    def finish(self, timeout=RUN_TIMEOUT):
        return super().finish(timeout)

    def values(self, key):
        return [int(l[len(key) + 1:].split()[0]) for l in self.lines if l.startswith(key + "=")]


class Cluster:
    """`world` workers sharing a checkpoint directory (world 0: one, in local mode);
    with `service` (port, token), they join that coordination service (hosted by
    another process) instead of rank 0's."""

    def __init__(self, world, ckpt, args, incarnation=0, service=None):
        port, token = service or (loopback_ports.free_ports(), secrets.token_hex(8))
        self.workers = []
        for rank in range(max(world, 1)):
            env = {k: v for k, v in os.environ.items() if not k.startswith("LIFEBOAT_")}
            env["LIFEBOAT_PLATFORM"] = "generic"
            if world > 0:
                env.update(LIFEBOAT_RANK=str(rank), LIFEBOAT_WORLD_SIZE=str(world),
                           LIFEBOAT_COORDINATOR=f"127.0.0.1:{port}",
                           LIFEBOAT_CLUSTER_TOKEN=token,
                           LIFEBOAT_RESTART_COUNT=str(incarnation),
                           LIFEBOAT_COORDINATOR_EXTERNAL="1" if service else "0")
            self.workers.append(Worker(["--checkpoint-dir", ckpt] + args, env))

    def finish(self):
        return [w.finish() for w in self.workers]

    def transcript(self):
        return "\n".join(f"---- rank {r} ----\n{w.transcript()}" for r, w in enumerate(self.workers))


class PythonBindingTest(scratch_case.ScratchCase):
    prefix = "lifeboat-python-test-"

    def preempted_then_resumed(self, world, first_args, signal_rank=None):
        """Runs until the notice, checks the single agreed save, restarts and
        checks that every step ran exactly once."""
        args = ["--steps", str(STEPS), "--step-ms", "10"]
        first = Cluster(world, self.ckpt, args + first_args)
        if signal_rank is not None:
            self.assertTrue(first.workers[signal_rank].wait_line("step=3"), first.transcript())
            first.workers[signal_rank].proc.send_signal(signal.SIGTERM)
        codes = first.finish()
        self.assertEqual(codes, [RESTART_EXIT_CODE] * len(codes), first.transcript())
        saves = {tuple(w.values("saving")) for w in first.workers}
        self.assertEqual(len(saves), 1, first.transcript())
        (saved,) = saves.pop()
        self.assertEqual(self.committed_steps(), [saved])

        second = Cluster(world, self.ckpt, args, incarnation=1)
        codes = second.finish()
        self.assertEqual(codes, [0] * len(codes), second.transcript())
        for w in second.workers:
            self.assertEqual(w.values("restored"), [saved], second.transcript())
            self.assertEqual(w.wait_line("done"), f"done total={STEPS} applied={STEPS}")

    def test_a_self_sigterm_in_local_mode_saves_exits_42_and_the_rerun_finishes(self):
        self.preempted_then_resumed(0, ["--self-signal-step", "7"])

    def test_a_sigterm_to_one_of_two_workers_saves_both_at_one_step(self):
        self.preempted_then_resumed(2, [], signal_rank=1)

    def test_a_sigterm_that_every_thread_blocks_is_a_notice_all_the_same(self):
        # Before, it stayed pending: the worker trained through it to the end.
        # Steps of 150 ms: the watcher looks once a second, and the run's 30
        # steps last 4.5 s.
        self.preempted_then_resumed(2, ["--block-sigterm", "--step-ms", "150"], signal_rank=1)

    def test_a_termination_watcher_fn_is_called_from_lifeboats_thread(self):
        self.preempted_then_resumed(2, ["--watcher-after", "5"])

    def test_a_termination_watcher_fn_result_counts_as_pythons_if_takes_it(self):
        # It returns '' and then the notice it found, as the reference's
        # `if self._termination_watcher_fn():` takes them; before, a string
        # was a warning at every poll and never a notice.
        self.preempted_then_resumed(2, ["--watcher-after", "5", "--watcher-says", "maintenance"])

    def test_a_failing_step_raises_peer_error_naming_its_rank_on_every_worker(self):
        cluster = Cluster(2, self.ckpt, ["--steps", str(STEPS), "--step-ms", "10",
                                         "--fail-rank", "1", "--fail-step", "5"])
        codes = cluster.finish()
        self.assertEqual(codes, [FAILURE_EXIT_CODE] * 2, cluster.transcript())
        for w in cluster.workers:
            line = w.wait_line("error=", timeout=0)
            self.assertIsNotNone(line, cluster.transcript())
            self.assertIn("injected failure at step 5", line)
            self.assertTrue(line.endswith(" origin=1"), line)
        self.assertEqual(self.committed_steps(), [])
        # The failing step's traceback, on its rank only: the scope ends the
        # process before Python would print it, and it printed none before.
        self.assertIn('raise ValueError(f"injected failure at step {n}")',
                      cluster.workers[1].transcript())
        self.assertNotIn("Traceback", cluster.workers[0].transcript())

    def expect_an_error_outside_run_to_reach_every_worker(self, args, own_exit_code):
        # Rank 1's own code raises between its steps 5 and 6 and ends its
        # process; rank 0 waits for it in step 6's barrier (a collective).
        # Before, rank 1 met the others at the end instead (its handler closed
        # gracefully), rank 0 waited in its step until the hang bound, and the
        # job failed as a hang of rank 1, the error itself unsaid.
        cluster = Cluster(2, self.ckpt, ["--steps", str(STEPS), "--step-ms", "10", "--lockstep",
                                         "--raise-outside-rank", "1",
                                         "--raise-outside-step", "5"] + args)
        codes = cluster.finish()
        self.assertEqual(codes, [FAILURE_EXIT_CODE, own_exit_code], cluster.transcript())
        line = cluster.workers[0].wait_line("error=", timeout=0)
        self.assertIsNotNone(line, cluster.transcript())
        self.assertIn("EvaluationError: evaluation broke after step 5", line)
        self.assertTrue(line.endswith(" origin=1"), line)
        # Where it was raised: the traceback, on the rank that raised it.
        own = cluster.workers[1].transcript()
        self.assertIn("Traceback (most recent call last)", own)
        self.assertIn('raise EvaluationError(f"evaluation broke after step "', own)
        self.assertIn("EvaluationError: evaluation broke after step 5", own)

    def test_an_error_outside_run_leaving_the_scope_reaches_every_worker_and_exits_3(self):
        # Before, the scope let it pass and Python ended rank 1 with 1.
        self.expect_an_error_outside_run_to_reach_every_worker([], FAILURE_EXIT_CODE)

    def test_an_uncaught_error_outside_run_reaches_every_worker_without_a_with_block(self):
        # Neither a scope nor __exit__ sees it: lifeboat's sys.excepthook does,
        # and Python's exit code ends rank 1.
        self.expect_an_error_outside_run_to_reach_every_worker(["--no-with"], 1)

    def test_a_hung_step_ends_every_worker_and_its_python_stack_is_logged(self):
        # Rank 1's step sleeps forever at step 5 while rank 0 waits for it at
        # the next step's barrier.
        cluster = Cluster(2, self.ckpt, ["--steps", str(STEPS), "--step-ms", "10", "--lockstep",
                                         "--hang-rank", "1", "--hang-step", "5",
                                         "--hang-timeout", "1.5"])
        codes = cluster.finish()
        self.assertEqual(codes, [FAILURE_EXIT_CODE] * 2, cluster.transcript())
        line = cluster.workers[0].wait_line("error=", timeout=0)
        self.assertIsNotNone(line, cluster.transcript())
        self.assertIn("rank 1: hang: no step completed for", line)
        hung = "\n".join(cluster.workers[1].lines)
        # faulthandler's dump of the Python threads, then lifeboat's native one.
        self.assertIn("most recent call first", hung, cluster.transcript())
        self.assertIn("in hang_forever", hung, cluster.transcript())
        self.assertIn("native stack of the training thread", hung, cluster.transcript())

    def test_a_rank_stuck_outside_its_steps_after_a_peers_failure_logs_its_python_stack(self):
        # Hang detection off: rank 1's training thread, stuck before its step
        # 3 (as in a data loader that never answers), never returns to lifeboat
        # to raise rank 0's failure at step 6; its exit controller ends it
        # after its bound, with the stack.
        cluster = Cluster(2, self.ckpt, ["--steps", str(STEPS), "--step-ms", "50",
                                         "--hang-rank", "1", "--hang-step", "3", "--hang-outside",
                                         "--hang-timeout", "0", "--fail-rank", "0",
                                         "--fail-step", "6"])
        codes = cluster.finish()
        self.assertEqual(codes, [FAILURE_EXIT_CODE] * 2, cluster.transcript())
        stuck = "\n".join(cluster.workers[1].lines)
        self.assertIn("the trainer did not exit in time (rank 0 failed: ValueError: injected "
                      "failure at step 6)", stuck, cluster.transcript())
        self.assertIn("the stack of this rank's training thread follows", stuck,
                      cluster.transcript())
        self.assertIn("in hang_forever", stuck, cluster.transcript())
        self.assertIn("native stack of the training thread", stuck, cluster.transcript())

    def test_a_rank_stuck_between_steps_while_the_others_wait_in_theirs_is_named_hung(self):
        # The peers wait in step 5's closing barrier (as DDP's do in their
        # all-reduce) for rank 1, stuck before its step 5 (as in a data loader):
        # no rank completes step 5, and only rank 1 is outside its step.
        cluster = Cluster(3, self.ckpt, ["--steps", str(STEPS), "--step-ms", "10",
                                         "--lockstep-end", "--hang-rank", "1", "--hang-step", "5",
                                         "--hang-outside", "--hang-timeout", "1.5"])
        codes = cluster.finish()
        self.assertEqual(codes, [FAILURE_EXIT_CODE] * 3, cluster.transcript())
        for rank in (0, 2):
            line = cluster.workers[rank].wait_line("error=", timeout=0)
            self.assertIsNotNone(line, cluster.transcript())
            self.assertIn("rank 1: hang: no rank completed a step for", line)
            self.assertIn("this rank was between steps while the others waited in theirs", line)
            self.assertTrue(line.endswith(" origin=1"), line)
        self.assertIn("hang_forever", "\n".join(cluster.workers[1].lines),
                      cluster.transcript())

    def test_a_rank_whose_loop_ended_while_a_peer_waits_for_its_next_step_is_named(self):
        # Rank 1 runs one step more than rank 0 and waits in that step's
        # closing barrier for rank 0, whose training loop has ended.
        cluster = Cluster(2, self.ckpt, ["--steps", "6", "--step-ms", "10", "--lockstep-end",
                                         "--uneven-rank", "1", "--hang-timeout", "1.5"])
        codes = cluster.finish()
        # Rank 0, named hung after its loop ended, exits 3 too (it raced its
        # own normal end, exit 0, before).
        self.assertEqual(codes, [FAILURE_EXIT_CODE] * 2, cluster.transcript())
        self.assertIn("this rank is where the job's failure began",
                      "\n".join(cluster.workers[0].lines), cluster.transcript())
        line = cluster.workers[1].wait_line("error=", timeout=0)
        self.assertIsNotNone(line, cluster.transcript())
        self.assertIn("rank 0: hang: no rank completed a step for", line)
        self.assertIn("(every rank's last step 6); this rank ended its training loop while the "
                      "others waited in their next step", line)
        self.assertTrue(line.endswith(" origin=0"), line)

    def test_every_rank_stuck_in_its_step_fails_the_job_as_hung_with_every_stack_logged(self):
        # Rank 1 hangs inside step 5 before its closing barrier; its peers wait
        # in theirs: every rank is in its step, and none can be told apart.
        cluster = Cluster(3, self.ckpt, ["--steps", str(STEPS), "--step-ms", "10",
                                         "--lockstep-end", "--hang-rank", "1", "--hang-step", "5",
                                         "--hang-timeout", "1.5"])
        codes = cluster.finish()
        self.assertEqual(codes, [FAILURE_EXIT_CODE] * 3, cluster.transcript())
        for rank in range(3):
            out = "\n".join(cluster.workers[rank].lines)
            self.assertIn("hang: no rank completed a step for", out, cluster.transcript())
            self.assertIn("while every rank was in its next step", out, cluster.transcript())
            self.assertIn("native stack of the training thread", out, cluster.transcript())
        self.assertIn("hang_forever", "\n".join(cluster.workers[1].lines),
                      cluster.transcript())
        # The peers' stacks show where they waited (the step's closing
        # barrier), written before the failure released them from it.
        for rank in (0, 2):
            frames = [l.strip() for l in cluster.workers[rank].lines
                      if l.strip().startswith("File ")]
            self.assertTrue(any(f.endswith(" in step") for f in frames), cluster.transcript())

    def test_a_save_fn_saves_instead_of_lifeboat_once_per_worker(self):
        os.makedirs(self.ckpt)
        cluster = Cluster(2, self.ckpt, ["--steps", str(STEPS), "--step-ms", "10", "--save-fn"])
        self.assertTrue(cluster.workers[0].wait_line("step=3"), cluster.transcript())
        cluster.workers[0].proc.send_signal(signal.SIGTERM)
        self.assertEqual(cluster.finish(), [RESTART_EXIT_CODE] * 2, cluster.transcript())
        saves = [w.values("saved") for w in cluster.workers]
        self.assertEqual(len(saves[0]), 1, cluster.transcript())
        self.assertEqual(saves[1], saves[0], cluster.transcript())
        step = saves[0][0]
        self.assertEqual(sorted(os.listdir(self.ckpt)),
                         [f"user-rank-{r}-step-{step}" for r in range(2)])

    def test_a_save_fn_that_raises_fails_its_step_as_one_line_to_the_peers(self):
        # Rank 1's disk is full: its save_fn raises OSError, raised as it was
        # on rank 1, and rank 0 gets one line; before, the line carried
        # pybind11's "At: ..." traceback, and rank 1 raised RuntimeError.
        os.makedirs(self.ckpt)
        cluster = Cluster(2, self.ckpt, ["--steps", str(STEPS), "--step-ms", "10", "--save-fn",
                                         "--save-fn-fails-rank", "1"])
        self.assertTrue(cluster.workers[0].wait_line("step=3"), cluster.transcript())
        cluster.workers[0].proc.send_signal(signal.SIGTERM)
        self.assertEqual(cluster.finish(), [FAILURE_EXIT_CODE] * 2, cluster.transcript())
        self.assertEqual(cluster.workers[1].wait_line("error=", timeout=0),
                         "error=[Errno 28] No space left on device origin=1")
        self.assertEqual(cluster.workers[0].wait_line("error=", timeout=0),
                         "error=rank 1: OSError: [Errno 28] No space left on device origin=1")
        self.assertNotIn("At:", cluster.transcript())

    def test_what_a_termination_watcher_fn_raises_is_logged_on_one_line(self):
        cluster = Cluster(0, self.ckpt, ["--steps", "100000", "--step-ms", "10",
                                         "--watcher-raises"])
        worker = cluster.workers[0]
        line = worker.wait_line("lifeboat[rank 0] poll_watcher: warning:", EVENT_TIMEOUT)
        self.assertIn("termination_watcher_fn threw: FileNotFoundError: /run/notice (failure 1; "
                      "training goes on)", line or "", cluster.transcript())
        # Training went on: a notice still ends it as one.
        worker.proc.send_signal(signal.SIGTERM)
        self.assertEqual(cluster.finish(), [RESTART_EXIT_CODE], cluster.transcript())
        self.assertNotIn("At:", cluster.transcript())

    def test_buffers_lifeboat_cannot_write_in_place_are_refused(self):
        state = lifeboat.CheckpointState()
        with self.assertRaisesRegex(lifeboat.ConfigError, "not C-contiguous"):
            state.add_buffer("strided", memoryview(bytearray(16))[::2])
        with self.assertRaises(BufferError):
            state.add_buffer("read-only", b"0123")
        state.add_buffer("contiguous", memoryview(bytearray(16))[4:12])

    def test_a_duration_that_is_no_finite_number_of_seconds_is_a_config_error(self):
        for value in (float("nan"), float("inf"), -float("inf"), 1e300):
            for name in ("grace_period", "poll_interval", "save_every_seconds",
                         "heartbeat_timeout", "hang_timeout"):
                with self.assertRaisesRegex(lifeboat.ConfigError,
                                            f"^{name} must be a finite number of seconds, got "):
                    lifeboat.TerminationConfig(**{name: value})
        # Whole seconds (the field's unit): 0.5 would have turned backups off.
        for value in (0.5, 1.5):
            with self.assertRaisesRegex(lifeboat.ConfigError,
                                        f"^save_every_seconds counts whole seconds, got {value}"):
                lifeboat.TerminationConfig(save_every_seconds=value)
        lifeboat.TerminationConfig(save_every_seconds=2.0)
        with self.assertRaisesRegex(lifeboat.ConfigError, "safety_factor must be a finite number"):
            lifeboat.PreemptionCheckpointHandler(
                lifeboat.CheckpointState(), self.ckpt,
                lifeboat.TerminationConfig(safety_factor=float("nan")))

    def test_a_barrier_timeout_that_is_no_duration_is_a_config_error(self):
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as handler:
            for value in (float("nan"), float("inf"), 1e300):
                with self.assertRaisesRegex(lifeboat.ConfigError,
                                            "^timeout must be a finite number of seconds, got "):
                    handler.barrier("b", value)
            with self.assertRaisesRegex(lifeboat.ConfigError,
                                        r"^timeout must be >= 0 seconds, got -1\.0$"):
                handler.barrier("b", -1.0)
            handler.barrier("b", 0.5)

    def test_a_step_that_goes_back_is_a_config_error(self):
        # A save under a lower step would be older by its number than the
        # checkpoint restored, and the next restart would take that instead.
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as handler:
            handler.step_completed(5)
            handler.step_completed(5)
            with self.assertRaisesRegex(lifeboat.ConfigError,
                                        r"^step_completed\(3\): steps must not go back, "
                                        r"the last completed step is 5$"):
                handler.step_completed(3)
            self.assertEqual(handler.total_run_calls, 5)
            handler.step_completed(9)
            self.assertEqual(handler.total_run_calls, 9)

    def test_what_lifeboat_calls_later_must_be_callable_now(self):
        for name in ("termination_watcher_fn", "exit_fn", "save_fn"):
            with self.assertRaisesRegex(TypeError, f"^{name} must be callable, got int"):
                lifeboat.TerminationConfig(**{name: 1})
        state = lifeboat.CheckpointState()
        with self.assertRaisesRegex(TypeError, "^save must be callable, got str"):
            state.add_callbacks("c", "save", lambda b: None)
        with self.assertRaisesRegex(TypeError, "^restore must be callable, got NoneType"):
            state.add_callbacks("c", lambda: b"", None)

    def test_a_sigterm_handler_installed_after_lifeboats_is_reported(self):
        # A framework that installs its own SIGTERM handler takes the notice
        # away from lifeboat: a job would then never save. The worker says so
        # at its next check, once a second: the run lasts five at least.
        cluster = Cluster(0, self.ckpt, ["--steps", "500", "--step-ms", "10",
                                         "--replace-sigterm"])
        self.assertEqual(cluster.finish(), [0], cluster.transcript())
        self.assertIn("another handler replaced lifeboat's for SIGTERM (the trainer's or a "
                      "library's: Python's signal.signal, say): a SIGTERM is no longer a "
                      "termination notice", cluster.transcript())

    def test_a_forked_child_ends_on_its_sigterm_without_a_notice_to_the_worker(self):
        # multiprocessing.Pool's and DataLoader's terminate(): the child of a
        # fork inherits lifeboat's handler, and its SIGTERM is its own.
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as handler:
            child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(600,))
            child.start()
            self.addCleanup(child.kill)
            child.terminate()
            child.join(EVENT_TIMEOUT)
            self.assertEqual(child.exitcode, -signal.SIGTERM)
            handler.run(lambda: None)
            self.assertEqual(handler.total_run_calls, 1)

    def test_a_step_calling_sys_exit_ends_its_worker_and_no_peer_fails(self):
        # Early stopping: every rank's step 5 calls sys.exit(0). Each worker
        # ends with that code, and no worker raises another's exit as a failure.
        cluster = Cluster(2, self.ckpt, ["--steps", str(STEPS), "--step-ms", "10",
                                         "--exit-step", "5"])
        self.assertEqual(cluster.finish(), [0, 0], cluster.transcript())
        for w in cluster.workers:
            self.assertEqual(w.values("exiting"), [5], cluster.transcript())
            self.assertIsNone(w.wait_line("error=", timeout=0), cluster.transcript())
        self.assertNotIn("failed", cluster.transcript())
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as handler:
            with self.assertRaises(SystemExit) as raised:
                handler.run(sys.exit, 7)
            self.assertEqual(raised.exception.code, 7)
            self.assertEqual(handler.total_run_calls, 0)
            handler.run(lambda: None)
            self.assertEqual(handler.total_run_calls, 1)

    def test_what_exit_fn_raises_leaves_run_as_it_was_and_no_peer_fails(self):
        # exit_fn ends the process its own way after the committed checkpoint:
        # sys.exit(7), or an exception main catches. Before, run raised
        # RuntimeError 'SystemExit: 7', reported as a failure of the next step.
        for mode, code in (("exit", 7), ("raise", 5)):
            with self.subTest(mode=mode):
                shutil.rmtree(self.ckpt, ignore_errors=True)
                args = ["--steps", str(STEPS), "--step-ms", "10"]
                first = Cluster(2, self.ckpt, args + ["--exit-fn", mode])
                self.assertTrue(first.workers[1].wait_line("step=3"), first.transcript())
                first.workers[1].proc.send_signal(signal.SIGTERM)
                self.assertEqual(first.finish(), [code, code], first.transcript())
                (saved,) = self.committed_steps()
                for w in first.workers:
                    self.assertEqual(w.values("exit_fn"), [saved], first.transcript())
                    self.assertEqual(w.values("preempted"), [saved] if mode == "raise" else [],
                                     first.transcript())
                    if mode == "raise":
                        self.assertIn("left the cluster after its final checkpoint",
                                      w.wait_line("run_after_exit_fn=", timeout=0) or "",
                                      first.transcript())
                self.assertNotIn("failed", first.transcript())
                # The checkpoint stays in the memory tier too: the restart reads it there.
                second = Cluster(2, self.ckpt, args, incarnation=1)
                self.assertEqual(second.finish(), [0, 0], second.transcript())
                self.assertIn(f"restored step {saved} from the memory tier", second.transcript())
                for w in second.workers:
                    self.assertEqual(w.wait_line("done"), f"done total={STEPS} applied={STEPS}")

    def test_a_save_callback_that_raises_or_returns_no_bytes_fails_the_step_as_it_says(self):
        # A save runs inside run, at the step it is for: what the callback
        # raises is raised as it was, and the peers get it as one line.
        class StateError(Exception):
            pass

        def raising():
            raise StateError("no state to give")

        for save, expected, text in [(raising, StateError, "^no state to give$"),
                                     (lambda: 5, lifeboat.ConfigError,
                                      "^checkpoint callbacks 'c': save\\(\\) returned a value of "
                                      "type int, not bytes$")]:
            with self.subTest(expected=expected.__name__):
                shutil.rmtree(self.ckpt, ignore_errors=True)
                state = lifeboat.CheckpointState()
                state.add_callbacks("c", save, lambda data: None)
                with lifeboat.PreemptionCheckpointHandler(
                        state, self.ckpt, lifeboat.TerminationConfig(save_every_steps=1)) as handler:
                    with self.assertRaisesRegex(expected, text):
                        handler.run(lambda: None)
                    with self.assertRaisesRegex(lifeboat.PeerError, "^rank 0: [^\\n]*$"):
                        handler.run(lambda: None)
                self.assertEqual(self.committed_steps(), [])

    def test_a_save_whose_check_fails_fails_the_next_run_and_no_save_follows(self):
        # The check runs at the construction and first in every save: the
        # save that fails is the last one tried, and the next run() raises
        # its error at once, not after the service's broadcast came back.
        checks = []

        def check():
            checks.append(None)
            if len(checks) > 2:  # the construction's and step 1's pass, step 2's fails
                raise lifeboat.ConfigError("moved")

        state = lifeboat.CheckpointState()
        state.add_buffer("b", bytearray(8))
        state.add_check(check)
        with lifeboat.PreemptionCheckpointHandler(
                state, self.ckpt, lifeboat.TerminationConfig(save_every_steps=1)) as handler:
            handler.run(lambda: None)  # its save's check passes
            handler.run(lambda: None)  # its save's check fails
            # Steps that return at once, as many as run before run() raises.
            with self.assertRaisesRegex(lifeboat.PeerError,
                                        "^rank 0: checkpoint save at step 2 failed: "
                                        "invalid_config: moved$"):
                for _ in range(100000):
                    handler.run(lambda: None)
        self.assertEqual(len(checks), 3)
        self.assertEqual(self.committed_steps(), [1])

    def test_a_step_whose_data_ran_out_ends_the_epoch_and_no_peer_fails(self):
        # The step takes its batch from an iterator: at the end of the data
        # StopIteration ends the epoch, uncounted and unreported, and the
        # next epoch trains on.
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as handler:
            for epoch in range(2):
                batches = iter(range(3))
                with self.assertRaises(StopIteration):
                    while True:
                        handler.run(lambda: next(batches))
                self.assertEqual(handler.total_run_calls, 3 * (epoch + 1))

    def test_a_child_forked_inside_the_handlers_block_can_end(self):
        # os.fork() inside the with-block: a child that leaves the block (or
        # closes the handler) would wait forever for threads that exist only
        # in the worker.
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as handler:
            handler.run(lambda: None)
            pid = os.fork()
            if pid == 0:
                try:
                    handler.close()
                finally:
                    os._exit(5)
            pidfd = os.pidfd_open(pid)
            self.addCleanup(os.close, pidfd)
            ended, _, _ = select.select([pidfd], [], [], EVENT_TIMEOUT)
            if not ended:
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 5)
            handler.run(lambda: None)
            self.assertEqual(handler.total_run_calls, 2)

    def test_state_registered_after_the_handler_is_refused(self):
        # It would be saved, and the next start, restoring before it is
        # registered again, could not read that checkpoint back.
        state = lifeboat.CheckpointState()
        state.add_buffer("early", bytearray(4))
        with lifeboat.PreemptionCheckpointHandler(state, self.ckpt):
            with self.assertRaisesRegex(lifeboat.ConfigError,
                                        "'late' registered after the handler was constructed"):
                state.add_buffer("late", bytearray(4))

    def test_a_second_handler_while_one_is_open_is_a_config_error(self):
        # A notebook's cell run again, the first handler still referenced: the
        # second would have run the loop without hearing any signal.
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt):
            with self.assertRaisesRegex(lifeboat.ConfigError,
                                        "^another handler is open in this process"):
                lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(),
                                                     os.path.join(self.dir, "other"))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "other")))
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as again:
            self.assertEqual(again.run(lambda: 7), 7)

    def test_a_checkpoint_directory_in_use_by_another_process_is_a_config_error(self):
        # The same job started twice on one host: the second must stop before
        # it touches the first's checkpoints.
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIFEBOAT_")}
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import sys, lifeboat\n"
             f"with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), {self.ckpt!r}):\n"
             "    print('open', flush=True)\n"
             "    sys.stdin.readline()\n"],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "open")
            with self.assertRaisesRegex(lifeboat.ConfigError,
                                        "is in use by another process: the same job"):
                lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt)
        finally:
            holder.communicate("\n", timeout=RUN_TIMEOUT)
        self.assertEqual(holder.returncode, 0)
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as again:
            self.assertEqual(again.run(lambda: 7), 7)

    def test_a_relative_checkpoint_directory_stays_put_when_the_trainer_changes_directory(self):
        # Hydra, say, moves a run into its output directory after the set-up:
        # the saves must still go where the restart will look.
        elsewhere = os.path.join(self.dir, "elsewhere")
        os.mkdir(elsewhere)
        before = os.getcwd()
        os.chdir(self.dir)
        try:
            config = lifeboat.TerminationConfig(save_every_steps=2)
            with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(),
                                                      os.path.basename(self.ckpt),
                                                      config) as handler:
                os.chdir(elsewhere)
                # A backup every 2 steps: committed long before the last.
                for _ in range(1000):
                    if self.committed_steps():
                        break
                    handler.run(time.sleep, 0.005)
        finally:
            os.chdir(before)
        self.assertTrue(self.committed_steps())
        self.assertFalse(os.path.exists(os.path.join(elsewhere, os.path.basename(self.ckpt))))

    def test_a_checkpoint_directory_may_be_a_path_object(self):
        # pathlib.Path, as trainers' configurations hold paths; before, each of
        # these raised TypeError (incompatible constructor arguments).
        ckpt = pathlib.Path(self.ckpt)
        weights = array.array("f", [0.0]) * 4
        state = lifeboat.CheckpointState()
        state.add_buffer("weights", weights)
        config = lifeboat.TerminationConfig(save_every_steps=1)
        with lifeboat.PreemptionCheckpointHandler(state, ckpt, config) as handler:
            handler.run(lambda: None)
            handler.run(lambda: None)
        self.assertEqual(lifeboat.committed_steps(ckpt), [1, 2])
        self.assertEqual(lifeboat.verify_checkpoint(ckpt).step, 2)
        self.assertEqual(lifeboat.restore_checkpoint(state, ckpt).step, 2)
        with self.assertRaises(TypeError):
            lifeboat.committed_steps(2)

    def test_signals_may_be_given_as_the_signal_modules_numbers(self):
        # As Python code names them (signal.SIGUSR1, an IntEnum), alone or in
        # a list; before, both raised pybind11's TypeError listing the whole
        # constructor, and only names ("SIGUSR1") were taken.
        class Preempted(Exception):
            pass

        def leave():
            raise Preempted()

        for i, signals in enumerate(([signal.SIGUSR1], signal.SIGUSR1)):
            with self.subTest(signals=signals):
                ckpt = os.path.join(self.ckpt, str(i))
                config = lifeboat.TerminationConfig(signals=signals, exit_fn=leave)
                with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), ckpt,
                                                          config) as handler:
                    handler.run(lambda: None)
                    os.kill(os.getpid(), signal.SIGUSR1)
                    with self.assertRaises(Preempted):
                        for _ in range(1000):
                            handler.run(time.sleep, 0.01)
                self.assertEqual(len(lifeboat.committed_steps(ckpt)), 1)
        with self.assertRaisesRegex(lifeboat.ConfigError, "^unknown signal number 999$"):
            lifeboat.TerminationConfig(signals=[999])
        with self.assertRaisesRegex(lifeboat.ConfigError, "expected signal names"):
            lifeboat.TerminationConfig(signals=[1.5])

    def test_a_preemption_watcher_follows_the_notice_and_the_workers_of_a_coordinator(self):
        # The reference's PreemptionWatcher for a controller written in Python,
        # read from lifeboat-coordinator's status endpoint.
        port, status_port = loopback_ports.free_ports(), loopback_ports.free_ports()
        token = secrets.token_hex(8)
        coordinator = output_lines.Process(
            [os.environ["LIFEBOAT_COORDINATOR_PROGRAM"], "--port", str(port), "--world-size", "2", "--status-port",
             str(status_port)], dict(os.environ, LIFEBOAT_CLUSTER_TOKEN=token))
        try:
            self.assertTrue(coordinator.wait_line("lifeboat-coordinator: listening", EVENT_TIMEOUT),
                            coordinator.transcript())
            cluster = Cluster(2, self.ckpt, ["--steps", "100000", "--step-ms", "10"],
                              service=(port, token))
            self.assertTrue(cluster.workers[1].wait_line("step=3"), cluster.transcript())
            watcher = lifeboat.PreemptionWatcher(f"127.0.0.1:{status_port}", timeout=0.3)
            self.assertIsNone(watcher.preemption_message)
            self.assertFalse(watcher.block_until_worker_exit(timeout=0.3))
            # A coordinator that answers late (stopped here) is no coordinator
            # gone: its workers are still there.
            coordinator.proc.send_signal(signal.SIGSTOP)
            try:
                self.assertFalse(watcher.block_until_worker_exit(timeout=1.0))
            finally:
                coordinator.proc.send_signal(signal.SIGCONT)
            cluster.workers[1].proc.send_signal(signal.SIGTERM)
            self.assertEqual(cluster.finish(), [RESTART_EXIT_CODE] * 2, cluster.transcript())
            # The coordinator is still there, its workers gone.
            self.assertTrue(watcher.block_until_worker_exit(timeout=EVENT_TIMEOUT))
            self.assertIsNone(coordinator.proc.poll())
            self.assertRegex(watcher.preemption_message,
                             r"^rank 1: SIGTERM received \(source signal:SIGTERM, deadline ")
            with self.assertRaisesRegex(lifeboat.ConfigError, "no status endpoint answers"):
                lifeboat.PreemptionWatcher(f"127.0.0.1:{loopback_ports.free_ports()}")
        finally:
            coordinator.proc.kill()
            coordinator.finish(EVENT_TIMEOUT)

    def test_run_passes_the_steps_arguments_and_returns_its_result(self):
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as handler:
            self.assertEqual(handler.run(lambda a, b=0: (a, b), 1, b=2), (1, 2))
            self.assertEqual(handler.run(dict, x=1), {"x": 1})
            with self.assertRaisesRegex(TypeError, "needs the step"):
                handler.run()
            self.assertEqual(handler.total_run_calls, 2)

    def test_a_closed_handler_still_says_what_it_was_and_runs_nothing(self):
        # A trainer prints its step count, or rank 0 alone exports the final
        # model, after the `with` block: that raised RuntimeError and ended a
        # finished worker with a failure.
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), self.ckpt) as handler:
            handler.run(lambda: None)
            handler.run(lambda: None)
        self.assertEqual((handler.total_run_calls, handler.rank, handler.world_size), (2, 0, 1))
        with self.assertRaisesRegex(RuntimeError, "^the handler is closed$"):
            handler.run(lambda: None)
        with self.assertRaisesRegex(RuntimeError, "^the handler is closed$"):
            handler.save_checkpoint_if_preempted()

    def test_bad_configuration_is_a_config_error_and_writes_nothing(self):
        cluster = Cluster(0, self.ckpt, ["--steps", str(STEPS), "--grace-period", "-1"])
        self.assertEqual(cluster.finish(), [CONFIG_EXIT_CODE], cluster.transcript())
        line = cluster.workers[0].wait_line("config_error=", timeout=0)
        self.assertIsNotNone(line, cluster.transcript())
        self.assertIn("grace_period must be >= 0", line)
        self.assertFalse(os.path.exists(self.ckpt) and os.listdir(self.ckpt))

    def test_restore_checkpoint_reads_a_saved_step_and_raises_checkpoint_error_when_none_verifies(
            self):
        data = bytearray(64)
        state = lifeboat.CheckpointState()
        state.add_buffer("data", data)
        with lifeboat.PreemptionCheckpointHandler(
                state, self.ckpt, lifeboat.TerminationConfig(save_every_steps=1)) as handler:
            handler.run(lambda: data.__setitem__(0, 7))
        copy = bytearray(64)
        reader = lifeboat.CheckpointState()
        reader.add_buffer("data", copy)
        restored = lifeboat.restore_checkpoint(reader, self.ckpt)
        self.assertEqual((restored.step, restored.total_run_calls, copy[0]), (1, 1, 7))
        self.assertEqual(lifeboat.committed_steps(self.ckpt), [1])
        self.assertEqual(lifeboat.restore_checkpoint(reader, self.ckpt, step=1).step, 1)
        self.assertEqual(repr(restored), f"RestoredCheckpoint(step=1, path='{restored.path}')")
        verified = lifeboat.verify_checkpoint(self.ckpt)
        self.assertEqual((verified.step, verified.world_size, verified.path),
                         (1, 1, restored.path))
        self.assertGreaterEqual(verified.bytes, 64)

        shard = [name for name in os.listdir(restored.path) if name.endswith(".data")]
        self.assertEqual(len(shard), 1)
        with open(os.path.join(restored.path, shard[0]), "r+b") as f:
            first = f.read(1)
            f.seek(0)
            f.write(bytes([first[0] ^ 1]))
        with self.assertRaisesRegex(lifeboat.CheckpointError, "verified"):
            lifeboat.restore_checkpoint(reader, self.ckpt)
        with self.assertRaisesRegex(lifeboat.CheckpointError,
                                    f"{shard[0]}: checksum mismatch in chunk 0"):
            lifeboat.verify_checkpoint(self.ckpt, step=1)
        with self.assertRaisesRegex(lifeboat.CheckpointError, "no committed checkpoint of step 2"):
            lifeboat.restore_checkpoint(reader, self.ckpt, step=2)
        self.assertIsInstance(lifeboat.CheckpointError("x"), RuntimeError)


if __name__ == "__main__":
    unittest.main()
