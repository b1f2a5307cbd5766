"""Composition of local signals: error propagation, spatial decay, bound and format bonus.

Formulas (arXiv 2610.09804):

- Token reward (Eq. 4): ``r_t = w_g * G + w_s * S_t (+ b_format)`` with ``|S_t| <= B``; the
  global term must dominate, ``w_g >> w_s * B`` (:func:`check_dominance` warns otherwise).
- Math steps (Eq. 8): ``S_t = (1/|S|) * sum_{s in S(t)} e_s``, ``e_s in {-1, 0, +1}``, spread
  uniformly over the characters (hence tokens) of step s; |S| = number of steps.
  Error propagation: after the first step judged -1, every later step gets 0.
- Spatial decay (Eq. 7): ``phi(d) = max(0, 1 - d / (w + 1))``, d a distance in lines (code) or
  steps (math), w the window (3 in the paper). A token on a flagged line gets the full
  penalty, one w lines away a share 1/(w+1).
- Code lines (Eq. 6): ``S_t = sum_{l in E} p_l * phi(d(t, l))`` with line penalties p_l < 0
  merged additively per line, optionally each divided by |E| (the paper's -1/|E| bound).

Math with a window: the paper does not define the math window; here it is the decay of
Eq. 7 measured in steps and applied to *negative* verdicts only (as Eq. 7 decays penalties):

    S_j = (1/|S|) * ( max(e_j, 0) + sum_s min(e_s, 0) * phi(|j - s|) )

so an error also lowers its neighbours while a correct neighbour never lifts a wrong step.
``spread_positive=True`` decays every verdict (``sum_s e_s phi(|j - s|)``); ``window=0``
is exactly Eq. 8. Every local signal is finally clamped to ``[-B, B]``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from botgrpo.rewards.configs import check_config_types
from botgrpo.rewards.noise import line_noise

__all__ = [
    "FormatBonusConfig",
    "LineSignalConfig",
    "RewardWeights",
    "StepSignal",
    "StepSignalConfig",
    "check_dominance",
    "clamp_local",
    "decay",
    "line_values",
    "propagate_errors",
    "step_signal",
    "step_values",
]

Propagation = Literal["error", "independent"]
PROPAGATIONS: tuple[str, ...] = ("error", "independent")


def _check_window(owner: str, window: int) -> None:
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(f"{owner}.window must be an integer >= 0, got {window!r}")


def _check_bound(owner: str, bound: float) -> None:
    if not (math.isfinite(bound) and bound > 0):
        raise ValueError(f"{owner}.bound must be finite and > 0, got {bound!r}")


@dataclass(frozen=True)
class StepSignalConfig:
    """How step verdicts become the local signal of a math solution (Eq. 8)."""

    propagation: Propagation = "error"
    """"error" (default, best in the paper's ablation): steps after the first -1 get 0;
    "independent": each verdict stands as judged."""
    window: int = 3
    """Decay window w in steps (Eq. 7 applied to steps); 0 = no decay (exactly Eq. 8)."""
    spread_positive: bool = False
    """Decay +1 verdicts too (by default only -1 verdicts reach neighbouring steps)."""
    bound: float = 1.0
    """B: the local signal is clamped to [-B, B]."""

    def __post_init__(self) -> None:
        check_config_types(self)
        if self.propagation not in PROPAGATIONS:
            raise ValueError(
                f"StepSignalConfig.propagation must be one of {PROPAGATIONS}, "
                f"got {self.propagation!r}"
            )
        _check_window("StepSignalConfig", self.window)
        _check_bound("StepSignalConfig", self.bound)


@dataclass(frozen=True)
class LineSignalConfig:
    """How line penalties become the local signal of code (Eqs. 6-7)."""

    window: int = 3
    """Decay window w in lines (the paper's w = 3)."""
    normalize: bool = False
    """Divide every line penalty by |E|, the number of flagged lines (bounds the total)."""
    bound: float = 1.0
    """B: the local signal is clamped to [-B, B]."""
    noise: str = ""
    """A control: the line penalties changed before they decay, as RATE:KIND with kind
    ``random`` (each penalty moved to a line drawn at random from the code; ``1:random`` is
    the random-verdict control; penalties that meet on one line add up, and count once for
    ``normalize``) or ``miss`` (each penalty dropped); "" = the checks' own lines
    (:mod:`botgrpo.rewards.noise`)."""

    def __post_init__(self) -> None:
        check_config_types(self)
        _check_window("LineSignalConfig", self.window)
        _check_bound("LineSignalConfig", self.bound)
        if self.noise:
            try:
                spec = line_noise(self.noise)
            except ValueError as err:
                raise ValueError(f"LineSignalConfig.noise: {err}") from None
            object.__setattr__(self, "noise", spec.spec() if spec else "")


@dataclass(frozen=True)
class FormatBonusConfig:
    """The format term b_format, by format verdict (Sec. 4: +0.2 / -1.0)."""

    well_formed: float = 0.2
    """Bonus for a perfectly formatted solution."""
    malformed: float = -1.0
    """Penalty for mismatched, stray or nested tags."""
    missing: float = 0.0
    """Term for a solution without any step (neither bonus nor penalty by default)."""

    def __post_init__(self) -> None:
        check_config_types(self)
        for name in ("well_formed", "malformed", "missing"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"FormatBonusConfig.{name} must be finite")

    def bonus(self, verdict: str) -> float:
        """The term for a verdict "well_formed", "malformed" or "missing"."""
        if verdict not in ("well_formed", "malformed", "missing"):
            raise ValueError(f"unknown format verdict {verdict!r}")
        return float(getattr(self, verdict))


def check_dominance(w_g: float, w_s: float, bound: float, *, stacklevel: int = 2) -> bool:
    """Whether ``w_g > w_s * B`` (the paper's rule: the global term must dominate).

    Warns (UserWarning) and returns False when it does not hold; a weight that is not finite,
    a negative ``w_s`` or a bound <= 0 is a ValueError (no rule to check).

    >>> check_dominance(3.0, 0.5, 1.0)
    True
    """
    for name, value in (("w_g", w_g), ("w_s", w_s), ("bound", bound)):
        if not math.isfinite(value):
            raise ValueError(f"check_dominance: {name} must be finite, got {value!r}")
    if w_s < 0 or bound <= 0:
        raise ValueError(f"check_dominance needs w_s >= 0 and bound > 0, got {w_s} and {bound}")
    ok = w_g > w_s * bound
    if not ok:
        warnings.warn(
            f"w_g = {w_g} <= w_s * B = {w_s} * {bound}: the local signal can outweigh the "
            "outcome; BoT-GRPO needs w_g >> w_s * B (arXiv 2610.09804, Eq. 5)",
            UserWarning,
            stacklevel=stacklevel,
        )
    return ok


@dataclass(frozen=True)
class RewardWeights:
    """w_g, w_s of Eq. 4 and the bound B they are checked against (warns if w_g <= w_s*B)."""

    w_g: float = 3.0
    """Weight of the global outcome G (paper: 3.0)."""
    w_s: float = 0.5
    """Weight of the local signal S_t (paper: 0.5; robust for 0.1 to 1.0)."""
    bound: float = 1.0
    """B, the declared bound of the local signal."""

    def __post_init__(self) -> None:
        for name in ("w_g", "w_s", "bound"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"RewardWeights.{name} must be finite")
        if self.w_g <= 0 or self.w_s < 0 or self.bound <= 0:
            raise ValueError(
                f"RewardWeights needs w_g > 0, w_s >= 0 and bound > 0, got {self.w_g}, "
                f"{self.w_s}, {self.bound}"
            )
        check_dominance(self.w_g, self.w_s, self.bound, stacklevel=4)


def decay(distance: np.ndarray | float, window: int) -> np.ndarray:
    """phi(d) = max(0, 1 - |d| / (w + 1)) (Eq. 7).

    >>> decay(np.arange(5), 3).tolist()
    [1.0, 0.75, 0.5, 0.25, 0.0]
    """
    _check_window("decay", window)
    d = np.abs(np.asarray(distance, dtype=np.float64))
    return np.maximum(0.0, 1.0 - d / (window + 1))


def _check_verdicts(verdicts: Sequence[int]) -> np.ndarray:
    """The verdicts as a 1-D float64 array; ValueError unless each is -1, 0 or +1."""
    e = np.asarray(verdicts, dtype=np.float64)
    if e.ndim != 1 or not np.isin(e, (-1.0, 0.0, 1.0)).all():
        raise ValueError(f"verdicts must be a list of -1, 0 and +1, got {list(np.ravel(e))[:10]}")
    return e


def propagate_errors(verdicts: Sequence[int], propagation: Propagation = "error") -> list[int]:
    """Apply the propagation strategy: with "error", steps after the first -1 become 0.

    >>> propagate_errors([1, -1, 1, -1])
    [1, -1, 0, 0]
    >>> propagate_errors([1, -1, 1], "independent")
    [1, -1, 1]
    """
    if propagation not in PROPAGATIONS:
        raise ValueError(f"propagation must be one of {PROPAGATIONS}, got {propagation!r}")
    out = [int(v) for v in _check_verdicts(verdicts)]
    if propagation == "error" and -1 in out:
        first = out.index(-1)
        out[first + 1 :] = [0] * (len(out) - first - 1)
    return out


def step_values(verdicts: Sequence[int], config: StepSignalConfig | None = None) -> np.ndarray:
    """The local value of each step (before clamping), float64 [S]; see the module docstring.

    Verdicts are used as given (apply :func:`propagate_errors` first).

    >>> step_values([1, 1, -1, 0], StepSignalConfig(window=0)).tolist()   # Eq. 8: e_s / 4
    [0.25, 0.25, -0.25, 0.0]
    >>> step_values([1, 1, -1, 0]).tolist()   # w = 3: (1 - 0.5)/4, (1 - 0.75)/4, -1/4, -0.75/4
    [0.125, 0.0625, -0.25, -0.1875]
    """
    cfg = config or StepSignalConfig()
    e = _check_verdicts(verdicts)
    n = e.shape[0]
    if n == 0:
        return e
    idx = np.arange(n)
    phi = decay(idx[:, None] - idx[None, :], cfg.window)
    if cfg.spread_positive:
        return phi @ e / n
    return (np.maximum(e, 0.0) + phi @ np.minimum(e, 0.0)) / n


def line_values(
    penalties: Mapping[int, float], n_lines: int, config: LineSignalConfig | None = None
) -> np.ndarray:
    """The local value of each line (before clamping), float64 [n_lines] (Eqs. 6-7).

    ``penalties`` maps 1-based line numbers to merged penalties p_l (< 0 usually). Lines past
    the end (a syntax error reported at end of input) count as the last line.

    >>> line_values({2: -1.0}, 5).tolist()   # phi(d) over d = 1, 0, 1, 2, 3
    [-0.75, -1.0, -0.75, -0.5, -0.25]
    """
    cfg = config or LineSignalConfig()
    out = np.zeros(max(n_lines, 0), dtype=np.float64)
    if n_lines <= 0 or not penalties:
        return out
    scale = 1.0 / len(penalties) if cfg.normalize else 1.0
    rows = np.arange(1, n_lines + 1)
    for line, p in penalties.items():
        if not math.isfinite(p):
            raise ValueError(f"line penalty for line {line} must be finite, got {p}")
        at = min(max(int(line), 1), n_lines)
        out += scale * p * decay(rows - at, cfg.window)
    return out


def clamp_local(local: np.ndarray, bound: float) -> np.ndarray:
    """Clamp a local signal to [-B, B].

    >>> clamp_local(np.array([-2.0, 0.5, 3.0]), 1.0).tolist()
    [-1.0, 0.5, 1.0]
    """
    if isinstance(bound, bool) or not (isinstance(bound, int | float) and bound > 0):
        raise ValueError(f"clamp_local: bound must be a number > 0 (inf: no clamp), got {bound!r}")
    return np.clip(np.asarray(local, dtype=np.float64), -bound, bound)


@dataclass(frozen=True)
class StepSignal:
    """Step verdicts turned into a per-token local signal (Eq. 8), for one completion.

    Attributes:
        local_T: S_t per token, clamped to [-B, B].
        steps_T: step index of each token (-1 outside any step).
        verdicts: the verdicts after error propagation.
        values: each step's value before spreading (float64 [S]).
    """

    local_T: np.ndarray
    steps_T: np.ndarray
    verdicts: list[int]
    values: np.ndarray


def step_signal(
    offsets_T2: np.ndarray,
    spans_S2: np.ndarray,
    verdicts: Sequence[int],
    text_len: int,
    config: StepSignalConfig | None = None,
) -> StepSignal:
    """Propagate errors, decay over steps, spread over each step's tokens (1/|S| included in
    the step values), clamp to the bound: the whole step -> token path of recipe 1.

    The spans are validated (inside the text, sorted, not overlapping) rather than clipped, so a
    bad span is an error instead of a reward silently shifted onto other tokens.
    """
    from botgrpo.rewards.spans import spread_span_scores, token_span_index, validate_spans

    cfg = config or StepSignalConfig()
    spans = validate_spans(spans_S2, text_len, what="step span")
    if len(verdicts) != len(spans):
        raise ValueError(f"got {len(verdicts)} verdicts for {len(spans)} steps")
    propagated = propagate_errors(verdicts, cfg.propagation)
    values = step_values(propagated, cfg)
    local = clamp_local(spread_span_scores(offsets_T2, spans, values), cfg.bound)
    return StepSignal(local, token_span_index(offsets_T2, spans), propagated, values)
