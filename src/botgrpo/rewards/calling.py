"""TRL's reward-function calling convention, read once for every recipe.

TRL calls ``fn(prompts=..., completions=..., completion_ids=..., **columns)``: one entry per
completion, ``completions`` as strings or as conversations (lists of ``{"role", "content"}``
messages), ``completion_ids`` the generated ids (EOS included, padding excluded), every other
dataset column as a keyword list, plus TRL extras (``trainer_state``, ``log_extra``, ...) that
recipes ignore.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from botgrpo.rewards.spans import TokenizedText, offsets_from_ids, offsets_from_text

__all__ = [
    "call_verdict_source",
    "dataset_column",
    "message_text",
    "resolve_tokenizer",
    "tokenize_completions",
]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # multimodal parts: [{"type": "text", "text": ...}, ...]
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    raise TypeError(f"message content must be a string or a list of parts, got {type(content)}")


def message_text(message: Any, role: str = "assistant") -> str:
    """The text of a completion or prompt: a string as is, a conversation's last ``role`` turn.

    A conversation without a ``role`` turn gives its last message's content.

    >>> message_text([{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}])
    '4'
    >>> message_text([{"role": "user", "content": "2+2?"}], role="user")
    '2+2?'
    """
    if message is None:
        return ""
    if isinstance(message, str):
        return message
    if isinstance(message, Sequence):
        turns = [m for m in message if isinstance(m, Mapping)]
        if len(turns) != len(message):
            raise TypeError("a conversation must be a list of {'role', 'content'} dicts")
        if not turns:
            return ""
        chosen = [m for m in turns if m.get("role") == role]
        return _content_text((chosen or turns)[-1].get("content", ""))
    raise TypeError(f"expected a string or a conversation, got {type(message).__name__}")


def resolve_tokenizer(tokenizer: Any) -> Any:
    """The text tokenizer of a tokenizer or a processor (which holds it as ``.tokenizer``)."""
    if not hasattr(tokenizer, "backend_tokenizer") and hasattr(tokenizer, "tokenizer"):
        return tokenizer.tokenizer
    if not hasattr(tokenizer, "decode"):
        raise TypeError(
            f"expected a Hugging Face tokenizer (with decode), got {type(tokenizer).__name__}"
        )
    return tokenizer


def tokenize_completions(
    tokenizer: Any,
    completions: Sequence[Any],
    completion_ids: Sequence[Sequence[int]] | None,
    fn_name: str,
) -> list[TokenizedText]:
    """Each completion's text and token offsets.

    With ``completion_ids`` (the TRL case) the text is the decoding of the ids and the tokens
    are exactly those ids; without, the completion text is tokenized afresh.
    """
    if completion_ids is None:
        return [offsets_from_text(tokenizer, message_text(c)) for c in completions]
    if len(completion_ids) != len(completions):
        raise ValueError(
            f"{fn_name}: got {len(completions)} completions but {len(completion_ids)} "
            "completion_ids; pass one id list per completion"
        )
    out = []
    for i, ids in enumerate(completion_ids):
        try:
            out.append(offsets_from_ids(tokenizer, ids))
        except ValueError as e:
            raise ValueError(f"{fn_name}: completion {i}: {e}") from e
    return out


def dataset_column(kwargs: Mapping[str, Any], name: str, n: int, fn_name: str) -> list[Any]:
    """The dataset column ``name`` (one value per completion), or a clear error."""
    if name not in kwargs:
        available = sorted(
            k for k in kwargs if k not in ("trainer_state", "log_extra", "log_metric")
        )
        raise KeyError(
            f"{fn_name}: needs the dataset column {name!r} (got columns {available}); "
            f"add it to the dataset or set the config's column name"
        )
    values = list(kwargs[name])
    if len(values) != n:
        raise ValueError(f"{fn_name}: column {name!r} has {len(values)} values for {n} completions")
    return values


def call_verdict_source(
    source: Any, method: str, firsts: list[Any], seconds: list[Any], what: str
) -> list[Any]:
    """Judge every (first, second) pair with ``source``: its ``judge_many(firsts, seconds)`` when
    it has one (one batched call), else its ``method`` (e.g. ``judge_steps``) per pair, else the
    source called as a function. A failure or a wrong number of results is an error naming
    ``what`` and the source.
    """
    name = getattr(source, "__name__", type(source).__name__)
    try:
        if callable(getattr(source, "judge_many", None)):
            results = list(source.judge_many(firsts, seconds))
        elif callable(getattr(source, method, None)):
            one = getattr(source, method)
            results = [one(a, b) for a, b in zip(firsts, seconds, strict=True)]
        else:
            results = [source(a, b) for a, b in zip(firsts, seconds, strict=True)]
    except Exception as e:
        raise RuntimeError(f"{what} {name!r} failed: {e}") from e
    if len(results) != len(seconds):
        raise ValueError(
            f"{what} {name!r} returned {len(results)} results for {len(seconds)} items"
        )
    return results
