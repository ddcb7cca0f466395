"""lifeboat: preemption-aware checkpointing for synchronous distributed training.

The handler API is the extension module lifeboat._lifeboat, re-exported here
with a controller's PreemptionWatcher (lifeboat.watcher); lifeboat.torch
registers PyTorch modules and optimizers (import it explicitly: importing
lifeboat does not import torch).
"""

from lifeboat._lifeboat import (CheckpointError, CheckpointState, ConfigError, PeerError,
                                PreemptionCheckpointHandler, PreemptionScope,
                                RestoredCheckpoint, TerminationConfig, VerifiedCheckpoint,
                                committed_steps, restore_checkpoint, verify_checkpoint)
from lifeboat.watcher import PreemptionWatcher

__all__ = ["CheckpointError", "CheckpointState", "ConfigError", "PeerError",
           "PreemptionCheckpointHandler", "PreemptionScope", "PreemptionWatcher",
           "RestoredCheckpoint", "TerminationConfig", "VerifiedCheckpoint", "committed_steps", "restore_checkpoint",
           "verify_checkpoint"]

# Errors and reprs name the package users import, not the extension inside it.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
