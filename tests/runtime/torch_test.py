"""PyTorch trainers end to end: three torch_trainer.py workers (gloo, DDP,
Adam) under lifeboat-launch and under torchrun, with real signals, sockets on
127.0.0.1 and checkpoint files; and lifeboat.torch's registration, in process.
The tests wait on output lines with deadlines, never on sleeps.

Run by ctest with PYTHONPATH naming the build's Python package and
LIFEBOAT_LAUNCH the launcher. Without torch it exits 77, which ctest reports
as skipped.
"""

import json
import os
import random
import re
import shutil
import signal
import socket
import sys
import time
import unittest
import warnings

SKIP_EXIT_CODE = 77
try:
    import torch
except ImportError as error:
    print(f"torch_test: skipped: {sys.executable} cannot import torch ({error})")
    sys.exit(SKIP_EXIT_CODE)

import numpy  # torch's own dependency

import lifeboat
import lifeboat.torch

import loopback_ports
import network_hosts
import output_lines
import scratch_case

TRAINER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_trainer.py")
WORLD = 3
RESTART_EXIT_CODE = 42
FAILURE_EXIT_CODE = 3
STEPS = 60
STEP_MS = 10
# Generous bounds: the tests share two cores with other tests, and each worker
# imports torch.
EVENT_TIMEOUT = 60
RUN_TIMEOUT = 120
DONE = re.compile(r"^rank=(\d+) done step=(\d+) digest=([0-9a-f]+)$")


def free_port_pair():
    """A port P with P + 1 free too: one for lifeboat, one for gloo's rendezvous."""
    return loopback_ports.free_ports(2)


def environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIFEBOAT_")}
    env["LIFEBOAT_PLATFORM"] = "generic"
    return env


def trainer_args(ckpt, extra=()):
    return [TRAINER, "--checkpoint-dir", ckpt, "--steps", str(STEPS), "--step-ms", str(STEP_MS),
            *extra]


def launch(ckpt, extra=(), max_restarts=0):
    """lifeboat-launch with WORLD trainers; it restarts them after exit 42.
    Their temporary files go beside `ckpt`, into the test's scratch directory:
    every DataLoader with workers leaves a /tmp/pymp-* directory behind, with
    lifeboat or without it."""
    env = environment()
    env["TMPDIR"] = os.path.dirname(ckpt)
    return output_lines.Process(
        [os.environ["LIFEBOAT_LAUNCH"], "--nproc", str(WORLD), "--port", str(free_port_pair()),
         "--max-restarts", str(max_restarts), "--", sys.executable, *trainer_args(ckpt, extra)],
        env)


def torchrun_flags(scratch, max_restarts, master_port):
    """The flags Debian's torch 1.13 takes; its logs in `scratch`, which the
    test removes (by default torchrun leaves a directory in /tmp per run)."""
    return ["--nproc_per_node", str(WORLD), "--max_restarts", str(max_restarts),
            "--monitor_interval", "0.1", "--redirects", "2", "--tee", "2",
            "--log_dir", os.path.join(scratch, "torchrun-logs"),
            "--master_addr", "127.0.0.1", "--master_port", str(master_port)]


def torchrun(scratch, ckpt, max_restarts):
    """torchrun with WORLD trainers."""
    return output_lines.Process(
        [sys.executable, "-m", "torch.distributed.run",
         *torchrun_flags(scratch, max_restarts, free_port_pair()), *trainer_args(ckpt)],
        environment())


def digests(process):
    """{rank: digest} from the lines of the generation that finished."""
    found = {}
    for line in process.lines:
        match = DONE.match(line)
        if match:
            found[int(match[1])] = (int(match[2]), match[3])
    return found


def run_until_it_raises(handler, step):
    """Runs `step` until run() raises what a failed save reported (the report
    reaches run() asynchronously: a fast step runs on meanwhile), for at most
    EVENT_TIMEOUT seconds."""
    deadline = time.monotonic() + EVENT_TIMEOUT
    while time.monotonic() < deadline:
        handler.run(step)


def pid_of(process, rank):
    """The pid of rank `rank` of the first generation, from its restored line."""
    line = process.wait_line(f"rank={rank} restored=0 ", EVENT_TIMEOUT)
    assert line, process.transcript()
    return int(line.rsplit("pid=", 1)[1])


class CallbackRecorder:
    """Stands for a CheckpointState where lifeboat.torch registers state: it
    keeps the callbacks and the checks, so a test saves, restores and checks
    through them itself."""

    def __init__(self):
        self.callbacks = {}
        self.checks = []

    def add_buffer(self, name, data):
        pass

    def add_check(self, check):
        self.checks.append(check)

    def add_callbacks(self, name, save, restore):
        self.callbacks[name] = (save, restore)

    def save(self):
        return {name: save() for name, (save, _) in self.callbacks.items()}

    def restore(self, saved):
        for name, (_, restore) in self.callbacks.items():
            restore(saved[name])


