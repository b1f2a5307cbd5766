"""Character spans of a completion -> positions of its tokens.

Recipes judge text (steps, code lines) in *character* coordinates; the trainer needs one value
per *generated token*. This module makes the bridge.

Token offsets
    ``offsets_T2`` is int64 [T, 2]: token t covers the half-open character range
    ``text[offsets_T2[t, 0]:offsets_T2[t, 1]]``.

    - :func:`offsets_from_ids` maps the ids a model generated (what TRL hands to reward
      functions) onto ``text = decode(ids, skip_special_tokens=True)`` without re-tokenizing
      (re-tokenizing the text can give different tokens). It streams the ids once through the
      tokenizer's incremental decoder (O(T)), so each token's characters are exactly the text
      its id appended.
    - :func:`offsets_from_text` tokenizes a string afresh (``return_offsets_mapping``), for
      callers that have text but no ids.

    Special rules: a special token skipped by decoding (EOS, padding) has an empty range at
    its position. A character whose UTF-8 bytes are split over several tokens is covered by
    every token carrying one of its bytes (the rule of fast tokenizers' offset mappings). The
    streaming decoder emits such a character only with the token that completes it; when the
    tokens' bytes are known (byte-level BPE as in GPT-2/Llama 3/Qwen, ``<0xNN>`` byte-fallback
    tokens as in Llama 2/Mistral) the emitted chunk is split between them exactly, byte by
    byte (bytes that never make a character, as when a sampled token does not complete the
    one before it, are the one U+FFFD ``decode`` writes for them); otherwise the tokens of that
    run all share the chunk. If decoding ends inside a character, the trailing tokens share
    what ``decode`` gives after the last complete one. An id past the tokenizer's vocabulary
    (a model whose embedding table is padded, such as Qwen2.5, can sample one) is dropped by
    ``decode``: it gets an empty range, with a warning; a negative id is an error.

Spans -> tokens (the straddling rule)
    A token belongs to every span it overlaps (shares at least one character with); empty
    tokens and empty spans overlap nothing. A token overlapping several spans gets the *mean*
    of their scores (Eq. 8 of arXiv 2610.09804 sums over the steps S(t) containing t; for a
    token inside one step the two agree, and the mean keeps a straddling token's value between
    its spans' values instead of doubling it). Characters of a token outside every span do not
    dilute the mean. Its step index is the lowest index among the spans it overlaps.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tokenizers.decoders import DecodeStream

from botgrpo.rewards.text import CODE_BREAK, line_bounds

__all__ = [
    "TokenizedText",
    "line_spans",
    "offsets_from_ids",
    "offsets_from_text",
    "spread_span_scores",
    "token_span_index",
    "token_span_ranges",
    "validate_spans",
]

_REPLACEMENT = "\ufffd"


@dataclass(frozen=True, eq=False)
class TokenizedText:
    """A completion's text, its token ids and each token's character range in the text."""

    text: str
    """The text the offsets index into (for generated ids: their decoding)."""
    ids: tuple[int, ...]
    """Token ids, one per row of ``offsets_T2``."""
    offsets_T2: np.ndarray
    """int64 [T, 2]: half-open character range of each token in ``text``."""

    def token_texts(self) -> list[str]:
        """Each token's characters (empty for special tokens), for logs and pictures."""
        return [self.text[s:e] for s, e in self.offsets_T2.tolist()]


def _as_id_list(ids: Any) -> list[int]:
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    return [int(i) for i in ids]


def _decode(tokenizer: Any, ids: list[int], skip_special_tokens: bool) -> str:
    kwargs: dict[str, Any] = {"skip_special_tokens": skip_special_tokens}
    if hasattr(tokenizer, "backend_tokenizer"):  # a Hugging Face fast tokenizer
        kwargs["clean_up_tokenization_spaces"] = False
    return tokenizer.decode(ids, **kwargs)


