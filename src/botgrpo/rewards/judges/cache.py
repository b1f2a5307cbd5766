"""On-disk cache of judge answers: one JSON file per request, keyed by a hash of the request.

The key is the SHA-256 of the canonical JSON of the request body (model, messages - which hold
the judged problem and completion -, temperature, max_tokens and any extra fields), so a
different model, prompt or completion is a different entry. Files are written to a temporary
name and renamed into place, so concurrent threads or processes never see a half-written entry.
Only answers that parsed are stored (the judges call :meth:`JudgeCache.put` after parsing).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _umask() -> int:
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


#: What ``open()`` gives a new file (0o666 less the umask): a cached answer is readable by whoever
#: could read the cache, not owner-only like :func:`tempfile.mkstemp`'s file.
_NEW_FILE_MODE = 0o666 & ~_umask()


def cache_key(payload: Mapping[str, Any]) -> str:
    """The SHA-256 hex digest of the canonical JSON of a request body.

    >>> a = cache_key({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    >>> b = cache_key({"messages": [{"role": "user", "content": "hi"}], "model": "m"})
    >>> a == b, a == cache_key({"model": "n", "messages": [{"role": "user", "content": "hi"}]})
    (True, False)
    """
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgeCache:
    """A directory of cached answers: ``<directory>/<key[:2]>/<key>.json``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        """Use (and create if needed) ``directory``."""
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(
                f"JudgeConfig.cache_dir {str(directory)!r} cannot be created "
                f"({err.strerror or err}); pass a writable folder, or none to disable the cache"
            ) from None

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives."""
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The cached answer for ``key``; ``None`` if absent or unreadable."""
        try:
            record = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("key") != key:
            return None
        answer = record.get("answer")
        return answer if isinstance(answer, str) else None

    def put(self, key: str, answer: str, *, model: str = "") -> bool:
        """Store ``answer`` under ``key`` atomically; False if the write failed."""
        record = {"key": key, "model": model, "answer": answer, "created": time.time()}
        target = self.path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(record, handle, ensure_ascii=False)
                    os.fchmod(handle.fileno(), _NEW_FILE_MODE)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return False
        return True