class RegistrationTest(unittest.TestCase):
    """lifeboat.torch in this process: what it registers and what it refuses."""

    def after_steps(self, make_optimizer, register, sparse=False, steps=3):
        """The model's and the optimizer's state after `steps` steps, the
        optimizer's state created by add_optimizer when `register`; then
        also whether the checks lifeboat runs before a save pass (the state
        was updated in place). `sparse`: an embedding with sparse gradients."""
        torch.manual_seed(0)
        if sparse:
            model = torch.nn.Embedding(10, 3, sparse=True)
        else:
            model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
        optimizer = make_optimizer(model.parameters())
        state = CallbackRecorder()
        if register:
            lifeboat.torch.add_module(state, model)
            lifeboat.torch.add_optimizer(state, optimizer)
        for step in range(steps):
            generator = torch.Generator().manual_seed(step)
            x = torch.randint(10, (8,), generator=generator) if sparse else \
                torch.randn(8, 4, generator=generator)
            optimizer.zero_grad()
            model(x).square().sum().backward()
            optimizer.step()
        for check in state.checks:
            check()
        return model.state_dict(), optimizer.state_dict()["state"]

    def assert_created_state_trains_as_the_lazy_one(self, make_optimizer, sparse=False):
        (model, optimizer), (lazy_model, lazy_optimizer) = (
            self.after_steps(make_optimizer, True, sparse),
            self.after_steps(make_optimizer, False, sparse))
        self.assertEqual(model.keys(), lazy_model.keys())
        for name in model:
            self.assertTrue(torch.equal(model[name], lazy_model[name]), name)
        self.assertEqual(optimizer.keys(), lazy_optimizer.keys())
        for index, entry in optimizer.items():
            self.assertEqual(entry.keys(), lazy_optimizer[index].keys())
            for key, value in entry.items():
                lazy = lazy_optimizer[index][key]
                self.assertEqual(type(value), type(lazy), (index, key))
                if isinstance(value, torch.Tensor):
                    self.assertEqual(value.dtype, lazy.dtype, (index, key))
                    self.assertTrue(torch.equal(value, lazy), (index, key))
                else:
                    self.assertEqual(value, lazy, (index, key))

    def test_adam_state_created_up_front_trains_as_the_lazily_created_one(self):
        def adam(params):
            return torch.optim.Adam(params, lr=0.1, amsgrad=True)
        model = torch.nn.Linear(2, 2)
        optimizer = adam(model.parameters())
        lifeboat.torch.add_optimizer(lifeboat.CheckpointState(), optimizer)
        created = optimizer.state[model.weight]
        self.assertEqual(created["step"].item(), 0)
        self.assertEqual(created["max_exp_avg_sq"].count_nonzero().item(), 0)
        self.assert_created_state_trains_as_the_lazy_one(adam)

    @unittest.skipUnless(torch.__version__.startswith("1."),
                         "these optimizers' state is created up front with torch 1.x only")
    def test_other_optimizers_state_created_up_front_trains_as_the_lazily_created_one(self):
        optim = torch.optim
        for name, make in [
                ("RMSprop", lambda p: optim.RMSprop(p, lr=0.01)),
                ("RMSprop momentum centered",
                 lambda p: optim.RMSprop(p, lr=0.01, momentum=0.9, centered=True)),
                ("Adadelta", lambda p: optim.Adadelta(p)),
                ("Adamax", lambda p: optim.Adamax(p, lr=0.1)),
                ("NAdam", lambda p: optim.NAdam(p, lr=0.1)),
                ("RAdam", lambda p: optim.RAdam(p, lr=0.1)),
                ("ASGD", lambda p: optim.ASGD(p, lr=0.1, t0=1)),
                ("Rprop", lambda p: optim.Rprop(p, lr=0.05))]:
            with self.subTest(optimizer=name):
                self.assert_created_state_trains_as_the_lazy_one(make)
        with self.subTest(optimizer="SparseAdam"):
            self.assert_created_state_trains_as_the_lazy_one(
                lambda p: optim.SparseAdam(list(p), lr=0.1), sparse=True)

    def test_tensors_that_cannot_be_restored_in_place_are_refused(self):
        state = lifeboat.CheckpointState()
        with self.assertRaisesRegex(lifeboat.ConfigError, r"'t' is not contiguous in any order "
                                                          r"of its dimensions \(strides \[4, 1\]"):
            lifeboat.torch.add_tensor(state, "t", torch.zeros(4, 4)[:, :2])
        with self.assertRaisesRegex(lifeboat.ConfigError, "'m' is on meta"):
            lifeboat.torch.add_tensor(state, "m", torch.zeros(3, device="meta"))
        with self.assertRaisesRegex(lifeboat.ConfigError, "'s' is torch.sparse_coo"):
            lifeboat.torch.add_tensor(state, "s", torch.zeros(3).to_sparse())
        with warnings.catch_warnings():  # "Lazy modules are a new feature ..."
            warnings.simplefilter("ignore")
            lazy = torch.nn.Sequential(torch.nn.LazyLinear(3))
        with self.assertRaisesRegex(lifeboat.ConfigError, "'model/0.weight' is not materialized "
                                                          "yet"):
            lifeboat.torch.add_module(state, lazy)
        lifeboat.torch.add_tensor(state, "bf16", torch.zeros(3, dtype=torch.bfloat16))

    @unittest.skipIf(torch.cuda.is_available(), "a usable GPU: lifeboat may take device memory")
    def test_device_memory_is_refused_without_a_usable_device(self):
        class DeviceArray:
            __cuda_array_interface__ = {"data": (4096, False), "shape": (4,), "typestr": "<f4",
                                        "strides": None, "version": 2}

        with self.assertRaisesRegex(lifeboat.ConfigError, "'d' cannot be checkpointed"):
            lifeboat.CheckpointState().add_device_buffer("d", DeviceArray())

    def schedules_from_step(self, kind, restore_from=None, first=7, steps=10):
        """The rates and betas (or momentum) of `steps` steps of a schedule
        of `kind`, from step `first` on, each after the schedule's step; and
        what add_optimizer and add_scheduler saved at step `first`. With
        `restore_from`, the schedule takes no steps before `first`: it is
        restored from what was saved there."""
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.ones(3))]
        sched = torch.optim.lr_scheduler
        if kind == "cyclic":
            optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
            schedule = sched.CyclicLR(optimizer, 0.01, 0.1, step_size_up=4)
        else:
            optimizer = torch.optim.Adam(params, lr=0.1)
            schedule = {
                "step": lambda: sched.StepLR(optimizer, 3, 0.5),
                "one-cycle": lambda: sched.OneCycleLR(optimizer, max_lr=0.1, total_steps=40),
                "lambda": lambda: sched.LambdaLR(optimizer, lambda epoch: 0.9 ** epoch),
                "sequential": lambda: sched.SequentialLR(optimizer, [
                    sched.ConstantLR(optimizer, 0.5, 3), sched.ExponentialLR(optimizer, 0.9)],
                    [3]),
                "plateau": lambda: sched.ReduceLROnPlateau(optimizer, patience=1),
            }[kind]()
        state = CallbackRecorder()
        lifeboat.torch.add_optimizer(state, optimizer)
        lifeboat.torch.add_scheduler(state, schedule)

        def step(n):
            params[0].grad = torch.ones(3)
            optimizer.step()
            if kind == "plateau":
                schedule.step(torch.tensor(float(n % 3)))  # a tensor, as a loss is
            else:
                schedule.step()
            return [(g["lr"], g.get("betas"), g.get("momentum")) for g in optimizer.param_groups]

        if restore_from is None:
            for n in range(first):
                step(n)
        else:
            # A new process: its schedule made as the saved one was, then restored.
            state.restore(restore_from)
        saved = state.save()
        return [step(n) for n in range(first, first + steps)], saved

    def test_a_schedule_and_its_optimizers_rates_resume_where_they_were_saved(self):
        for kind in ["step", "one-cycle", "lambda", "sequential", "plateau", "cyclic"]:
            with self.subTest(kind=kind):
                expected, saved = self.schedules_from_step(kind)
                # JSON, never a pickle: restoring runs no code from the file.
                for name, data in saved.items():
                    json.loads(data)
                resumed, _ = self.schedules_from_step(kind, restore_from=saved)
                self.assertEqual(resumed, expected)
                fresh, _ = self.schedules_from_step(kind, first=0)
                self.assertNotEqual(fresh, expected)

    def grad_scaler_after(self, steps, first=0, restore_from=None):
        """What add_grad_scaler saves after `steps` steps of a GradScaler on the
        GPU, from global step `first` on (step 1's loss is infinite: the scale
        backs off), restored first from `restore_from` when given."""
        param = torch.nn.Parameter(torch.ones(2, device="cuda"))
        optimizer = torch.optim.SGD([param], lr=0.1)
        scaler = torch.cuda.amp.GradScaler(growth_interval=3)
        state = CallbackRecorder()
        lifeboat.torch.add_grad_scaler(state, scaler)
        if restore_from is not None:
            state.restore(restore_from)
        for n in range(first, first + steps):
            optimizer.zero_grad()
            scaler.scale((param * (float("inf") if n == 1 else 1.0)).sum()).backward()
            scaler.step(optimizer)
            scaler.update()
        return state.save()

    @unittest.skipUnless(torch.cuda.is_available(),
                         "no usable GPU: GradScaler disables itself without CUDA")
    def test_a_grad_scalers_scale_and_growth_count_resume_where_they_were_saved(self):
        expected = self.grad_scaler_after(7)
        resumed = self.grad_scaler_after(3, first=4, restore_from=self.grad_scaler_after(4))
        self.assertEqual(resumed, expected)
        self.assertNotEqual(self.grad_scaler_after(3, first=4), expected)

    def test_a_disabled_grad_scaler_saves_and_restores_nothing(self):
        state = CallbackRecorder()
        lifeboat.torch.add_grad_scaler(state, torch.cuda.amp.GradScaler(enabled=False))
        saved = state.save()
        self.assertEqual(saved, {"grad_scaler": b"{}"})
        state.restore(saved)

    @staticmethod
    def draws():
        """What each generator add_rng registers draws next; NumPy's twice
        from a normal distribution, which caches its second value."""
        return (torch.rand(4).tolist(), random.random(),
                torch.nn.functional.dropout(torch.ones(8)).tolist(),
                numpy.random.randint(1 << 30, size=4).tolist(),
                numpy.random.standard_normal(), numpy.random.standard_normal())

    @staticmethod
    def seeded_rng(seed, numpy_seed=None):
        """A CallbackRecorder with add_rng's state, once torch's and Python's
        generators are seeded with `seed`, NumPy's with `numpy_seed` (`seed`)."""
        state = CallbackRecorder()
        lifeboat.torch.add_rng(state)
        torch.manual_seed(seed)
        random.seed(seed)
        numpy.random.seed(seed if numpy_seed is None else numpy_seed)
        return state

    def test_the_random_generators_draw_after_a_restore_what_they_drew_after_the_save(self):
        state = self.seeded_rng(3)
        numpy.random.standard_normal()  # a Gaussian cached in the saved state
        saved = state.save()
        expected = self.draws()
        self.draws()
        state.restore(saved)
        self.assertEqual(self.draws(), expected)

    def test_random_generators_saved_without_numpys_restore_and_leave_numpys_as_seeded(self):
        state = self.seeded_rng(4)
        saved = state.save()
        expected = self.draws()
        # A checkpoint of the version that saved no NumPy generator.
        older = json.loads(saved["rng"])
        del older["numpy"]
        self.seeded_rng(5, numpy_seed=4)
        state.restore({"rng": json.dumps(older).encode()})
        self.assertEqual(self.draws(), expected)

    def test_schedule_state_that_json_cannot_hold_is_refused_when_registered(self):
        class Schedule:
            def state_dict(self):
                return {"last_epoch": 3, "history": {1, 2}}

        with self.assertRaisesRegex(lifeboat.ConfigError, r"scheduler\.history is a set"):
            lifeboat.torch.add_scheduler(lifeboat.CheckpointState(), Schedule())

    def test_a_checkpoint_with_other_parameter_groups_is_refused_on_restore(self):
        params = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))]
        one, two = CallbackRecorder(), CallbackRecorder()
        lifeboat.torch.add_optimizer(one, torch.optim.SGD([{"params": params}], lr=0.1))
        lifeboat.torch.add_optimizer(two, torch.optim.SGD(
            [{"params": params[:1]}, {"params": params[1:]}], lr=0.1))
        with self.assertRaisesRegex(lifeboat.ConfigError, "1 parameter groups, the optimizer 2"):
            two.restore(one.save())

    def test_optimizer_state_that_cannot_be_created_exactly_is_refused(self):
        params = [torch.nn.Parameter(torch.zeros(2))]
        state = lifeboat.CheckpointState()
        with self.assertRaisesRegex(lifeboat.ConfigError, "LBFGS has no state"):
            lifeboat.torch.add_optimizer(state, torch.optim.LBFGS(params))
        with self.assertRaisesRegex(lifeboat.ConfigError, "dampening"):
            lifeboat.torch.add_optimizer(state, torch.optim.SGD(params, lr=1, momentum=0.9,
                                                                 dampening=0.5))

    def test_optimizer_state_neither_tensor_nor_number_is_refused(self):
        param = torch.nn.Parameter(torch.ones(2))
        lbfgs = torch.optim.LBFGS([param])
        lbfgs.step(lambda: param.square().sum().backward() or param.square().sum())
        with self.assertRaisesRegex(lifeboat.ConfigError, "optimizer state 'al' is a list, "
                                                          "neither a tensor nor a number"):
            lifeboat.torch.add_optimizer(lifeboat.CheckpointState(), lbfgs)


