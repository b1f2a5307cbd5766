"""Loading Hugging Face models on the calling thread, so that Ctrl-C always ends the process.

transformers 5 reads a checkpoint's tensors on a thread pool (``core_model_loading``). A
KeyboardInterrupt that lands while the pool starts a worker (inside CPython's
``ThreadPoolExecutor.submit``, between the thread's start and its registration) leaves a worker
that nothing tells to stop while the interrupted call's frames live, and the traceback Python
keeps at exit keeps them: the interpreter then waits for that worker forever. Every model
botgrpo loads goes through :func:`from_pretrained`, which asks transformers to read on the
calling thread (``HF_DEACTIVATE_ASYNC_LOAD``) for the call's duration: a checkpoint on the local
disk loads at nearly the same speed, and an interrupted command ends. A value the user set for
the variable is left as it is.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: transformers' switch for reading a checkpoint's tensors on the calling thread.
SYNC_LOAD_VARIABLE = "HF_DEACTIVATE_ASYNC_LOAD"

_lock = threading.Lock()
_depth = 0  # loads under way that set the variable


@contextmanager
def loading_on_this_thread() -> Iterator[None]:
    """Within the block, transformers reads checkpoints on the calling thread (nested and
    concurrent blocks share one setting; the last to leave restores the environment)."""
    global _depth
    with _lock:
        owner = _depth > 0 or SYNC_LOAD_VARIABLE not in os.environ
        if owner:
            _depth += 1
            os.environ[SYNC_LOAD_VARIABLE] = "1"
    try:
        yield
    finally:
        if owner:
            with _lock:
                _depth -= 1
                if _depth == 0:
                    os.environ.pop(SYNC_LOAD_VARIABLE, None)


def from_pretrained(cls: Any, *args: Any, **kwargs: Any) -> Any:
    """``cls.from_pretrained(*args, **kwargs)`` read on the calling thread (see the module)."""
    with loading_on_this_thread():
        return cls.from_pretrained(*args, **kwargs)
