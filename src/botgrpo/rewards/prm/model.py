"""A Hugging Face process reward model as a step verdict source: batched forwards, P(correct)
per step, verdicts by a threshold, neutral verdicts when the model fails."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botgrpo.loading import from_pretrained
from botgrpo.rewards.prm.config import PRMConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PRMScores:
    """What a PRM said about one completion's steps."""

    p_correct: tuple[float | None, ...]
    """P(correct) of each step; None for a step past ``max_length`` (not scored)."""
    verdicts: tuple[int, ...]
    """+1 / -1 by the threshold; 0 for a step not scored (truncated, or the model failed)."""
    truncated: int = 0
    """How many of the steps lay past ``max_length``."""
    failed: bool = False
    """The forward failed: every verdict is 0 (neutral)."""

    @property
    def soft(self) -> tuple[float, ...]:
        """2 P(correct) - 1 per step, in [-1, 1] (0 for a step not scored)."""
        return tuple(0.0 if p is None else 2.0 * p - 1.0 for p in self.p_correct)


@dataclass
class PRMStats:
    """Running totals of a PRM's calls (logged beside the other reward stages)."""

    calls: int = 0
    completions: int = 0
    steps: int = 0
    truncated_steps: int = 0
    failed_batches: int = 0
    seconds: float = 0.0
    last_seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


def _check_head(cfg: PRMConfig, model: Any, info: Mapping[str, Any]) -> None:
    """ValueError when the folder has no trained head for the layout: transformers then starts
    the head from random weights (it only prints a report), and every verdict is noise."""
    missing = [str(k) for k in info.get("missing_keys", ())]
    head = ("lm_head",) if cfg.layout == "math_shepherd" else ("score", "classifier")
    untrained = [k for k in missing if k.split(".")[0] in head]
    if untrained:
        hint = (
            " (Qwen2.5-Math-PRM's own head needs trust_remote_code: true)"
            if cfg.layout == "qwen" and not cfg.trust_remote_code
            else ""
        )
        raise ValueError(
            f"its folder has no trained {untrained[0].split('.')[0]} weights for layout "
            f"{cfg.layout!r}{hint}; a model without them would give random verdicts"
        )
    heads = ("score", "classifier", "lm_head")
    if cfg.layout != "math_shepherd" and not any(hasattr(model, h) for h in heads):
        raise ValueError(
            f"it loads as {type(model).__name__}, a model without a classification head; "
            f"layout {cfg.layout!r} needs a 2-class head (for a token-classification PRM leave "
            "trust_remote_code false)"
        )


def _device_and_dtype(config: PRMConfig):
    import torch

    device = config.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"PRMConfig.device {config.device!r} is not a device torch knows; pass auto, cpu, "
            "cuda or cuda:N"
        ) from None
    dtype = config.dtype
    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") else "float32"
    return torch.device(device), getattr(torch, dtype)