class HandlerCase(scratch_case.ScratchCase):
    """A test case that runs handlers in this process (a world of one) on its
    scratch checkpoint directory."""

    def handler(self, state, save_every_steps=1):
        return lifeboat.PreemptionCheckpointHandler(
            state, self.ckpt, lifeboat.TerminationConfig(save_every_steps=save_every_steps))

    @staticmethod
    def registered(model, optimizer):
        """A state with `model` and `optimizer` registered."""
        state = lifeboat.CheckpointState()
        lifeboat.torch.add_module(state, model)
        lifeboat.torch.add_optimizer(state, optimizer)
        return state

    def handler_of(self, model, optimizer):
        """What makes a handler that saves `model` and `optimizer` every 3 steps."""
        state = self.registered(model, optimizer)
        return lambda: self.handler(state, save_every_steps=3)

    @staticmethod
    def adam_job():
        """A Linear and a BatchNorm that Adam trains, registered: the model,
        the optimizer, the state and one training step."""
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        state = HandlerCase.registered(model, optimizer)

        def step():
            optimizer.zero_grad()
            model(torch.randn(8, 4)).square().sum().backward()
            optimizer.step()

        return model, optimizer, state, step


class MovedStateTest(HandlerCase):
    """A tensor moved or replaced after its registration, with a handler in
    this process (a world of one): found before the restore and before every
    save, and never checkpointed from the memory it left."""

    prefix = "lifeboat-torch-moved-"

    def test_state_moved_before_the_handler_is_refused_as_it_is_constructed(self):
        moves = {"model/0.weight": lambda model: model.double(),
                 "model/1.running_mean": lambda model: setattr(model[1], "running_mean",
                                                               torch.zeros(3))}
        for name, move in moves.items():
            with self.subTest(name=name):
                model, _, state, _ = self.adam_job()
                move(model)
                with self.assertRaisesRegex(lifeboat.ConfigError,
                                            f"tensor '{name}' no longer uses the memory "
                                            "registered for it"):
                    self.handler(state)
        state = lifeboat.CheckpointState()
        tensor = torch.zeros(4)
        lifeboat.torch.add_tensor(state, "t", tensor)
        tensor.data = torch.ones(4)
        with self.assertRaisesRegex(lifeboat.ConfigError, "tensor 't' no longer uses"):
            self.handler(state)

    def test_optimizer_state_replaced_while_training_fails_the_next_save(self):
        model, optimizer, state, step = self.adam_job()
        with self.handler(state) as handler:
            # Adam's steps and BatchNorm's statistics change in place: saves go on.
            for _ in range(3):
                handler.run(step)
            handler.barrier("saved", 30)
            moved_at = handler.total_run_calls
            optimizer.load_state_dict(optimizer.state_dict())
            with self.assertRaisesRegex(lifeboat.PeerError, "tensor 'optimizer/0/0/step' no "
                                                            "longer uses the memory registered"):
                run_until_it_raises(handler, step)
        self.assertTrue(self.committed_steps())
        self.assertLessEqual(max(self.committed_steps()), moved_at)


    def test_a_tensor_added_after_the_registration_is_refused_as_the_handler_is_built(self):
        model, _, state, _ = self.adam_job()
        model[1].register_buffer("extra", torch.zeros(2))
        with self.assertRaisesRegex(lifeboat.ConfigError, "tensor 'model/1.extra' was added to "
                                                          "the state after the registration"):
            self.handler(state)


