"""HTTP client of the LLM judges: one chat-completions call with retries, backoff and a bound.

:class:`JudgeClient` POSTs ``{"model", "messages", "temperature", "max_tokens"}`` (plus
``JudgeConfig.extra_body``) to ``{base_url}/chat/completions`` and returns the answer text as a
:class:`Reply`. It never raises for a failed request: a timeout, a connection error, an HTTP error
or a malformed body comes back as ``Reply(text=None, error=...)`` and is counted in
:class:`JudgeMetrics`.

Retry policy: timeouts, HTTP 429 and HTTP 5xx are re-sent up to ``max_retries`` times after
``min(backoff_max_s, backoff_base_s * 2**i) * (1 - jitter * U[0, 1))`` seconds (retry ``i`` =
0, 1, ...), or after the server's ``Retry-After`` (capped by ``backoff_max_s``) when that is
longer. Connection errors, other 4xx and malformed bodies are not retried.
"""

from __future__ import annotations

import dataclasses
import datetime
import email.utils
import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import httpx

from botgrpo.rewards.judges.config import JudgeConfig

Messages = Sequence[Mapping[str, str]]
"""Chat messages: ``[{"role": "system" | "user" | "assistant", "content": str}, ...]``."""


@dataclass
class JudgeMetrics:
    """Thread-safe counters of what the judges did; log them with :meth:`as_dict`.

    >>> m = JudgeMetrics()
    >>> m.add("requests", 2)
    >>> m.as_dict(prefix="judge/")["judge/requests"]
    2
    """

    requests: int = 0
    """HTTP requests sent, retries included."""
    retries: int = 0
    """Requests that were re-sends after a timeout, HTTP 429 or HTTP 5xx."""
    cache_hits: int = 0
    """Judgements answered from the on-disk cache without a request."""
    timeouts: int = 0
    """Requests that timed out."""
    connection_errors: int = 0
    """Requests that failed below HTTP (refused, reset, protocol error)."""
    http_errors: int = 0
    """Responses with a non-2xx status."""
    bad_responses: int = 0
    """2xx responses whose body held no answer text (not JSON, no ``choices``, empty content)."""
    parse_failures: int = 0
    """Answers in which no usable verdict or score was found."""
    dropped_entries: int = 0
    """Entries of parsed answers that were invalid and dropped (e.g. a line out of range)."""
    cache_write_errors: int = 0
    """Answers that could not be written to the cache (the judgement itself is unaffected)."""
    internal_errors: int = 0
    """Unexpected exceptions inside a judge, turned into neutral results."""
    judgements: int = 0
    """Results returned (one per judged item)."""
    failures: int = 0
    """Results that are neutral because the judge failed (``ok`` is False)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, n: int = 1) -> None:
        """Increase counter ``name`` by ``n``."""
        if name.startswith("_") or not isinstance(getattr(self, name, None), int):
            raise AttributeError(f"JudgeMetrics has no counter {name!r}")
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def as_dict(self, prefix: str = "") -> dict[str, int]:
        """A consistent snapshot of every counter, keys optionally prefixed."""
        with self._lock:
            return {
                prefix + f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)
                if not f.name.startswith("_")
            }

    def reset(self) -> None:
        """Set every counter back to 0."""
        with self._lock:
            for f in dataclasses.fields(self):
                if not f.name.startswith("_"):
                    setattr(self, f.name, 0)


@dataclass(frozen=True)
class Reply:
    """The outcome of one chat-completions call: the answer text, or why there is none."""

    text: str | None
    """The assistant message content; ``None`` when the call failed."""
    error: str | None = None
    """What went wrong (``None`` on success)."""


@dataclass(frozen=True)
class _Attempt:
    """One HTTP attempt: its reply, whether it may be retried, and the server's Retry-After."""

    reply: Reply
    retryable: bool = False
    retry_after_s: float | None = None


def backoff_delay(retry: int, base_s: float, max_s: float, jitter: float, u: float) -> float:
    """Seconds to wait before retry number ``retry`` (0-based), given a uniform draw ``u``.

    ``min(max_s, base_s * 2**retry) * (1 - jitter * u)``.

    >>> [backoff_delay(i, 1.0, 5.0, 0.0, 0.3) for i in range(4)]
    [1.0, 2.0, 4.0, 5.0]
    >>> backoff_delay(1, 1.0, 5.0, 0.5, 0.5)
    1.5
    """
    return min(max_s, base_s * 2.0**retry) * (1.0 - jitter * u)


