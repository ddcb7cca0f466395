"""A PyTorch worker for torch_test: gloo, DistributedDataParallel, dropout,
Adam and a OneCycleLR schedule (which moves Adam's learning rate and beta1
every step), checkpointed through lifeboat.torch, in the README's pattern.

Deterministic: the model starts from a fixed seed, the batch of step N on
rank R is a pure function of (R, N), and dropout draws from torch's generator,
which lifeboat saves with the rest, so a run preempted and resumed any number
of times ends with the same bits as one that was not. One line per event on
stdout, each starting with this worker's rank (the test synchronises on them):

  rank=R restored=N pid=P           total_run_calls after construction
  rank=R loader_pids=P,Q            the DataLoader's worker processes (--loader-workers)
  rank=R step=N                     step N completed
  rank=R raised=TYPE origin=O error=TEXT
                                    run raised TYPE with message TEXT; O: the rank
                                    it names (this one for its own error)
  rank=R done step=N digest=HEX     training finished; HEX: SHA-256 of the
                                    parameters, buffers and optimizer state

The cluster is lifeboat-launch's (LIFEBOAT_*) or torchrun's (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT). gloo needs a rendezvous of its own: under torchrun
it is MASTER_ADDR:MASTER_PORT (lifeboat takes MASTER_PORT + 1); under
lifeboat-launch it is the coordinator's host and port + 1.

Exit codes: 0 finished, 3 failure, 42 (lifeboat) after a preemption checkpoint.
"""

import argparse
import datetime
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.distributed.optim import ZeroRedundancyOptimizer

import lifeboat
import lifeboat.torch

FAILURE_EXIT_CODE = 3
FEATURES = 8
# Bounds the rendezvous and every collective: a peer that is gone ends the
# wait with an error instead of gloo's default of 30 minutes.
COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=60)


def say(line):
    # One write(2) per line: lifeboat's log shares the pipe, and lifeboat may
    # end the process right after a step.
    os.write(sys.stdout.fileno(), (line + "\n").encode())