class SgdWithoutMomentumTest(HandlerCase):
    """SGD without momentum, whose first step stores a momentum_buffer of
    None for each parameter, registered before and after that step."""

    prefix = "lifeboat-torch-sgd-"

    def trainer(self, seed, steps_before):
        torch.manual_seed(seed)
        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def step():
            optimizer.zero_grad()
            model(torch.ones(4)).square().sum().backward()
            optimizer.step()

        for _ in range(steps_before):
            step()
        return model, step, self.handler_of(model, optimizer)

    def assert_saves_and_resumes(self, steps_before):
        model, step, handler = self.trainer(0, steps_before)
        with handler() as running:
            for _ in range(6):
                running.run(step)
        self.assertEqual(self.committed_steps(), [3, 6])
        trained = {k: v.clone() for k, v in model.state_dict().items()}
        model, _, handler = self.trainer(1, steps_before)
        with handler() as resumed:
            self.assertEqual(resumed.total_run_calls, 6)
        for name, value in model.state_dict().items():
            self.assertTrue(torch.equal(value, trained[name]), name)

    def test_registered_before_its_first_step_saves_and_resumes(self):
        self.assert_saves_and_resumes(steps_before=0)

    def test_registered_after_its_first_step_saves_and_resumes(self):
        self.assert_saves_and_resumes(steps_before=1)


class RestoreOutsideTheJobTest(HandlerCase):
    """lifeboat.restore_checkpoint: a trained model read back for an
    evaluation, without a handler and without the optimizer."""

    prefix = "lifeboat-torch-outside-"

    def test_a_model_alone_reads_the_newest_checkpoint_of_a_job_with_its_optimizer(self):
        _, _, state, step = self.adam_job()
        with self.handler(state, save_every_steps=3) as running:
            for _ in range(7):
                running.run(step)
        self.assertEqual(self.committed_steps(), [3, 6])

        evaluated = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
        only_the_model = lifeboat.CheckpointState()
        lifeboat.torch.add_module(only_the_model, evaluated)
        restored = lifeboat.restore_checkpoint(only_the_model, self.ckpt)
        self.assertEqual((restored.step, restored.total_run_calls), (6, 6))
        self.assertEqual(restored.path, os.path.join(self.ckpt, "step-000000000006"))

        # The job, resumed by a handler, holds what the evaluation read.
        resumed, _, state, _ = self.adam_job()
        with self.handler(state) as handler:
            self.assertEqual(handler.total_run_calls, 6)
        for name, value in resumed.state_dict().items():
            self.assertTrue(torch.equal(evaluated.state_dict()[name], value), name)

    def test_a_directory_without_checkpoints_gives_none_and_a_missing_one_is_refused(self):
        state = lifeboat.CheckpointState()
        lifeboat.torch.add_module(state, torch.nn.Linear(2, 2))
        os.makedirs(self.ckpt, exist_ok=True)
        self.assertIsNone(lifeboat.restore_checkpoint(state, self.ckpt))
        with self.assertRaisesRegex(lifeboat.ConfigError, "No such file or directory"):
            lifeboat.restore_checkpoint(state, os.path.join(self.ckpt, "absent"))