class JudgeClient:
    """Sends chat-completions requests with retries; at most ``max_concurrency`` in flight.

    Safe to share between threads and between judges (they then share the bound and metrics).
    """

    def __init__(
        self,
        config: JudgeConfig,
        metrics: JudgeMetrics | None = None,
        *,
        rng: random.Random | None = None,
    ) -> None:
        """Open a connection pool for ``config``; counts go to ``metrics`` (a new one if None)."""
        self.config = config
        self.metrics = metrics if metrics is not None else JudgeMetrics()
        self._rng = rng if rng is not None else random.Random()
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        limits = httpx.Limits(
            max_connections=config.max_concurrency,
            max_keepalive_connections=config.max_concurrency,
        )
        # redirects are followed as the OpenAI SDK follows them (a proxy, http -> https)
        self._http = httpx.Client(
            timeout=config.timeout_s, limits=limits, headers=headers, follow_redirects=True
        )

    def payload(self, messages: Messages) -> dict[str, Any]:
        """The JSON request body for ``messages`` (also what the cache key is made of)."""
        return {
            **self.config.extra_body,
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }

    def complete(self, messages: Messages) -> Reply:
        """Ask the judge; see :meth:`send`."""
        return self.send(self.payload(messages))

    def send(self, payload: Mapping[str, Any]) -> Reply:
        """POST ``payload``, re-sending after timeouts/429/5xx; never raises for HTTP failures."""
        attempt = self._attempt(payload)
        for retry in range(self.config.max_retries):
            if not attempt.retryable:
                break
            time.sleep(self._delay(retry, attempt.retry_after_s))
            self.metrics.add("retries")
            attempt = self._attempt(payload)
        return attempt.reply

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _delay(self, retry: int, retry_after_s: float | None) -> float:
        """Backoff before ``retry``, stretched to the server's Retry-After (capped)."""
        cfg = self.config
        delay = backoff_delay(
            retry, cfg.backoff_base_s, cfg.backoff_max_s, cfg.jitter, self._rng.random()
        )
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, cfg.backoff_max_s))
        return delay

    def _attempt(self, payload: Mapping[str, Any]) -> _Attempt:
        """One request inside a concurrency slot, classified for the retry loop."""
        with self._slots:
            self.metrics.add("requests")
            try:
                response = self._http.post(self.config.chat_url, json=payload)
            except httpx.TimeoutException as exc:
                self.metrics.add("timeouts")
                error = f"timeout after {self.config.timeout_s}s ({type(exc).__name__})"
                return _Attempt(Reply(None, error), retryable=True)
            except httpx.HTTPError as exc:
                self.metrics.add("connection_errors")
                error = f"connection error ({type(exc).__name__}): {self._redact(str(exc))}"
                return _Attempt(Reply(None, error))
        if not response.is_success:
            self.metrics.add("http_errors")
            status = response.status_code
            error = f"HTTP {status} from {self.config.chat_url}: {_error_text(response)}"
            retryable = status == 429 or status >= 500
            return _Attempt(Reply(None, self._redact(error)), retryable, _retry_after(response))
        return _Attempt(self._read_answer(response))

    def _redact(self, text: str) -> str:
        """``text`` without the API key (an exception may quote the request's headers)."""
        key = self.config.api_key
        return text.replace(key, "***") if key else text

    def _read_answer(self, response: httpx.Response) -> Reply:
        """The first choice's message content, or a bad-response error."""
        try:
            text, error = _answer_text(response.json())
        except ValueError as exc:
            text, error = None, f"response body is not JSON: {exc}"
        if text is None:
            self.metrics.add("bad_responses")
            return Reply(None, f"bad response: {error}")
        return Reply(text)


def _answer_text(body: object) -> tuple[str | None, str | None]:
    """``(content, None)`` from a chat-completions body, or ``(None, reason)``. Content given
    as a list of parts (``[{"type": "text", "text": ...}]``) is joined; an answer cut at the
    token limit (``finish_reason`` "length") is no answer: its verdicts would be a draft's."""
    try:
        choice = body["choices"][0]  # type: ignore[index]
        message = choice["message"]
        content = message["content"]
    except (KeyError, IndexError, TypeError):
        return None, f"no choices[0].message.content in {str(body)[:200]!r}"
    if isinstance(content, list):
        content = "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
        )
    reason = choice.get("finish_reason") if isinstance(choice, Mapping) else None
    if not isinstance(content, str) or not content.strip():
        thinking = isinstance(message, Mapping) and message.get("reasoning_content")
        hint = (
            "; the model only reasoned (reasoning_content): raise max_tokens, or turn thinking "
            'off with extra_body={"chat_template_kwargs": {"enable_thinking": False}}'
            if thinking
            else ""
        )
        return None, f"empty message content (finish_reason={reason!r}){hint}"
    if reason == "length":
        return None, "the answer was cut at max_tokens (finish_reason='length'): raise max_tokens"
    return content, None


def _error_text(response: httpx.Response) -> str:
    """What a failed response says: an OpenAI-style ``error.message`` when the body has one,
    else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else error
    if isinstance(message, str) and message.strip():
        return repr(" ".join(message.split())[:300])
    return repr(response.text[:200])


def _retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds: a non-negative number, or an HTTP date (then the
    seconds until it)."""
    header = response.headers.get("retry-after", "")
    try:
        value = float(header)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        value = (when - datetime.datetime.now(datetime.UTC)).total_seconds()
        return max(0.0, value)
    return value if value >= 0 else None
