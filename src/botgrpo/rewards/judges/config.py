"""Configuration of the LLM judges: endpoint, model, key, retries, concurrency and cache.

Every field can be given directly or read from the environment by :meth:`JudgeConfig.from_env`:
``BOTGRPO_JUDGE_<FIELD>`` (e.g. ``BOTGRPO_JUDGE_BASE_URL``, ``BOTGRPO_JUDGE_MODEL``,
``BOTGRPO_JUDGE_TIMEOUT_S``), with ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` as fall-backs for
the endpoint and the key.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

ENV_PREFIX = "BOTGRPO_JUDGE_"
"""Prefix of the environment variables read by :meth:`JudgeConfig.from_env`."""

FALLBACK_ENV = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY"}
"""Variables read when the ``BOTGRPO_JUDGE_*`` one of a field is unset or empty."""

_RESERVED_BODY_KEYS = frozenset({"model", "messages", "temperature", "max_tokens"})


@dataclass(frozen=True)
class JudgeConfig:
    """Where and how to ask an OpenAI-compatible ``/chat/completions`` endpoint for judgements.

    >>> cfg = JudgeConfig(base_url="http://localhost:8000/v1/", model="judge")
    >>> cfg.base_url, cfg.chat_url
    ('http://localhost:8000/v1', 'http://localhost:8000/v1/chat/completions')
    """

    base_url: str
    """Endpoint root such as ``http://localhost:8000/v1``; requests go to
    ``{base_url}/chat/completions``. A trailing ``/`` is removed."""

    model: str
    """Model name sent with every request (for vLLM: the served model name)."""

    api_key: str | None = field(default=None, repr=False)
    """Sent as ``Authorization: Bearer <api_key>``; ``None`` or empty sends no such header."""

    temperature: float = 0.0
    """Sampling temperature of the judge; 0 makes answers as repeatable as the server allows."""

    max_tokens: int = 1024
    """Cap on the length of the judge's answer, in tokens."""

    timeout_s: float = 60.0
    """httpx timeout in seconds, applied to each phase of one request (connect, send, wait for
    and read the answer, wait for a pooled connection)."""

    max_retries: int = 3
    """How many times a request is re-sent after a timeout, HTTP 429 or HTTP 5xx; 0 = never."""

    backoff_base_s: float = 1.0
    """Delay before the first retry, in seconds; it doubles with each further retry."""

    backoff_max_s: float = 30.0
    """Upper bound on one retry delay, in seconds (also caps a server's ``Retry-After``)."""

    jitter: float = 0.5
    """Random share of each delay: the delay is multiplied by ``1 - jitter * U[0, 1)``."""

    max_concurrency: int = 8
    """Most requests in flight at once, over all threads and batches sharing one client."""

    cache_dir: str | None = None
    """Directory of the on-disk answer cache; ``None`` or empty disables caching."""

    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """Extra JSON fields merged into every request body, e.g. vLLM's
    ``{"chat_template_kwargs": {"enable_thinking": False}}``. Part of the cache key."""

    def __post_init__(self) -> None:
        """Normalise the URL and reject values that cannot work, naming the fix."""
        if isinstance(self.base_url, str):
            object.__setattr__(self, "base_url", self.base_url.strip())
        _check_url(self.base_url)
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(
                "JudgeConfig.model is empty: pass model=... or set BOTGRPO_JUDGE_MODEL "
                "(the served model name)."
            )
        if isinstance(self.api_key, str):  # a key pasted with its line break
            object.__setattr__(self, "api_key", self.api_key.strip() or None)
        _check_key(self.api_key)
        if self.cache_dir == "":
            object.__setattr__(self, "cache_dir", None)
        _check_number("temperature", self.temperature, low=0.0)
        _check_number("max_tokens", self.max_tokens, low=1, integer=True)
        _check_number("timeout_s", self.timeout_s, low=0.0, strict=True)
        _check_number("max_retries", self.max_retries, low=0, integer=True)
        _check_number("backoff_base_s", self.backoff_base_s, low=0.0)
        _check_number("backoff_max_s", self.backoff_max_s, low=0.0)
        _check_number("jitter", self.jitter, low=0.0, high=1.0)
        _check_number("max_concurrency", self.max_concurrency, low=1, integer=True)
        _check_extra_body(self.extra_body)

    @property
    def chat_url(self) -> str:
        """The full URL requests are POSTed to."""
        return f"{self.base_url}/chat/completions"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> JudgeConfig:
        """Build a config from ``BOTGRPO_JUDGE_<FIELD>`` variables; keyword arguments win.

        ``env`` defaults to ``os.environ``. Empty variables count as unset. ``extra_body`` is
        not read from the environment.

        >>> cfg = JudgeConfig.from_env(
        ...     {"OPENAI_BASE_URL": "http://h:1/v1", "BOTGRPO_JUDGE_MODEL": "m",
        ...      "BOTGRPO_JUDGE_TIMEOUT_S": "2.5"}, max_retries=0)
        >>> cfg.base_url, cfg.model, cfg.timeout_s, cfg.max_retries
        ('http://h:1/v1', 'm', 2.5, 0)
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name in overrides or f.name == "extra_body":
                continue
            name, raw = _lookup_env(env, f.name)
            if raw is not None:
                values[f.name] = _convert(name, raw, _converter(f))
        values.update(overrides)
        for required in ("base_url", "model"):
            if not values.get(required):
                hint = " or " + FALLBACK_ENV[required] if required in FALLBACK_ENV else ""
                raise ValueError(
                    f"JudgeConfig.from_env: no {required} given; set {ENV_PREFIX}"
                    f"{required.upper()}{hint}, or pass {required}=..."
                )
        return cls(**values)


def _check_url(url: object) -> None:
    """Raise unless ``url`` is an http(s) endpoint root."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(
            f"JudgeConfig.base_url must start with http:// or https:// (got {url!r}); pass "
            "base_url=... or set BOTGRPO_JUDGE_BASE_URL / OPENAI_BASE_URL."
        )
    if url.rstrip("/").endswith("/chat/completions"):
        raise ValueError(
            f"JudgeConfig.base_url must be the endpoint root, not the full route (got {url!r}); "
            "drop the trailing /chat/completions, e.g. http://localhost:8000/v1."
        )
    try:
        parsed = httpx.URL(url)
        parsed.port  # noqa: B018 - a malformed port raises here
    except (httpx.InvalidURL, ValueError) as err:
        raise ValueError(f"JudgeConfig.base_url {url!r} is not a valid URL: {err}") from None
    if not parsed.host:
        raise ValueError(
            f"JudgeConfig.base_url {url!r} names no host, e.g. http://localhost:8000/v1"
        )
    if parsed.query or parsed.fragment:
        raise ValueError(
            f"JudgeConfig.base_url {url!r} has a query or fragment: requests go to "
            "{base_url}/chat/completions, so give the endpoint root only (query parameters such "
            "as api-version are not supported)"
        )