class CountingMomentum(torch.optim.Optimizer):
    """Momentum SGD that keeps its step count as a Python int, as optimizers
    outside torch do (transformers' Adafactor), and scales by it."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["momentum"] = torch.zeros_like(p)
                state["step"] += 1
                state["momentum"].mul_(0.9).add_(p.grad)
                p.add_(state["momentum"], alpha=-group["lr"] / state["step"])


class NumberStateTest(HandlerCase):
    """Optimizer state that is a plain number, saved and restored by
    handlers in this process."""

    prefix = "lifeboat-torch-numbers-"

    def trainer(self, seed):
        torch.manual_seed(seed)
        model = torch.nn.Linear(4, 2)
        optimizer = CountingMomentum(model.parameters())

        def step():
            optimizer.zero_grad()
            model(torch.ones(4)).square().sum().backward()
            optimizer.step()

        step()  # lifeboat.torch cannot create this optimizer's state
        return model, optimizer, step, self.handler_of(model, optimizer)

    def test_an_int_step_count_resumes_with_the_tensors(self):
        model, optimizer, step, handler = self.trainer(seed=0)
        with handler() as running:
            for _ in range(6):
                running.run(step)
        trained = {k: v.clone() for k, v in model.state_dict().items()}
        steps = [optimizer.state[p]["step"] for p in model.parameters()]
        self.assertEqual(steps, [7, 7])
        momentum = [optimizer.state[p]["momentum"].clone() for p in model.parameters()]

        model, optimizer, _, handler = self.trainer(seed=1)
        with handler() as resumed:
            self.assertEqual(resumed.total_run_calls, 6)
        self.assertEqual([optimizer.state[p]["step"] for p in model.parameters()], steps)
        self.assertTrue(all(isinstance(optimizer.state[p]["step"], int)
                            for p in model.parameters()))
        for p, saved in zip(model.parameters(), momentum):
            self.assertTrue(torch.equal(optimizer.state[p]["momentum"], saved))
        for name, value in model.state_dict().items():
            self.assertTrue(torch.equal(value, trained[name]), name)


class GrowingCache(torch.nn.Module):
    """A linear layer with a persistent buffer and a non-persistent cache it
    replaces as its input grows, as a rotary embedding's cos/sin cache does."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))
        self.register_buffer("cache", torch.zeros(2), persistent=False)

    def forward(self, x, length):
        if length > self.cache.numel():
            self.cache = torch.arange(length, dtype=torch.float32)
        self.calls += 1
        return self.linear(x).sum() * self.cache[:length].sum()


class NonPersistentBufferTest(HandlerCase):
    """A module's non-persistent buffers are left out of its checkpoint, as
    torch's state_dict leaves them out, by handlers in this process."""

    prefix = "lifeboat-torch-nonpersistent-"

    def trainer(self, seed):
        torch.manual_seed(seed)
        model = torch.nn.Sequential(GrowingCache())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        return model, optimizer, self.handler_of(model, optimizer)

    def test_a_cache_replaced_as_it_grows_neither_fails_a_save_nor_is_restored(self):
        model, optimizer, handler = self.trainer(seed=0)

        def step():
            optimizer.zero_grad()
            model[0](torch.ones(4), 2 + running.total_run_calls).backward()
            optimizer.step()

        with handler() as running:
            for _ in range(6):
                running.run(step)
        self.assertEqual(self.committed_steps(), [3, 6])
        trained = {k: v.clone() for k, v in model.state_dict().items()}
        self.assertEqual(set(trained), {"0.linear.weight", "0.linear.bias", "0.calls"})

        model, _, handler = self.trainer(seed=1)
        with handler() as resumed:
            self.assertEqual(resumed.total_run_calls, 6)
        for name, value in model.state_dict().items():
            self.assertTrue(torch.equal(value, trained[name]), name)
        self.assertTrue(torch.equal(model[0].cache, torch.zeros(2)))


class MemoryOrderTest(HandlerCase):
    """Tensors whose dimensions lie in memory in another order than their
    shape's (channels_last), saved and restored in place by handlers in this
    process (a world of one)."""

    prefix = "lifeboat-torch-order-"

    def trainer(self, seed, channels_last=True):
        torch.manual_seed(seed)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        return model, optimizer, self.handler_of(model, optimizer)

    def test_a_channels_last_model_and_its_adam_state_restore_bit_exact(self):
        model, optimizer, handler = self.trainer(seed=0)
        self.assertTrue(model[0].weight.is_contiguous(memory_format=torch.channels_last))
        self.assertFalse(model[0].weight.is_contiguous())

        def step():
            optimizer.zero_grad()
            x = torch.randn(2, 3, 6, 6).to(memory_format=torch.channels_last)
            model(x).square().sum().backward()
            optimizer.step()

        with handler() as running:
            for _ in range(3):
                running.run(step)
        trained = {k: v.clone() for k, v in model.state_dict().items()}
        moments = optimizer.state[model[0].weight]["exp_avg"].clone()

        model, optimizer, handler = self.trainer(seed=1)
        self.assertFalse(torch.equal(model[0].weight, trained["0.weight"]))
        with handler() as resumed:
            self.assertEqual(resumed.total_run_calls, 3)
        for name, value in model.state_dict().items():
            self.assertTrue(torch.equal(value, trained[name]), name)
        self.assertTrue(model[0].weight.is_contiguous(memory_format=torch.channels_last))
        self.assertTrue(torch.equal(optimizer.state[model[0].weight]["exp_avg"], moments))

        # The same model in the default order: its bytes would be read in the
        # wrong order, and the names differ.
        _, _, handler = self.trainer(seed=1, channels_last=False)
        with self.assertRaisesRegex(lifeboat.ConfigError,
                                    r"'model/0.weight \(memory order 0,2,3,1\)' in the "
                                    "checkpoint but 'model/0.weight' registered"):
            handler()


