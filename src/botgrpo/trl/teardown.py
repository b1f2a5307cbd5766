"""End a (multi-process) training run so that the process exits cleanly.

Under torchrun or ``accelerate launch`` on gloo, a process whose training has finished can still
abort (SIGABRT, "terminate called without an active exception") or hang on its way out. The
cause is in how a gloo worker thread drops a finished collective: it frees the collective's
buffers only after the caller's ``wait()`` has returned, and if Python gave up its last
reference to one of them, freeing it needs the GIL. If the main thread meanwhile holds the GIL
and frees the process group (the DDP-wrapped model keeps it alive in a reference cycle until the
garbage collector runs), the group's destructor waits for the worker and the worker for the
GIL: a hang; if instead the interpreter is shutting down, the worker's GIL request ends the
thread inside a destructor: an abort.

The order that avoids both::

    end_training(trainer)   # workers drained, trackers finished, process group destroyed
    del trainer
    gc.collect()            # frees the group while Python is alive and its workers are idle
"""

from __future__ import annotations

import time
from typing import Any

DRAIN_SECONDS = 1.0
"""How long the main thread gives up the GIL before destroying the group, so that a gloo worker
still holding a finished collective's buffers can free them (it needs the GIL for a moment; one
scheduling slice is enough, a second leaves a wide margin on a loaded machine)."""


def end_training(trainer: Any) -> None:
    """Let the process group's worker threads go idle, finish trackers, destroy the group.

    ``trainer`` is any transformers ``Trainer`` (its ``accelerator``). On one process this is
    ``accelerator.end_training()``; on several it first sleeps ``DRAIN_SECONDS`` (releasing the
    GIL). The caller drops its references to the trainer and calls ``gc.collect()`` next (module
    docstring).
    """
    accelerator = trainer.accelerator
    if accelerator.num_processes > 1:
        time.sleep(DRAIN_SECONDS)
    accelerator.end_training()