def _byte_level_alphabet() -> dict[str, int]:
    """Inverse of byte-level BPE's byte -> printable character table (GPT-2 layout)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    chars, shifted = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + shifted)] = b
            shifted += 1
    return chars


_BYTE_LEVEL = _byte_level_alphabet()
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _token_bytes(tokenizer: Any, token_id: int) -> bytes | None:
    """The raw bytes of a byte-level BPE or byte-fallback token, None when unknown."""
    convert = getattr(tokenizer, "convert_ids_to_tokens", None)
    token = convert(token_id) if convert is not None else None
    if not isinstance(token, str) or not token:
        return None
    m = _BYTE_TOKEN.fullmatch(token)
    if m:
        return bytes([int(m.group(1), 16)])
    if all(c in _BYTE_LEVEL for c in token):
        return bytes(_BYTE_LEVEL[c] for c in token)
    return None


def _sequence_length(data: bytes, p: int) -> int:
    """Bytes of the UTF-8 character at ``data[p]``, or of the invalid sequence there that a
    lossy decoder replaces with one U+FFFD (the Unicode "maximal subpart" rule that Python's
    ``errors="replace"`` and Rust's ``from_utf8_lossy`` follow)."""
    lead = data[p]
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        need, low, high = 1, 0x80, 0xBF
    elif lead == 0xE0:
        need, low, high = 2, 0xA0, 0xBF
    elif lead == 0xED:
        need, low, high = 2, 0x80, 0x9F
    elif 0xE1 <= lead <= 0xEF:
        need, low, high = 2, 0x80, 0xBF
    elif lead == 0xF0:
        need, low, high = 3, 0x90, 0xBF
    elif 0xF1 <= lead <= 0xF3:
        need, low, high = 3, 0x80, 0xBF
    elif lead == 0xF4:
        need, low, high = 3, 0x80, 0x8F
    else:
        return 1  # a continuation byte or an invalid lead byte: one replacement of its own
    k = 1
    while k <= need and p + k < len(data):
        lo, hi = (low, high) if k == 1 else (0x80, 0xBF)
        if not lo <= data[p + k] <= hi:
            break
        k += 1
    return k


def _char_of_byte(data: bytes, chunk: str) -> list[int] | None:
    """The index in ``chunk`` of the character each byte of ``data`` decodes to, when
    ``chunk`` is ``data`` decoded (lossily: an invalid sequence is one U+FFFD); else None."""
    if data.decode("utf-8", errors="replace") != chunk:
        return None
    out: list[int] = []
    p = char = 0
    while p < len(data):
        n = _sequence_length(data, p)
        out.extend([char] * n)
        p += n
        char += 1
    return out if char == len(chunk) else None


def _split_run(chunk: str, run_bytes: list[bytes | None]) -> list[tuple[int, int]] | None:
    """Exact character ranges (relative to ``chunk``) of the tokens that produced ``chunk``.

    Returns None unless every token's bytes are known and together spell ``chunk`` (invalid
    UTF-8 inside it read as the decoder reads it: one U+FFFD per maximal invalid sequence).
    """
    if any(b is None for b in run_bytes):
        return None
    char_of_byte = _char_of_byte(b"".join(run_bytes), chunk)  # type: ignore[arg-type]
    if char_of_byte is None:
        return None
    out, pos = [], 0
    for b in run_bytes:
        n = len(b)  # type: ignore[arg-type]
        out.append((char_of_byte[pos], char_of_byte[pos + n - 1] + 1) if n else (0, 0))
        pos += n
    return out


def _pieces_to_offsets(
    pieces: list[str | None], text_len: int, token_bytes: Any = None
) -> np.ndarray:
    """Character ranges from per-token pieces: str = text appended, None = nothing yet.

    A token whose piece is None (it ends inside a multi-byte character) waits for the next
    token that emits text; that run of tokens shares the emitted chunk's range, unless their
    bytes are known (``token_bytes(i)``: byte-level BPE, byte fallback), which splits the
    chunk exactly. None pieces left at the end share ``[emitted, text_len)``.
    """
    offsets = np.zeros((len(pieces), 2), dtype=np.int64)
    pos = 0
    pending: list[int] = []
    for i, piece in enumerate(pieces):
        if piece is None:
            pending.append(i)
            continue
        end = pos + len(piece)
        offsets[i] = (pos, end)
        if piece and pending:
            run = [*pending, i]
            exact = (
                None if token_bytes is None else _split_run(piece, [token_bytes(j) for j in run])
            )
            if exact is None:
                offsets[pending] = (pos, end)
            else:
                offsets[run] = [(pos + a, pos + b) for a, b in exact]
            pending = []
        pos = end
    if pending:
        offsets[pending] = (pos, text_len)
    return offsets


def _skipped_ids(tokenizer: Any) -> set[int]:
    """The ids ``decode(..., skip_special_tokens=True)`` drops: the special ids and every added
    token marked special (SmolLM2's ``<file_sep>``, a ``<tool_call>`` added as special), which
    ``all_special_ids`` does not always list."""
    skip = set(getattr(tokenizer, "all_special_ids", ()) or ())
    added = getattr(tokenizer, "added_tokens_decoder", None)
    if isinstance(added, dict):
        skip.update(i for i, token in added.items() if getattr(token, "special", False))
    return skip


def _stream_pieces(backend: Any, ids: list[int], skip: set[int]) -> list[str | None]:
    stream = DecodeStream(skip_special_tokens=False)
    return ["" if i in skip else stream.step(backend, i) for i in ids]


def _prefix_pieces(
    tokenizer: Any, ids: list[int], skip: set[int], text: str, skip_special_tokens: bool
) -> list[str | None]:
    """Fallback: piece i = decode(ids[:i+1]) minus decode(ids[:i]) (O(T^2) characters)."""
    pieces: list[str | None] = []
    done = 0
    last = len(ids) - 1
    for i, tid in enumerate(ids):
        if tid in skip:
            pieces.append("")
            continue
        prefix = _decode(tokenizer, ids[: i + 1], skip_special_tokens)
        if i < last and prefix.endswith(_REPLACEMENT):
            pieces.append(None)  # ends inside a character: wait for the completing token
            continue
        end = len(text) if i == last else _common_prefix_len(prefix, text)
        end = max(done, end)
        pieces.append(text[done:end])
        done = end
    return pieces


def _common_prefix_len(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search over slice comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def offsets_from_ids(
    tokenizer: Any, ids: Sequence[int], *, skip_special_tokens: bool = True
) -> TokenizedText:
    """Decode generated ``ids`` and give each token its character range in the decoded text.

    ``tokenizer`` is a Hugging Face tokenizer (fast ones use the streaming decoder; others, or a
    tokenizer whose streamed text differs from ``decode``, fall back to prefix decoding) or any
    object with ``decode(ids, skip_special_tokens=...)`` and ``all_special_ids``. The text is
    ``decode(ids, skip_special_tokens=..., clean_up_tokenization_spaces=False)``.

    >>> from botgrpo.tiny import build_char_tokenizer
    >>> tok = build_char_tokenizer()
    >>> ids = tok("a+b").input_ids + [tok.eos_token_id]
    >>> tt = offsets_from_ids(tok, ids)
    >>> tt.text, tt.offsets_T2.tolist()   # EOS: empty range at the end
    ('a+b', [[0, 1], [1, 2], [2, 3], [3, 3]])
    """
    id_list = _as_id_list(ids)
    if any(i < 0 for i in id_list):
        raise ValueError(
            f"token id {min(id_list)} is negative; pass the completion's generated ids without "
            "padding or label masks (-100)"
        )
    vocab = len(tokenizer) if hasattr(tokenizer, "__len__") else None
    beyond = {i for i in id_list if vocab is not None and i >= vocab}
    if beyond:  # a model whose embedding table is padded past its tokenizer (Qwen2.5)
        warnings.warn(
            f"token id {min(beyond)} is past the tokenizer's vocabulary (size {vocab}), as a "
            "model with a padded embedding table can sample: decoding drops it, so it covers "
            "no characters and gets no local reward",
            stacklevel=2,
        )
    skip = (_skipped_ids(tokenizer) if skip_special_tokens else set()) | beyond
    text = _decode(tokenizer, id_list, skip_special_tokens)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    pieces: list[str | None] | None = None
    if backend is not None:
        pieces = _stream_pieces(backend, id_list, skip)
        streamed = "".join(p for p in pieces if p)
        tail = text[len(streamed) :]
        # what is left belongs to the trailing tokens that end inside a character
        emitting = [p for p in pieces if p != ""]  # skipped tokens append nothing
        pending_end = bool(emitting) and emitting[-1] is None
        if not (text.startswith(streamed) and (not tail or pending_end)):
            pieces = None
    if pieces is None:
        pieces = _prefix_pieces(tokenizer, id_list, skip, text, skip_special_tokens)
    offsets = _pieces_to_offsets(pieces, len(text), lambda k: _token_bytes(tokenizer, id_list[k]))
    offsets.setflags(write=False)
    return TokenizedText(text=text, ids=tuple(id_list), offsets_T2=offsets)


def offsets_from_text(tokenizer: Any, text: str) -> TokenizedText:
    """Tokenize ``text`` afresh (no special tokens added) with the fast tokenizer's offsets.

    >>> from botgrpo.tiny import build_char_tokenizer
    >>> offsets_from_text(build_char_tokenizer(), "x=1").offsets_T2.tolist()
    [[0, 1], [1, 2], [2, 3]]
    """
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    offsets.setflags(write=False)
    return TokenizedText(text=text, ids=tuple(enc["input_ids"]), offsets_T2=offsets)


def validate_spans(spans: Any, text_len: int, *, what: str = "span") -> np.ndarray:
    """Check spans are int [S, 2], inside ``[0, text_len]``, sorted and not overlapping.

    Returns them as int64 [S, 2]. Raises ValueError naming the first offending span.
    """
    arr = np.asarray(spans if len(spans) else np.zeros((0, 2)), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{what}s must have shape [S, 2] (start, end), got {arr.shape}")
    if not np.all(arr == np.round(arr)):
        raise ValueError(f"{what}s must hold integer character offsets")
    arr = arr.astype(np.int64)
    for k, (start, end) in enumerate(arr.tolist()):
        if not 0 <= start <= end <= text_len:
            raise ValueError(
                f"{what} {k} = ({start}, {end}) is out of range for a text of {text_len} "
                "characters (need 0 <= start <= end <= len(text))"
            )
        if k and start < arr[k - 1, 1]:
            raise ValueError(
                f"{what} {k} = ({start}, {end}) overlaps or precedes {what} {k - 1} = "
                f"({arr[k - 1, 0]}, {arr[k - 1, 1]}); spans must be sorted and disjoint"
            )
    return arr


def token_span_ranges(
    offsets_T2: np.ndarray, spans_S2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each token, the first and last index of the spans it overlaps (``lo > hi``: none).

    ``spans_S2`` must be sorted and disjoint (ValueError otherwise; :func:`validate_spans` also
    checks them against the text length); empty spans and empty tokens overlap nothing.
    O((T + S) log S).
    """
    offsets = np.asarray(offsets_T2, dtype=np.int64).reshape(-1, 2)
    spans = np.asarray(spans_S2, dtype=np.int64).reshape(-1, 2)
    if np.any(spans[:, 0] < 0) or np.any(spans[:, 1] < spans[:, 0]):
        raise ValueError("spans must satisfy 0 <= start <= end (see validate_spans)")
    if np.any(spans[1:, 0] < spans[:-1, 1]):
        k = int(np.flatnonzero(spans[1:, 0] < spans[:-1, 1])[0]) + 1
        raise ValueError(
            f"span {k} overlaps or precedes span {k - 1}; spans must be sorted and disjoint"
        )
    keep = np.flatnonzero(spans[:, 1] > spans[:, 0])
    kept = spans[keep]
    start_T, end_T = offsets[:, 0], offsets[:, 1]
    lo = np.searchsorted(kept[:, 1], start_T, side="right")  # first span ending after start
    hi = np.searchsorted(kept[:, 0], end_T, side="left") - 1  # last span starting before end
    empty = end_T <= start_T
    lo = np.where(empty, 1, lo)
    hi = np.where(empty, 0, hi)
    none = lo > hi
    # Map back to indices of the unfiltered spans (kept is increasing, so ranges stay contiguous).
    lo_full = np.where(none, 1, keep[np.clip(lo, 0, max(len(keep) - 1, 0))] if len(keep) else 1)
    hi_full = np.where(none, 0, keep[np.clip(hi, 0, max(len(keep) - 1, 0))] if len(keep) else 0)
    return lo_full.astype(np.int64), hi_full.astype(np.int64)


def spread_span_scores(offsets_T2: np.ndarray, spans_S2: np.ndarray, scores_S: Any) -> np.ndarray:
    """Token values from span scores: the mean score of the non-empty spans each token overlaps.

    Tokens overlapping no span get 0. Returns float64 [T].

    >>> offsets = np.array([[0, 2], [2, 5], [5, 6], [6, 6]])   # the last token is empty (EOS)
    >>> spans = np.array([[0, 3], [3, 6]])
    >>> spread_span_scores(offsets, spans, [1.0, -1.0]).tolist()   # token 1 straddles both
    [1.0, 0.0, -1.0, 0.0]
    """
    spans = np.asarray(spans_S2, dtype=np.int64).reshape(-1, 2)
    scores = np.asarray(scores_S, dtype=np.float64).reshape(-1)
    if not np.isfinite(scores).all():
        raise ValueError("span scores must be finite numbers")
    if scores.shape[0] != spans.shape[0]:
        raise ValueError(f"got {scores.shape[0]} scores for {spans.shape[0]} spans")
    nonempty = (spans[:, 1] > spans[:, 0]).astype(np.float64)
    lo, hi = token_span_ranges(offsets_T2, spans)
    csum = np.concatenate([[0.0], np.cumsum(scores * nonempty)])
    ccount = np.concatenate([[0.0], np.cumsum(nonempty)])
    has = lo <= hi
    lo_c, hi_c = np.where(has, lo, 0), np.where(has, hi + 1, 0)
    count = ccount[hi_c] - ccount[lo_c]
    total = csum[hi_c] - csum[lo_c]
    return np.where(has & (count > 0), total / np.maximum(count, 1.0), 0.0)


def token_span_index(offsets_T2: np.ndarray, spans_S2: np.ndarray) -> np.ndarray:
    """The lowest index of the spans each token overlaps, -1 for none; int64 [T]."""
    lo, hi = token_span_ranges(offsets_T2, spans_S2)
    return np.where(lo <= hi, lo, -1).astype(np.int64)


def line_spans(
    text: str, start: int = 0, end: int | None = None, breaks: re.Pattern = CODE_BREAK
) -> np.ndarray:
    """Character spans of the lines of ``text[start:end]``, in ``text`` coordinates.

    Line k (0-based) covers its characters and its terminator: ``\\r\\n``, ``\\r`` or
    ``\\n`` by default (:data:`botgrpo.rewards.text.CODE_BREAK`, the lines Python and
    JavaScript tools number), or any match of ``breaks``; a trailing break does not open an
    empty last line. Returns int64 [L, 2].

    >>> line_spans("ab\\ncd\\n").tolist()
    [[0, 3], [3, 6]]
    >>> line_spans("ab\\r\\ncd").tolist()
    [[0, 4], [4, 6]]
    """
    end = len(text) if end is None else end
    if not 0 <= start <= end <= len(text):
        raise ValueError(f"line range ({start}, {end}) is out of range for {len(text)} characters")
    bounds = line_bounds(text, start, end, breaks)
    return np.array(bounds, dtype=np.int64).reshape(-1, 2)