class QuantizationAwareTest(HandlerCase):
    """A model prepared for quantization-aware training (per-channel weight
    observers, fused fake quantization), saved and restored in place by
    handlers in this process (a world of one)."""

    prefix = "lifeboat-torch-qat-"

    @staticmethod
    def prepared(seed):
        torch.manual_seed(seed)
        quantization = torch.ao.quantization
        model = torch.nn.Sequential(quantization.QuantStub(), torch.nn.Conv2d(3, 4, 3),
                                    torch.nn.ReLU(), quantization.DeQuantStub())
        model.qconfig = quantization.get_default_qat_qconfig("fbgemm")
        with warnings.catch_warnings():  # "reduce_range will be deprecated ..."
            warnings.simplefilter("ignore")
            quantization.prepare_qat(model.train(), inplace=True)
        return model

    def trainer(self, seed):
        """A prepared model after one forward pass, its SGD and its handler."""
        model = self.prepared(seed)
        model(torch.randn(2, 3, 8, 8))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        return model, optimizer, self.handler_of(model, optimizer)

    def test_registered_before_its_first_forward_pass_it_is_refused_naming_the_observer(self):
        model = self.prepared(0)
        with self.assertRaisesRegex(
                lifeboat.ConfigError,
                r"'model/1.weight_fake_quant.activation_post_process.min_val' is empty until its "
                r"quantization observer \(MovingAveragePerChannelMinMaxObserver\) sees its "
                "first batch.*run a forward pass of the prepared model before registering it"):
            lifeboat.torch.add_module(lifeboat.CheckpointState(), model)
        model(torch.randn(2, 3, 8, 8))  # its memory was left to torch to resize

    def test_registered_after_a_forward_pass_its_weights_and_observers_restore_bit_exact(self):
        model, optimizer, handler = self.trainer(seed=0)

        def step():
            optimizer.zero_grad()
            model(torch.randn(2, 3, 8, 8)).square().sum().backward()
            optimizer.step()

        with handler() as running:
            for _ in range(3):
                running.run(step)
        trained = {k: v.clone() for k, v in model.state_dict().items()}
        self.assertEqual(trained["1.weight_fake_quant.scale"].shape, (4,))

        model, optimizer, handler = self.trainer(seed=1)
        self.assertFalse(torch.equal(model[1].weight, trained["1.weight"]))
        with handler() as resumed:
            self.assertEqual(resumed.total_run_calls, 3)
        self.assertEqual(model.state_dict().keys(), trained.keys())
        for name, value in model.state_dict().items():
            self.assertTrue(torch.equal(value, trained[name]), name)


class UnregisteredParameterTest(HandlerCase):
    """An optimizer that trains a parameter no registered tensor holds, in
    this process (a world of one): refused before the restore, as lifeboat
    would neither save nor restore what it trains."""

    prefix = "lifeboat-torch-unregistered-"

    def test_an_optimizer_over_parameters_no_tensor_holds_is_refused_as_the_handler_is_built(self):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
        state = lifeboat.CheckpointState()
        lifeboat.torch.add_module(state, model[0])  # a part of the model
        lifeboat.torch.add_optimizer(state, torch.optim.Adam(model.parameters()))
        with self.assertRaisesRegex(lifeboat.ConfigError,
                                    r"optimizer 'optimizer' updates parameter 2 of group 0 "
                                    r"\(shape \[2, 3\], torch.float32\), which no tensor "
                                    "registered with lifeboat.torch holds"):
            self.handler(state)
        state = lifeboat.CheckpointState()
        free = torch.zeros(5, requires_grad=True)
        lifeboat.torch.add_optimizer(state, torch.optim.SGD([free], lr=0.1), prefix="sgd")
        with self.assertRaisesRegex(lifeboat.ConfigError, "optimizer 'sgd' updates parameter 0 "
                                                          "of group 0"):
            self.handler(state)

    def test_parameters_registered_frozen_or_inside_a_registered_tensor_are_accepted(self):
        # A frozen one only until it trains: unfrozen, it fails the next save.
        free = torch.zeros(5, requires_grad=True)
        frozen = torch.nn.Linear(4, 3).requires_grad_(False)
        flat = torch.zeros(12)
        views = [flat[:8].view(2, 4).requires_grad_(), flat[8:].requires_grad_()]
        state = lifeboat.CheckpointState()
        lifeboat.torch.add_tensor(state, "free", free)
        lifeboat.torch.add_tensor(state, "flat", flat)
        lifeboat.torch.add_optimizer(
            state, torch.optim.SGD([free, *frozen.parameters(), *views], lr=0.1))
        with self.handler(state) as handler:
            handler.run(lambda: None)
            frozen.requires_grad_(True)
            with self.assertRaisesRegex(lifeboat.PeerError,
                                        r"optimizer 'optimizer' updates parameter 1 of group 0 "
                                        r"\(shape \[3, 4\], torch.float32\) unfrozen after the "
                                        "handler was constructed, which no tensor registered"):
                run_until_it_raises(handler, lambda: None)
        self.assertEqual(self.committed_steps(), [1])

    def test_a_parameter_group_added_after_the_registration_fails_the_next_save(self):
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
        state = lifeboat.CheckpointState()
        lifeboat.torch.add_module(state, model)
        optimizer = torch.optim.SGD(model[0].parameters(), lr=0.1, momentum=0.9)
        lifeboat.torch.add_optimizer(state, optimizer)

        def step():
            optimizer.zero_grad()
            model(torch.randn(8, 4)).square().sum().backward()
            optimizer.step()

        with self.handler(state) as handler:
            handler.run(step)
            # Unfreezing the next layer: its momentum would be in no checkpoint.
            optimizer.add_param_group({"params": model[1].parameters()})
            with self.assertRaisesRegex(lifeboat.PeerError,
                                        r"optimizer 'optimizer' updates other parameters than "
                                        r"when it was registered \(groups of \[2\] parameters "
                                        r"then, \[2, 2\] now"):
                run_until_it_raises(handler, step)
        self.assertEqual(self.committed_steps(), [1])


