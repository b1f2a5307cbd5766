"""Noisy verdicts, the controls that tell credit from noise: a judge's errors, on the step
verdicts of a reasoning task and on the line penalties of code.

:class:`VerdictNoise` says what noise (``RATE[:KIND]``, e.g. ``0.2`` or ``1:random``). Step
tasks apply it with :class:`botgrpo.tasks.NoisyVerdicts` (every kind: ``flip``,
``false_alarm``, ``miss``, ``random``). The code recipes apply it to their line penalties
(:attr:`botgrpo.rewards.LineSignalConfig.noise`) through :func:`noisy_line_penalties`, before
the penalties decay over neighbouring lines (Eqs. 6-7), with two kinds at rate ``p``:

- ``random``: each line penalty moves, with probability p, to a line drawn uniformly from the
  code (it may land where it was). At p = 1 it is the random-verdict control of code: the same
  number and size of penalties, on lines chosen without regard to where the flaw is;
- ``miss``: each line penalty is dropped with probability p (a checker that misses flaws).

``flip`` and ``false_alarm`` would need a verdict on every clean line, which the line recipes
do not give (a clean line has no penalty, not a +1 verdict): they are refused for code.

The noise is a function of (seed, the texts judged) only: the same code gets the same noise in
every method, run and re-scoring.

>>> noisy_line_penalties({3: -1.0, 7: -0.5}, 10, "1:miss", key="code")
{}
>>> moved = noisy_line_penalties({3: -1.0}, 10, "1:random", key="code")
>>> list(moved.values()), 1 <= next(iter(moved)) <= 10
([-1.0], True)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

NOISE_KINDS = ("flip", "false_alarm", "miss", "random")
#: The kinds the code recipes' line penalties take (see the module docstring).
LINE_NOISE_KINDS = ("random", "miss")


@dataclass(frozen=True)
class VerdictNoise:
    """What noise a judge adds to step verdicts.

    Attributes:
        rate: probability p in [0, 1] that the kind's change applies to a verdict.
        kind: one of :data:`NOISE_KINDS`.
    """

    rate: float
    kind: str = "flip"

    def __post_init__(self) -> None:
        if isinstance(self.rate, bool) or not isinstance(self.rate, int | float):
            raise ValueError(f"verdict noise rate must be a number in [0, 1], got {self.rate!r}")
        if not 0.0 <= float(self.rate) <= 1.0:  # also refuses nan
            raise ValueError(f"verdict noise rate must lie in [0, 1], got {self.rate!r}")
        if self.kind not in NOISE_KINDS:
            raise ValueError(
                f"unknown verdict noise kind {self.kind!r}; use one of {', '.join(NOISE_KINDS)}"
            )

    @classmethod
    def parse(cls, text: str) -> VerdictNoise:
        """``RATE[:KIND]``, e.g. ``0.2`` (flip), ``0.3:miss``, ``1:random``.

        >>> VerdictNoise.parse("0.3:miss")
        VerdictNoise(rate=0.3, kind='miss')
        """
        rate_text, colon, kind = str(text).strip().partition(":")
        if colon and not kind.strip():
            raise ValueError(
                f"verdict noise {text!r}: the kind after ':' is missing; write RATE[:KIND], "
                f"KIND one of {', '.join(NOISE_KINDS)}"
            )
        try:
            return cls(float(rate_text) + 0.0, kind.strip() or "flip")  # + 0.0: no -0
        except ValueError as err:
            reason = (
                str(err).removeprefix("verdict noise ")
                if "could not convert" not in str(err)
                else f"{rate_text!r} is not a rate in [0, 1]"
            )
            raise ValueError(
                f"verdict noise {text!r}: {reason}; write RATE[:KIND], e.g. 0.2 or 0.3:miss"
            ) from None

    def spec(self) -> str:
        """The ``RATE:KIND`` text of this noise (inverse of :meth:`parse`)."""
        return f"{float(self.rate)!r}".removesuffix(".0") + f":{self.kind}"

    def describe(self, lines: bool = False) -> str:
        """One phrase for summaries, e.g. ``20% of step verdicts flipped``; ``lines``: as
        noise on the line penalties of code (``random`` and ``miss`` only)."""
        share = f"{self.rate:.0%}"
        if lines:
            return {
                "random": f"{share} of line penalties moved to a line drawn at random "
                "(independent of where the flaw is)",
                "miss": f"{share} of line penalties dropped",
            }[self.kind]
        return {
            "flip": f"{share} of step verdicts flipped",
            "false_alarm": f"{share} of correct steps judged incorrect",
            "miss": f"{share} of incorrect steps judged correct",
            "random": f"{share} of step verdicts drawn at random (independent of correctness)",
        }[self.kind]


def noise_uniforms(seed: int, texts: tuple[str, ...], n: int) -> np.ndarray:
    """Two uniforms per judged item, float64 [n, 2], a function of (seed, texts) only."""
    key = "\x00".join((str(seed), *texts))
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return np.random.default_rng(int.from_bytes(digest, "little")).random((n, 2))


def line_noise(spec: str | VerdictNoise | None) -> VerdictNoise | None:
    """The noise of ``spec`` for line penalties (None for "" or None); a ValueError naming the
    kinds code takes for any other kind."""
    if spec is None or spec == "":
        return None
    noise = spec if isinstance(spec, VerdictNoise) else VerdictNoise.parse(spec)
    if noise.kind not in LINE_NOISE_KINDS:
        raise ValueError(
            f"verdict noise {noise.spec()!r}: the line penalties of code take kinds "
            f"{' or '.join(LINE_NOISE_KINDS)} (a clean line has no verdict to {noise.kind}); "
            "write e.g. 1:random (the random-verdict control) or 0.3:miss"
        )
    return noise


def line_moves(
    lines: Iterable[int],
    n_lines: int,
    noise: str | VerdictNoise | None,
    key: str,
    seed: int = 0,
) -> dict[int, int | None]:
    """Where ``noise`` sends the penalty of each flagged line (1-based): to itself when kept,
    to a line drawn uniformly from 1..``n_lines`` (``random``), or None when dropped
    (``miss``), each with the noise's probability. ``key`` (the code) and ``seed`` fix the
    draws.

    >>> line_moves([4, 9], 12, "", key="code")
    {4: 4, 9: 9}
    """
    flagged = sorted(set(lines))
    spec = line_noise(noise)
    if spec is None or spec.rate == 0 or n_lines <= 0:
        return {line: line for line in flagged}
    u = noise_uniforms(seed, (key,), len(flagged))
    out: dict[int, int | None] = {}
    for line, (draw, where) in zip(flagged, u, strict=True):
        if draw >= spec.rate:
            out[line] = line
        else:
            out[line] = (
                None if spec.kind == "miss" else min(1 + math.floor(where * n_lines), n_lines)
            )
    return out


def apply_line_moves(
    penalties: Mapping[int, float], moves: Mapping[int, int | None]
) -> dict[int, float]:
    """``penalties`` (line -> merged penalty) moved by :func:`line_moves`, in their order;
    penalties moved onto one line add up, a line missing from ``moves`` keeps its penalty."""
    out: dict[int, float] = {}
    for line, value in penalties.items():
        to = moves.get(line, line)
        if to is not None:
            out[to] = out.get(to, 0.0) + value
    return out


def noisy_line_penalties(
    penalties: Mapping[int, float],
    n_lines: int,
    noise: str | VerdictNoise | None,
    key: str,
    seed: int = 0,
) -> dict[int, float]:
    """``penalties`` (1-based line -> merged penalty) with ``noise`` applied: each penalty
    kept, moved to a line drawn uniformly from 1..``n_lines`` (``random``) or dropped
    (``miss``) with the noise's probability (:func:`line_moves`)."""
    return apply_line_moves(penalties, line_moves(penalties, n_lines, noise, key, seed))


def moved_verdicts(verdicts: Sequence[int], moves: Mapping[int, int | None]) -> list[int]:
    """Line verdicts (one per line, in order: -1 flagged, +1 clean, 0 unsure) as the noisy
    penalties give them: each -1 goes where its line's penalty went (:func:`line_moves`), and a
    line whose -1 moved away or was dropped reads +1 unless one moved onto it.

    >>> moved_verdicts([1, -1, 1, 1], {2: 4})
    [1, 1, 1, -1]
    >>> moved_verdicts([1, -1, 1], {2: None})
    [1, 1, 1]
    """
    out = list(verdicts)
    flagged = [k for k, v in enumerate(verdicts) if v == -1 and (k + 1) in moves]
    for k in flagged:
        out[k] = 1
    for k in flagged:
        to = moves[k + 1]
        if to is not None and 1 <= to <= len(out):
            out[to - 1] = -1
    return out


__all__ = [
    "LINE_NOISE_KINDS",
    "NOISE_KINDS",
    "VerdictNoise",
    "apply_line_moves",
    "line_moves",
    "line_noise",
    "moved_verdicts",
    "noise_uniforms",
    "noisy_line_penalties",
]