def _check_key(key: object) -> None:
    """Raise, never showing the key, unless it can be sent as a header value."""
    if key is None:
        return
    if not isinstance(key, str):
        raise ValueError(f"JudgeConfig.api_key must be a string (got a {type(key).__name__}).")
    bad = [c for c in key if not 0x21 <= ord(c) <= 0x7E]
    if bad:
        raise ValueError(
            f"JudgeConfig.api_key holds a character an HTTP header cannot carry "
            f"(U+{ord(bad[0]):04X}); paste the key again (spaces, line breaks and non-ASCII "
            "characters are not part of API keys)."
        )


def _check_number(
    name: str,
    value: object,
    *,
    low: float,
    high: float | None = None,
    strict: bool = False,
    integer: bool = False,
) -> None:
    """Raise a ValueError naming the field unless ``value`` is a number in range."""
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        kind = "an integer" if integer else "a finite number"
        raise ValueError(f"JudgeConfig.{name} must be {kind} (got {value!r}).")
    too_low = value <= low if strict else value < low
    if too_low or (high is not None and value > high):
        bound = f"> {low}" if strict else f">= {low}"
        if high is not None:
            bound += f" and <= {high}"
        raise ValueError(f"JudgeConfig.{name} must be {bound} (got {value!r}).")


def _check_extra_body(extra_body: object) -> None:
    """Raise unless ``extra_body`` is a mapping that leaves the core request fields alone."""
    if not isinstance(extra_body, Mapping):
        raise ValueError(f"JudgeConfig.extra_body must be a mapping (got {extra_body!r}).")
    clash = sorted(_RESERVED_BODY_KEYS & set(extra_body))
    if clash:
        raise ValueError(
            f"JudgeConfig.extra_body may not set {clash}: use the fields model, temperature "
            "and max_tokens instead (messages are built by the judge)."
        )


def _lookup_env(env: Mapping[str, str], field_name: str) -> tuple[str, str | None]:
    """The first non-empty variable for ``field_name`` and its value (``None`` if unset)."""
    names = [ENV_PREFIX + field_name.upper()]
    if field_name in FALLBACK_ENV:
        names.append(FALLBACK_ENV[field_name])
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return name, value
    return names[0], None


def _converter(f: dataclasses.Field[Any]) -> Callable[[str], Any]:
    """How to read field ``f`` from a string, judged by the type of its default."""
    if isinstance(f.default, int):
        return int
    if isinstance(f.default, float):
        return float
    return str


def _convert(name: str, raw: str, convert: Callable[[str], Any]) -> Any:
    """Convert the value of variable ``name``, naming it if the value is malformed."""
    try:
        return convert(raw)
    except ValueError:
        kind = getattr(convert, "__name__", "value")
        raise ValueError(f"environment variable {name}={raw!r} is not a valid {kind}.") from None
