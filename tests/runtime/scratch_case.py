"""A test case with a scratch directory of its own and the checkpoint
directory inside it, as the multi-process Python tests use them."""

import glob
import os
import shutil
import tempfile
import unittest

# checkpoint/memory_tier.hpp's default_memory_root.
MEMORY_ROOT = "/dev/shm"


class ScratchCase(unittest.TestCase):
    """self.dir: removed after each test; self.ckpt: the checkpoint directory in it."""

    prefix = "lifeboat-test-"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        self.ckpt = os.path.join(self.dir, "ckpt")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        # A job that failed or exited 42 keeps its memory tier (default
        # directory /dev/shm/lifeboat-*, which records the checkpoint
        # directory it belongs to) for a start that never comes.
        for tier in glob.glob(os.path.join(MEMORY_ROOT, "lifeboat-*")):
            try:
                # Bytes, as a path is: another job's may be no UTF-8.
                with open(os.path.join(tier, "CHECKPOINT_DIR"), "rb") as record:
                    owner = os.fsdecode(record.read().strip())
            except OSError:
                continue
            if owner.startswith(self.dir + os.sep):
                shutil.rmtree(tier, ignore_errors=True)

    def committed_steps(self):
        """The steps of the committed checkpoints (with a MANIFEST), ascending."""
        if not os.path.isdir(self.ckpt):
            return []
        return sorted(int(d[len("step-"):]) for d in os.listdir(self.ckpt)
                      if d.startswith("step-") and
                      os.path.exists(os.path.join(self.ckpt, d, "MANIFEST")))