class TorchTrainerTest(scratch_case.ScratchCase):
    reference = None

    prefix = "lifeboat-torch-test-"

    def expected_digest(self):
        """The digest of an uninterrupted run, the same on every rank (run once)."""
        if TorchTrainerTest.reference is None:
            run = launch(os.path.join(self.dir, "reference"))
            self.assertEqual(run.finish(RUN_TIMEOUT), 0, run.transcript())
            found = digests(run)
            self.assertEqual(sorted(found), list(range(WORLD)), run.transcript())
            self.assertEqual(len(set(found.values())), 1, run.transcript())
            TorchTrainerTest.reference = found[0]
        return TorchTrainerTest.reference

    def assert_resumed_bit_exact(self, process, saved, expected=None):
        """Every rank restored step `saved` and ended with the uninterrupted run's
        bits: `expected`, {rank: (step, digest)}, or expected_digest() on every rank."""
        if expected is None:
            expected = {r: self.expected_digest() for r in range(WORLD)}
        for rank in range(WORLD):
            self.assertIn(f"rank={rank} restored={saved} ", "\n".join(process.lines) + "\n",
                          process.transcript())
        self.assertEqual(digests(process), expected, process.transcript())

    def test_a_sigterm_to_a_random_rank_under_lifeboat_launch_resumes_bit_exact(self):
        for trial in range(3):
            with self.subTest(trial=trial):
                shutil.rmtree(self.ckpt, ignore_errors=True)
                rank, step = random.randrange(WORLD), random.randint(3, STEPS // 2)
                run = launch(self.ckpt)
                pid = pid_of(run, rank)
                self.assertTrue(run.wait_line(f"rank={rank} step={step}", EVENT_TIMEOUT),
                                run.transcript())
                os.kill(pid, signal.SIGTERM)
                self.assertEqual(run.finish(RUN_TIMEOUT), 0, run.transcript())
                self.assertIn(f"lifeboat-launch: rank={rank} pid=", run.transcript())
                (saved,) = self.committed_steps()
                self.assertGreaterEqual(saved, step)
                self.assert_resumed_bit_exact(run, saved)

    def test_zero_redundancy_optimizer_shards_resume_bit_exact_after_a_sigterm(self):
        # Each rank holds Adam's state for its shard of the parameters only
        # (in the optimizer ZeRO wraps), and saves that: every rank's digest
        # differs, each equal to its uninterrupted run's.
        reference = launch(os.path.join(self.dir, "reference"), ["--zero"])
        self.assertEqual(reference.finish(RUN_TIMEOUT), 0, reference.transcript())
        expected = digests(reference)
        self.assertEqual(sorted(expected), list(range(WORLD)), reference.transcript())
        self.assertEqual(len(set(expected.values())), WORLD, reference.transcript())
        run = launch(self.ckpt, ["--zero"])
        pid = pid_of(run, 2)
        self.assertTrue(run.wait_line(f"rank=2 step={STEPS // 3}", EVENT_TIMEOUT),
                        run.transcript())
        os.kill(pid, signal.SIGTERM)
        self.assertEqual(run.finish(RUN_TIMEOUT), 0, run.transcript())
        (saved,) = self.committed_steps()
        self.assert_resumed_bit_exact(run, saved, expected)

    def test_a_rank_killed_outright_resumes_every_rank_from_the_last_backup_bit_exact(self):
        # No notice: the backups, saved every second while training goes on,
        # hold what each step left (the schedule's and the generators' state
        # too), and the launcher's restart resumes from the newest.
        run = launch(self.ckpt, ["--step-ms", "50", "--save-every-s", "1"], max_restarts=1)
        pid = pid_of(run, 1)
        backup = run.wait_line("lifeboat[rank 1] checkpoint_writer: checkpoint at step ",
                               EVENT_TIMEOUT)
        self.assertTrue(backup, run.transcript())
        os.kill(pid, signal.SIGKILL)
        self.assertEqual(run.finish(RUN_TIMEOUT), 0, run.transcript())
        self.assertIn(f"rank 1 (pid {pid}) was killed by SIGKILL", run.transcript())
        resumed = [int(line.split()[1][len("restored="):]) for line in run.lines
                   if line.startswith("rank=0 restored=") and " restored=0 " not in line]
        self.assertEqual(len(resumed), 1, run.transcript())
        self.assertGreaterEqual(resumed[0], int(backup.split("step ")[1].split()[0]))
        self.assert_resumed_bit_exact(run, resumed[0])

    def test_a_sigterm_to_one_worker_under_torchrun_restarts_and_resumes_bit_exact(self):
        run = torchrun(self.dir, self.ckpt, max_restarts=1)
        pid = pid_of(run, 1)
        self.assertTrue(run.wait_line("rank=1 step=5", EVENT_TIMEOUT), run.transcript())
        os.kill(pid, signal.SIGTERM)
        self.assertEqual(run.finish(RUN_TIMEOUT), 0, run.transcript())
        (saved,) = self.committed_steps()
        self.assert_resumed_bit_exact(run, saved)

    def test_a_sigterm_to_torchrun_saves_and_a_rerun_resumes_bit_exact(self):
        first = torchrun(self.dir, self.ckpt, max_restarts=1)
        self.assertTrue(first.wait_line("rank=0 step=5", EVENT_TIMEOUT), first.transcript())
        first.proc.send_signal(signal.SIGTERM)
        self.assertNotEqual(first.finish(RUN_TIMEOUT), 0, first.transcript())
        self.assertEqual(digests(first), {}, first.transcript())
        (saved,) = self.committed_steps()

        second = torchrun(self.dir, self.ckpt, max_restarts=0)
        self.assertEqual(second.finish(RUN_TIMEOUT), 0, second.transcript())
        self.assert_resumed_bit_exact(second, saved)

    def test_a_sigusr1_to_every_process_with_dataloader_workers_resumes_bit_exact(self):
        # A scheduler's notice to every process of the job (SLURM's
        # --signal=USR1@N): DataLoader workers forked after the handler
        # inherit lifeboat's signal handler, and must go on serving their
        # trainer while it saves rather than die or take the notice for theirs.
        run = launch(self.ckpt, ["--loader-workers", "2"])
        pids = []
        for rank in range(WORLD):
            pids.append(pid_of(run, rank))
            line = run.wait_line(f"rank={rank} loader_pids=", EVENT_TIMEOUT)
            self.assertTrue(line, run.transcript())
            pids += [int(pid) for pid in line.split("=", 2)[2].split(",")]
        self.assertEqual(len(pids), WORLD * 3, run.transcript())
        self.assertTrue(run.wait_line("rank=0 step=5", EVENT_TIMEOUT), run.transcript())
        for pid in pids:
            os.kill(pid, signal.SIGUSR1)
        self.assertEqual(run.finish(RUN_TIMEOUT), 0, run.transcript())
        (saved,) = self.committed_steps()
        self.assert_resumed_bit_exact(run, saved)

    def test_a_step_raising_on_rank_1_raises_its_error_on_every_rank_once(self):
        # Rank 1 raises before its backward, while its peers wait for it in
        # DDP's all-reduce; the all-reduce then fails on the peers too, and
        # that second error must not be reported as a failure of their own.
        for trial in range(10):
            with self.subTest(trial=trial):
                step = random.randint(2, 10)
                run = launch(self.ckpt, ["--fail-rank", "1", "--fail-step", str(step)])
                self.assertEqual(run.finish(RUN_TIMEOUT), FAILURE_EXIT_CODE, run.transcript())
                text = run.transcript()
                error = f"ValueError: injected failure at step {step}"
                raised = {1: f"ValueError origin=1 error=injected failure at step {step}",
                          0: f"PeerError origin=1 error=.*{error}",
                          2: f"PeerError origin=1 error=.*{error}"}
                for rank, what in raised.items():
                    self.assertRegex(text, re.compile(f"^rank={rank} raised={what}$", re.M))
                    self.assertRegex(text, f"lifeboat-launch: rank {rank} \\(pid \\d+\\) exited "
                                           "with code 3")
                failures = re.findall(r"runtime: error: step \d+ failed: (.*)", text)
                self.assertEqual(failures, [error], text)
                self.assertEqual(len(re.findall(r" reported error ", text)), 1, text)
                self.assertIn(f"giving up: rank 1 failed: {error} ", text)
                self.assertEqual(self.committed_steps(), [])

    def test_a_rank_stuck_before_its_all_reduce_fails_the_job_as_hung_within_the_timeout(self):
        # Rank 1 stops before its backward; its peers wait in DDP's all-reduce
        # (gloo's own timeout: 60 s here, 30 minutes by default). No rank
        # completes a step and every one is in its step: the job is hung.
        run = launch(self.ckpt, ["--hang-rank", "1", "--hang-step", "8", "--hang-timeout", "2"])
        self.assertEqual(run.finish(RUN_TIMEOUT), FAILURE_EXIT_CODE, run.transcript())
        text = run.transcript()
        self.assertIn("giving up: hang: no rank completed a step for ", text)
        self.assertIn("(every rank's last step 7) while every rank was in its next step", text)
        self.assertEqual(text.count("native stack of the training thread"), WORLD, text)
        # The three ranks' stacks share the launcher's output, and faulthandler
        # writes a frame's parts one by one: only the function's name is whole.
        self.assertIn("hang_forever", text)
        self.assertEqual(self.committed_steps(), [])

    def test_a_foreign_listener_on_lifeboats_port_under_torchrun_ends_every_worker(self):
        # Another job's server holds MASTER_PORT + 1, lifeboat's port under
        # torchrun: rank 0 cannot host the service and says so; the others,
        # joining a stranger, end as torchrun stops the group (the start-up
        # guard), none left for torchrun to SIGKILL after its 30 s.
        master_port = free_port_pair()
        with socket.socket() as stranger:
            stranger.bind(("127.0.0.1", master_port + 1))
            stranger.listen(8)
            run = output_lines.Process(
                [sys.executable, "-m", "torch.distributed.run",
                 *torchrun_flags(self.dir, 0, master_port), *trainer_args(self.ckpt)],
                environment())
            self.assertNotEqual(run.finish(RUN_TIMEOUT), 0, run.transcript())
        text = run.transcript()
        self.assertIn("cannot host the coordination service", text)
        self.assertNotIn("SIGKILL", text)
        self.assertEqual(digests(run), {}, text)


# In hosts of their own, where nothing else listens: lifeboat's service on
# host 0, gloo's rendezvous on the next port, the launchers' link two above.
HOSTS_PORT = 29400
HOSTS_PER_NODE = 2


def launch_node(hosts, k, ckpt):
    """Node k of a job across `hosts` (network_hosts.NetworkHosts), one
    lifeboat-launch per host with HOSTS_PER_NODE trainers; gloo goes over the
    hosts' network (GLOO_SOCKET_IFNAME), as lifeboat does."""
    env = environment()
    env["TMPDIR"] = os.path.dirname(ckpt)
    env["LIFEBOAT_CLUSTER_TOKEN"] = "torch-test-across-hosts"
    env["GLOO_SOCKET_IFNAME"] = network_hosts.INTERFACE
    return output_lines.Process(hosts.command(k, [
        os.environ["LIFEBOAT_LAUNCH"], "--nnodes", str(hosts.count), "--node-rank", str(k),
        "--coordinator", f"{hosts.address(0)}:{HOSTS_PORT}", "--nproc", str(HOSTS_PER_NODE),
        "--", sys.executable, *trainer_args(ckpt)]), env)


class AcrossHostsTest(scratch_case.ScratchCase):
    """torch trainers on two hosts (network namespaces), gloo and lifeboat
    between them over the hosts' network only."""

    prefix = "lifeboat-torch-hosts-test-"

    def run_nodes(self, hosts, ckpt, signal_rank=None):
        """Both nodes' launchers; with `signal_rank`, a SIGTERM to the launcher
        of that rank's node once the rank completed step 5. The launchers'
        exit codes, and {rank: (step, digest)} of every trainer that finished."""
        nodes = [launch_node(hosts, k, ckpt) for k in range(hosts.count)]
        if signal_rank is not None:
            node = nodes[signal_rank // HOSTS_PER_NODE]
            self.assertTrue(node.wait_line(f"rank={signal_rank} step=5", EVENT_TIMEOUT),
                            node.transcript())
            node.proc.send_signal(signal.SIGTERM)
        codes = [node.finish(RUN_TIMEOUT) for node in nodes]
        found = {}
        for node in nodes:
            found.update(digests(node))
        return codes, found, "\n".join(n.transcript() for n in nodes)

    def test_a_sigterm_to_one_hosts_launcher_saves_on_both_and_a_rerun_resumes_bit_exact(self):
        with network_hosts.NetworkHosts(2) as hosts:
            if not hosts.ok:
                self.skipTest("cannot create network namespaces (needs root)")
            world = hosts.count * HOSTS_PER_NODE
            codes, reference, text = self.run_nodes(hosts, os.path.join(self.dir, "reference"))
            self.assertEqual(codes, [0, 0], text)
            self.assertEqual(len(reference), world, text)
            (expected,) = set(reference.values())

            # A preemption of host 1: every launcher saves with the job and
            # exits with the restart code, for the scheduler to start again.
            codes, found, text = self.run_nodes(hosts, self.ckpt, signal_rank=world - 1)
            self.assertEqual(codes, [RESTART_EXIT_CODE] * 2, text)
            self.assertEqual(found, {}, text)
            (saved,) = self.committed_steps()
            self.assertGreaterEqual(saved, 5)

            codes, found, text = self.run_nodes(hosts, self.ckpt)
            self.assertEqual(codes, [0, 0], text)
            for rank in range(world):
                self.assertIn(f"rank={rank} restored={saved} ", text)
            self.assertEqual(found, {rank: expected for rank in range(world)}, text)


if __name__ == "__main__":
    unittest.main()