class ProcessRewardModel:
    """Step verdicts from a PRM (see :mod:`botgrpo.rewards.prm` for the layouts).

    ``ProcessRewardModel(config)`` loads the model and tokenizer of ``config.model``; pass
    ``model=`` and ``tokenizer=`` to use ones already loaded. It is a verdict source wherever a
    ``step_verifier`` is taken: ``judge_many(problems, steps_lists)`` scores a whole batch in
    batched forwards, ``prm(problem, steps)`` one solution; :meth:`score` also returns
    P(correct) and the soft values.
    """

    __name__ = "prm_step_verifier"

    def __init__(
        self,
        config: PRMConfig | Mapping[str, Any],
        *,
        model: Any = None,
        tokenizer: Any = None,
    ) -> None:
        from botgrpo.rewards.configs import config_from_mapping

        self.config = config_from_mapping(PRMConfig, config)
        self.device, self.dtype = _device_and_dtype(self.config)
        if tokenizer is None or model is None:
            model, tokenizer = self._load(model, tokenizer)
        self.model, self.tokenizer = model.eval(), tokenizer
        self.stats = PRMStats()
        self._check()
        self.max_length = self.config.max_length
        limit = _position_limit(self.model)
        if limit is not None and limit < self.max_length:
            self.max_length = limit  # past its positions a forward fails: those steps are cut

    # ---- loading ------------------------------------------------------------------------------

    def _load(self, model: Any, tokenizer: Any):
        from transformers import (
            AutoModel,
            AutoModelForCausalLM,
            AutoModelForTokenClassification,
            AutoTokenizer,
        )

        cfg = self.config
        remote = {"trust_remote_code": cfg.trust_remote_code}
        name = str(Path(cfg.model).expanduser()) if cfg.model.startswith("~") else cfg.model
        looks_local = name.startswith(("/", "./", "../")) or Path(name).exists()
        if looks_local and not Path(name).is_dir():
            raise ValueError(
                f"PRM {cfg.model!r}: no such folder; pass a folder saved with save_pretrained"
            )
        try:
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(name, **remote)
            if model is None:
                if cfg.layout == "math_shepherd":
                    cls = AutoModelForCausalLM
                else:
                    cls = AutoModel if cfg.trust_remote_code else AutoModelForTokenClassification
                model, info = from_pretrained(
                    cls, name, dtype=self.dtype, output_loading_info=True, **remote
                )
                _check_head(cfg, model, info)
        except (OSError, ValueError) as err:
            reason = " ".join(str(err).split())[:300]
            raise ValueError(
                f"PRM {cfg.model!r} cannot be loaded ({reason}); pass a folder saved with "
                "save_pretrained or a hub name available offline"
            ) from None
        try:
            return model.to(self.device), tokenizer
        except (RuntimeError, AssertionError) as err:  # no CUDA, a device torch does not know
            raise ValueError(
                f"PRMConfig.device {cfg.device!r} cannot be used here ({' '.join(str(err).split())[:120]}); "
                "pass auto, cpu or an available cuda device"
            ) from None

    def _check(self) -> None:
        """One-line errors for a model that cannot work with its layout."""
        cfg, tok = self.config, self.tokenizer
        if not getattr(tok, "is_fast", False):
            raise ValueError(f"PRM {cfg.model!r}: a fast tokenizer is needed (character offsets)")
        if cfg.layout == "qwen":
            sep_ids = tok(cfg.step_separator, add_special_tokens=False).input_ids
            if len(sep_ids) != 1 or sep_ids[0] == tok.unk_token_id:
                raise ValueError(
                    f"PRM {cfg.model!r}: its vocabulary lacks the separator "
                    f"{cfg.step_separator!r} as one token (the qwen layout reads the model there)"
                )
            if not getattr(tok, "chat_template", None):
                raise ValueError(f"PRM {cfg.model!r}: the qwen layout needs a chat template")
        if cfg.layout == "math_shepherd":
            self.candidates = [self._one_token(t) for t in (cfg.good_token, cfg.bad_token)]
            vocab = self.model.get_output_embeddings().weight.shape[0]
            if max(self.candidates) >= vocab:
                raise ValueError(f"PRM {cfg.model!r}: its head is smaller than its vocabulary")
        else:
            labels = getattr(self.model.config, "num_labels", None)
            if labels != 2:
                raise ValueError(
                    f"PRM {cfg.model!r}: layout {cfg.layout!r} reads a 2-class head; this model's "
                    f"has {labels} classes (a head of the wrong size)"
                )

    def _one_token(self, text: str) -> int:
        ids = self.tokenizer(text, add_special_tokens=False).input_ids
        if len(ids) != 1 or ids[0] == self.tokenizer.unk_token_id:
            raise ValueError(
                f"PRM {self.config.model!r}: its vocabulary lacks {text!r} as one token "
                "(math_shepherd reads P(correct) from the logits of good_token and bad_token)"
            )
        return ids[0]

    # ---- input layout ---------------------------------------------------------------------------

    def layout(self, problem: str, steps: Sequence[str]) -> tuple[str, list[int]]:
        """The model's input text for one solution (qwen and math_shepherd) and, per step, the
        character index the model is read at (the separator's last non-blank character)."""
        cfg, sep = self.config, self.config.step_separator
        stripped = sep.rstrip()
        read = len(stripped) - 1 if stripped else len(sep) - 1
        body, reads = "", []
        for step in steps:
            body += step
            reads.append(len(body) + read)
            body += sep
        if cfg.layout == "qwen":
            messages = [
                {"role": "system", "content": cfg.system_prompt},
                {"role": "user", "content": problem},
                {"role": "assistant", "content": body},
            ]
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=False
            )
            at = text.rfind(body) if body else len(text)
            if at < 0:
                raise ValueError("the chat template changed the steps' text")
            return text, [at + r for r in reads]
        prefix = f"{problem} " if cfg.layout == "math_shepherd" else problem
        return prefix + body, [len(prefix) + r for r in reads]

    def encode(self, problem: str, steps: Sequence[str]) -> tuple[list[int], list[int]]:
        """Input ids of one solution and the position of each step's read token.

        token_classification: as TRL's PRM trainer built its rows, the BOS (when the tokenizer
        has one), the problem's ids, then each step's ids followed by the separator's ids (each
        tokenized on its own: a tokenizer that joins ``.`` and a line break into one token when
        they are tokenized together would read another token), read at the separator's last. qwen and math_shepherd: the whole text of :meth:`layout`
        tokenized at once, as their model cards do, read at the token holding the separator's
        last non-blank character.
        """
        tok = self.tokenizer
        if self.config.layout == "token_classification":
            ids = [tok.bos_token_id] if tok.bos_token_id is not None else []
            ids += tok(problem, add_special_tokens=False).input_ids
            separator = tok(self.config.step_separator, add_special_tokens=False).input_ids
            at = []
            for step in steps:
                ids += tok(step, add_special_tokens=False).input_ids + separator
                at.append(len(ids) - 1)
            return ids, at
        text, reads = self.layout(problem, steps)
        enc = tok(text, add_special_tokens=True, return_offsets_mapping=True)
        at = _tokens_at(enc["offset_mapping"], reads)
        if any(p is None for p in at):
            raise ValueError("a step's separator was not found in the tokenized input")
        return list(enc["input_ids"]), at  # type: ignore[return-value]

    # ---- scoring --------------------------------------------------------------------------------

    def score(
        self, problems: Sequence[str], steps_lists: Sequence[Sequence[str]]
    ) -> list[PRMScores]:
        """P(correct) and verdicts of every step of every solution, ``batch_size`` solutions a
        forward; a batch whose forward fails gets neutral verdicts (logged), never an error."""
        if len(problems) != len(steps_lists):
            raise ValueError(f"got {len(problems)} problems for {len(steps_lists)} solutions")
        for i, (problem, steps) in enumerate(zip(problems, steps_lists, strict=True)):
            if not isinstance(problem, str):
                raise TypeError(
                    f"problem {i} is a {type(problem).__name__}, not a string: pass the problem's "
                    "text (the user turn of a chat prompt)"
                )
            if isinstance(steps, str) or not all(isinstance(x, str) for x in steps):
                raise TypeError(f"steps of solution {i} must be a list of strings, one per step")
        start = time.perf_counter()
        out: list[PRMScores] = []
        size = self.config.batch_size
        for i in range(0, len(problems), size):
            out += self._score_batch(problems[i : i + size], steps_lists[i : i + size])
        seconds = time.perf_counter() - start
        stats = self.stats
        stats.calls += 1
        stats.completions += len(out)
        stats.steps += sum(len(s.verdicts) for s in out)
        stats.truncated_steps += sum(s.truncated for s in out)
        stats.seconds += seconds
        stats.last_seconds = seconds
        truncated = sum(s.truncated for s in out)
        if truncated:
            logger.warning(
                "prm: %d steps lay past max_length %d and were not scored (verdict 0)",
                truncated,
                self.max_length,
            )
        logger.info(
            "prm: %d completions, %d steps in %.2f s (%d truncated)",
            len(out),
            sum(len(s.verdicts) for s in out),
            seconds,
            sum(s.truncated for s in out),
        )
        return out

    def _score_batch(self, problems, steps_lists) -> list[PRMScores]:
        try:
            return self._forward(problems, steps_lists)
        except Exception as err:  # a model that fails gives neutral verdicts, never a crash
            self.stats.failed_batches += 1
            message = f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
            self.stats.errors = [*self.stats.errors[-9:], message]
            logger.warning(
                "prm: a batch of %d failed (%s); its verdicts are 0", len(problems), message
            )
            return [PRMScores((None,) * len(s), (0,) * len(s), 0, failed=True) for s in steps_lists]

    def _forward(self, problems, steps_lists) -> list[PRMScores]:
        import torch

        cfg, tok = self.config, self.tokenizer
        rows, positions = [], []
        for problem, steps in zip(problems, steps_lists, strict=True):
            ids, at = self.encode(problem, list(steps))
            ids = ids[: self.max_length]
            rows.append(ids)
            positions.append([p if p < len(ids) else None for p in at])
        width = max((len(r) for r in rows), default=0)
        if width == 0:
            return [PRMScores((), ()) for _ in rows]
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=self.device)
        mask = torch.tensor(
            [[1] * len(r) + [0] * (width - len(r)) for r in rows], device=self.device
        )
        with torch.no_grad():
            output = self.model(input_ids=input_ids, attention_mask=mask)
        logits = output.logits if hasattr(output, "logits") else output[0]
        logits = logits.float()
        if cfg.layout == "math_shepherd":
            p_BT = logits[..., self.candidates].softmax(-1)[..., 0]
        else:
            p_BT = logits[..., :2].softmax(-1)[..., cfg.positive_label]
        out = []
        for b, at in enumerate(positions):
            ps = tuple(None if p is None else float(p_BT[b, p]) for p in at)
            if any(p is not None and not 0.0 <= p <= 1.0 for p in ps):  # NaN, inf logits
                raise FloatingPointError(
                    "the model's logits at a step are not finite (an overflow in low precision?)"
                )
            verdicts = tuple(0 if p is None else (-1 if p < cfg.threshold else 1) for p in ps)
            out.append(PRMScores(ps, verdicts, sum(p is None for p in ps)))
        return out

    # ---- the verdict-source interface ------------------------------------------------------------

    def judge_many(
        self, problems: Sequence[str], steps_lists: Sequence[Sequence[str]]
    ) -> list[list[int]]:
        """Verdicts of every solution of a batch (what the recipes call)."""
        return [list(s.verdicts) for s in self.score(problems, steps_lists)]

    def __call__(self, problem: str, steps: Sequence[str]) -> list[int]:
        if isinstance(steps, str):
            raise TypeError("steps of solution 0 must be a list of strings, one per step")
        return self.judge_many([problem], [list(steps)])[0]


def _position_limit(model: Any) -> int | None:
    """The most tokens the model's position embeddings hold, when its config says."""
    config = getattr(model, "config", None)
    for key in ("max_position_embeddings", "n_positions"):
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _tokens_at(offsets: Sequence[Sequence[int]], chars: Sequence[int]) -> list[int | None]:
    """For each character index, the last token whose span holds it (a character split over
    several byte-level tokens is read at its last, as a model card's ``ids == tag_id`` is);
    None when no token does."""
    out = []
    for ch in chars:
        holding = [t for t, (a, b) in enumerate(offsets) if a <= ch < b]
        out.append(holding[-1] if holding else None)
    return out
