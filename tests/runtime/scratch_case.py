"""A test case with a scratch directory of its own and the checkpoint
directory inside it, as the multi-process Python tests use them."""

import os
import shutil
import tempfile
import unittest


class ScratchCase(unittest.TestCase):
    """self.dir: removed after each test; self.ckpt: the checkpoint directory in it."""

    prefix = "lifeboat-test-"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        self.ckpt = os.path.join(self.dir, "ckpt")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def committed_steps(self):
        """The steps of the committed checkpoints (with a MANIFEST), ascending."""
        if not os.path.isdir(self.ckpt):
            return []
        return sorted(int(d[len("step-"):]) for d in os.listdir(self.ckpt)
                      if d.startswith("step-") and
                      os.path.exists(os.path.join(self.ckpt, d, "MANIFEST")))