class Model(nn.Module):
    """Layers declared in another order than the forward pass uses them, so
    DDP's first gradient buckets (declaration order) differ from the ones it
    rebuilds after the first backward (the order gradients became ready)."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 1)
        self.body = nn.Linear(FEATURES, 16)
        self.dropout = nn.Dropout(0.25)
        self.register_buffer("batches", torch.zeros(1, dtype=torch.int64))

    def forward(self, x):
        with torch.no_grad():
            self.batches += 1
        return self.head(self.dropout(torch.tanh(self.body(x))))


def hang_forever():
    """A step stuck before its backward, its runtime alive (a hang)."""
    while True:
        time.sleep(3600)


def batch(rank, step):
    generator = torch.Generator().manual_seed(rank * 1_000_003 + step)
    x = torch.randn(32, FEATURES, generator=generator)
    return x, x.sum(dim=1, keepdim=True).sin()


class Batches(torch.utils.data.Dataset):
    """The batches of steps first..last of one rank, for a DataLoader."""

    def __init__(self, rank, first, last):
        self.rank, self.first, self.last = rank, first, last

    def __len__(self):
        return max(self.last - self.first + 1, 0)

    def __getitem__(self, index):
        return batch(self.rank, self.first + index)


def digest(tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--step-ms", type=int, default=0)
    parser.add_argument("--fail-rank", type=int, default=-1)
    parser.add_argument("--fail-step", type=int, default=-1)
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--hang-step", type=int, default=-1)
    parser.add_argument("--hang-timeout", type=float, default=None)
    parser.add_argument("--no-warm-up", action="store_true")
    parser.add_argument("--save-every-s", type=float, default=0,
                        help="a backup save this often (TerminationConfig.save_every_seconds)")
    parser.add_argument("--zero", action="store_true",
                        help="Adam sharded across the ranks by ZeroRedundancyOptimizer")
    parser.add_argument("--loader-workers", type=int, default=0,
                        help="batches from a DataLoader with this many forked workers")
    opts = parser.parse_args()

    torch.set_num_threads(1)
    # torch's env:// rendezvous, as a trainer written for torchrun has it:
    # lifeboat-launch sets torchrun's variables as well (RANK, WORLD_SIZE,
    # MASTER_ADDR, MASTER_PORT).
    dist.init_process_group("gloo", timeout=COLLECTIVE_TIMEOUT)
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(Model())
    loss_fn = nn.MSELoss()
    if not opts.no_warm_up:
        # DDP rebuilds its gradient buckets after the first backward of each
        # process, which changes the order gloo sums gradients in. A resumed
        # process would run its first step with the first buckets where the
        # uninterrupted one ran it with the rebuilt ones; one backward, before
        # the restore overwrites what it changed, gives every real step the
        # rebuilt buckets.
        x, y = batch(rank, 0)
        loss_fn(model(x), y).backward()
        model.zero_grad()
    if opts.zero:
        # Its defaults are only the arguments given: OneCycleLR looks for betas
        # there. With bucket views every parameter's memory moves into ZeRO's
        # buckets here, before lifeboat.torch registers it.
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                            parameters_as_bucket_view=True, lr=0.01,
                                            betas=(0.9, 0.999))
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.05,
                                                   total_steps=opts.steps)

    state = lifeboat.CheckpointState()
    lifeboat.torch.add_module(state, model.module)
    lifeboat.torch.add_optimizer(state, optimizer)
    lifeboat.torch.add_scheduler(state, schedule)
    lifeboat.torch.add_rng(state)
    # This rank's optimizer state: with ZeRO, its shard, in the wrapped optimizer.
    local = optimizer.optim if opts.zero else optimizer
    tensors = list(model.module.state_dict().values()) + [
        t for s in local.state.values() for t in s.values()]
    # SIGUSR1 too, as under SLURM: the notice a scheduler may send to every
    # process of the job, DataLoader workers included.
    config = lifeboat.TerminationConfig(notice_sources=[], signals=["SIGTERM", "SIGUSR1"],
                                        hang_timeout=opts.hang_timeout,
                                        save_every_seconds=opts.save_every_s)

    handler = lifeboat.PreemptionCheckpointHandler(state, opts.checkpoint_dir, config)
    say(f"rank={rank} restored={handler.total_run_calls} pid={os.getpid()}")
    loaded = None
    if opts.loader_workers:
        # Forked after the handler, so the workers inherit its signal handler.
        # A generator of its own for the workers' base seed: drawn from
        # torch's, it would move the generator the restore just set, and
        # dropout would draw other masks than the uninterrupted run.
        loader = torch.utils.data.DataLoader(
            Batches(rank, handler.total_run_calls + 1, opts.steps), batch_size=None,
            num_workers=opts.loader_workers, multiprocessing_context="fork",
            generator=torch.Generator().manual_seed(rank))
        loaded = iter(loader)
        say(f"rank={rank} loader_pids={','.join(str(w.pid) for w in loaded._workers)}")

    def step():
        n = handler.total_run_calls + 1
        x, y = next(loaded) if loaded else batch(rank, n)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        if rank == opts.fail_rank and n == opts.fail_step:
            # Before the backward: the peers wait for this rank in its all-reduce.
            raise ValueError(f"injected failure at step {n}")
        if rank == opts.hang_rank and n == opts.hang_step:
            hang_forever()
        loss.backward()
        optimizer.step()
        schedule.step()
        time.sleep(opts.step_ms / 1000)
        say(f"rank={rank} step={n}")

    with handler:
        try:
            with handler.watch_preemption_scope():
                try:
                    while handler.total_run_calls < opts.steps:
                        handler.run(step)
                except Exception as e:
                    origin = getattr(e, "origin_rank", rank)
                    say(f"rank={rank} raised={type(e).__name__} origin={origin} error={e}")
                    raise
        except Exception:
            return FAILURE_EXIT_CODE
        say(f"rank={rank} done step={handler.total_run_calls} digest={digest(tensors)}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
