"""Progress for long commands when progress bars are off: a line on stderr now and then.

``botgrpo compare --progress false`` (a log file, a batch job) still says where it is: every
``interval_s`` seconds, and whenever :meth:`QuietProgress.note` is called (a run finished), a
line ``LABEL: DONE/TOTAL steps (P%), elapsed 3m10s, ETA 5m02s[, detail]``. Steps done before
the command began (runs resumed from their checkpoints) count as done but not toward the pace:
the ETA is the steps left at the pace of the steps made since.
"""

from __future__ import annotations

import sys
import time


def format_duration(seconds: float) -> str:
    """``1h02m``, ``5m02s`` or ``42s``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class QuietProgress:
    """Periodic progress lines on stderr, standing in for a progress bar.

    Args:
        label: what is progressing (``warm start``, ``demo: 2 runs``).
        total: steps in all.
        enabled: False makes every call a no-op (the progress bar is showing instead).
        interval_s: seconds between lines.
        initial: steps already done when the command began (resumed runs).
    """

    def __init__(
        self,
        label: str,
        total: int,
        *,
        enabled: bool = True,
        interval_s: float = 60.0,
        initial: int = 0,
    ) -> None:
        self.label, self.total, self.enabled, self.interval_s = label, total, enabled, interval_s
        self.start = self.last = time.monotonic()
        self.initial = self.done = initial

    def update(self, done: int, detail: str = "") -> None:
        """Record ``done`` steps; print a line when ``interval_s`` has passed since the last."""
        self.done = done
        if self.enabled and time.monotonic() - self.last >= self.interval_s:
            self.note(detail)

    def note(self, detail: str = "") -> None:
        """Print a progress line now."""
        if not self.enabled:
            return
        now = time.monotonic()
        self.last = now
        elapsed = now - self.start
        share = self.done / self.total if self.total else 1.0
        made = self.done - self.initial
        left = max(0, self.total - self.done)
        eta = f", ETA {format_duration(elapsed * left / made)}" if made > 0 else ""
        tail = f", {detail}" if detail else ""
        print(
            f"{self.label}: {self.done}/{self.total} steps ({100 * share:.0f}%), elapsed "
            f"{format_duration(elapsed)}{eta}{tail}",
            file=sys.stderr,
            flush=True,
        )
