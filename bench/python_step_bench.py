"""The Python per-step cost: handler.run(step) minus a bare step() call, in
nanoseconds per call, against a target of 100 ns.

Both loops run in blocks, interleaved (run, bare, run, bare, ...), in one
process on one handler (local mode, no notice); each block's difference is a
sample and the median of the samples is printed, so a slow phase of the host
shifts both sides of a sample alike.

Run by scripts/bench.sh with PYTHONPATH naming the build's Python package.
"""

import os
import statistics
import sys
import tempfile
import time

import lifeboat

TARGET_NS = 100
BLOCKS = 41
CALLS = 20_000


def step():
    pass


def per_call_ns(loop):
    start = time.perf_counter_ns()
    loop()
    return (time.perf_counter_ns() - start) / CALLS


def main():
    # Local mode: none of the cluster variables lifeboat reads.
    for name in [n for n in os.environ if n.startswith(("LIFEBOAT_", "SLURM_"))] + [
            "TF_CONFIG", "RANK", "WORLD_SIZE"]:
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="lifeboat-python-bench-") as ckpt:
        with lifeboat.PreemptionCheckpointHandler(lifeboat.CheckpointState(), ckpt) as handler:
            run = handler.run

            def through_lifeboat():
                for _ in range(CALLS):
                    run(step)

            def bare():
                for _ in range(CALLS):
                    step()

            samples, runs, bares = [], [], []
            for _ in range(BLOCKS):
                runs.append(per_call_ns(through_lifeboat))
                bares.append(per_call_ns(bare))
                samples.append(runs[-1] - bares[-1])
    cost = statistics.median(samples)
    print(f"python handler.run(step) - step(): {cost:.0f} ns per call (median of {BLOCKS} "
          f"interleaved blocks of {CALLS}; run {statistics.median(runs):.0f} ns, bare step "
          f"{statistics.median(bares):.0f} ns); target {TARGET_NS} ns: ratio "
          f"{cost / TARGET_NS:.2f}")


if __name__ == "__main__":
    sys.exit(main())
