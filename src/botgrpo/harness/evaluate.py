"""Held-out evaluation: greedy and sampled solve rates, step accuracies and pass@k.

Four numbers per evaluation (``EVAL_METRICS``; the greedy pair can be skipped), and the task's
own rates where its scores carry them (the code tasks' compile and clean rates): the share of problems the greedy completion
solves, the share of correct steps among the greedy completions' steps, the same two over
``n_samples`` completions per problem sampled at the training temperature (sampled solved is the
unbiased pass@1, the policy's expected outcome, which is what RL raises), and pass@k.

Generation is batched with left padding through ``model.generate`` (the code path of any Hugging
Face causal LM); completions are scored by the task, the same scorer that feeds the reward.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from dataclasses import dataclass

import torch

from botgrpo.harness.results import EVAL_METRICS, TASK_METRICS
from botgrpo.metrics import pass_at_k
from botgrpo.tasks.base import Example, Task, score_all

#: Seed labels of the held-out streams: "test" is reported, "validation" picks learning rates.
HELD_OUT_STREAMS = ("test", "validation")


def finite_order(task: Task) -> list[Example] | None:
    """A finite task's distinct problems (it defines ``all_problems()``, as a JSONL file does)
    in one fixed shuffled order that splits them: the test stream takes every other problem
    from the first, the validation stream the ones between, training what neither reserves
    (:func:`held_out_prompts`). None for a task that generates its problems."""
    every = getattr(task, "all_problems", None)
    if every is None:
        return None
    distinct: dict[str, Example] = {}
    for ex in every():
        distinct.setdefault(ex.prompt, ex)
    order = list(distinct.values())
    random.Random("held-out-split").shuffle(order)
    return order


def held_out_examples(task: Task, n: int, stream: str = "test") -> list[Example]:
    """``n`` distinct problems of a held-out stream (its own seed label; training excludes them).
    A finite task's test and validation problems never overlap (:func:`finite_order`).

    Raises when the task cannot produce ``n`` distinct problems (a small finite task).
    """
    if stream not in HELD_OUT_STREAMS:
        raise ValueError(f"stream must be one of {HELD_OUT_STREAMS}, got {stream!r}")
    order = finite_order(task)
    if order is not None:
        picks = order[HELD_OUT_STREAMS.index(stream) :: len(HELD_OUT_STREAMS)][:n]
        if len(picks) < n:
            raise ValueError(
                f"task {task.name!r} has {len(order)} distinct problems, too few for test and "
                f"validation sets of {n} each; lower --eval-problems (at most about "
                f"{max(1, len(order) // 4)} leaves half of them for training)"
            )
        return picks
    rng = random.Random(f"held-out-{stream}")
    seen: dict[str, Example] = {}
    for _ in range(50 * n + 100):
        if len(seen) == n:
            break
        ex = task.sample(rng)
        seen.setdefault(ex.prompt, ex)
    if len(seen) < n:
        raise ValueError(
            f"task {task.name!r} gave only {len(seen)} distinct problems for a held-out set of "
            f"{n}; lower --eval-problems"
        )
    return list(seen.values())


#: Held-out problems reserved per stream whatever the evaluation size: training and the warm
#: start exclude at least this many, so evaluating on fewer (a quick demo) reuses the same warm
#: start, and its cache key does not depend on --eval-problems up to this size.
HELD_OUT_RESERVE = 500


def held_out_prompts(task: Task, n: int) -> frozenset[str]:
    """Prompts of every held-out stream (test and validation), at least ``HELD_OUT_RESERVE``
    each (fewer only when the task has fewer distinct problems), which training never sees.
    Each stream's first ``n`` problems are those :func:`held_out_examples` evaluates on. A
    finite task of N problems reserves ``max(n, min(HELD_OUT_RESERVE, N // 10))`` per stream,
    so that most of a small file is left for training."""
    order = finite_order(task)
    if order is not None:
        reserve = max(n, min(HELD_OUT_RESERVE, len(order) // 10))
        return frozenset(ex.prompt for ex in order[: len(HELD_OUT_STREAMS) * reserve])
    out: set[str] = set()
    for stream in HELD_OUT_STREAMS:
        try:
            examples = held_out_examples(task, max(n, HELD_OUT_RESERVE), stream)
        except ValueError:  # a small task: reserve only what the evaluation uses
            examples = held_out_examples(task, n, stream)
        out.update(ex.prompt for ex in examples)
    return frozenset(out)


@torch.no_grad()
def generate(
    model,
    tokenizer,
    prompts: list[str],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    num_return_sequences: int = 1,
    batch_size: int = 256,
    cache_implementation: str = "dynamic",
) -> list[str]:
    """Completions of ``prompts`` (``num_return_sequences`` each, in prompt order).
    ``cache_implementation``: transformers' KV cache ("static" preallocates it: the same
    samples' distribution, about 1.9x faster than "dynamic" for the tiny model at a thousand
    tokens)."""
    cache = (
        {} if cache_implementation == "dynamic" else {"cache_implementation": cache_implementation}
    )
    model.eval()
    tokenizer.padding_side = "left"
    out: list[str] = []
    sample = temperature > 0
    for i in range(0, len(prompts), batch_size):
        enc = tokenizer(
            prompts[i : i + batch_size], return_tensors="pt", padding=True, add_special_tokens=False
        )
        gen = model.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            do_sample=sample,
            temperature=temperature if sample else None,
            top_k=0 if sample else None,
            top_p=1.0 if sample else None,
            num_return_sequences=num_return_sequences,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **cache,
        )
        out.extend(
            tokenizer.batch_decode(gen[:, enc.input_ids.shape[1] :], skip_special_tokens=True)
        )
    return out


def _step_accuracy(scores) -> float:
    verdicts = [v.verdict for s in scores for v in s.steps]
    return sum(v == 1 for v in verdicts) / max(1, len(verdicts))


def _task_metrics(scores, prefix: str) -> dict[str, float]:
    """Means of the task's own rates (``Score.metrics``: compiled, clean) the scores carry."""
    out = {}
    for name in TASK_METRICS:
        values = [s.metrics[name] for s in scores if name in s.metrics]
        if values and len(values) == len(scores):
            out[f"{prefix}_{name}"] = sum(values) / len(values)
    return out


@dataclass(frozen=True)
class EvalResult:
    """Held-out metrics at one training step.

    Attributes:
        greedy_solved: fraction of problems solved by the greedy completion; None when the
            greedy completions were not evaluated.
        greedy_step_acc: fraction of greedy steps judged correct (over all written steps);
            None when the greedy completions were not evaluated.
        sampled_solved: fraction of sampled completions that solve their problem (pass@1);
            None without samples.
        sampled_step_acc: fraction of the sampled completions' steps judged correct; None
            without samples.
        pass_at: pass@k for each k, from ``n_samples`` sampled completions per problem.
        n_problems: problems evaluated greedily.
        task_metrics: the task's own rates (``greedy_compiled``, ``sampled_clean``, ...).
    """

    greedy_solved: float | None
    greedy_step_acc: float | None
    sampled_solved: float | None
    sampled_step_acc: float | None
    pass_at: dict[int, float]
    n_problems: int
    task_metrics: dict[str, float] = dataclasses.field(default_factory=dict)

    def record(self) -> dict[str, float]:
        """The metrics as an evaluation record's fields (absent sampled metrics left out)."""
        out = {k: getattr(self, k) for k in EVAL_METRICS if getattr(self, k, None) is not None}
        out.update(self.task_metrics)
        return {**out, **{f"pass@{k}": v for k, v in self.pass_at.items()}}


def evaluate(
    model,
    tokenizer,
    task: Task,
    examples: list[Example],
    *,
    max_new_tokens: int,
    n_samples: int = 0,
    sample_problems: int | None = None,
    ks: tuple[int, ...] = (1, 4),
    temperature: float = 1.0,
    greedy: bool = True,
    seed: int | None = None,
    cache_implementation: str = "dynamic",
    render_prompt=None,
) -> EvalResult:
    """Greedy metrics on ``examples`` (unless ``greedy`` is False) and, when ``n_samples`` > 0,
    sampled metrics and unbiased pass@k on the first ``sample_problems`` of them (all by
    default). ``seed``: sample from a random stream of this seed alone (:func:`eval_seed`),
    leaving the caller's stream as it was, so training's draws never shift an evaluation's
    samples and an evaluation never shifts training's; None draws from the global stream.
    ``cache_implementation``: the KV cache generation uses (:func:`generate`).
    ``render_prompt``: what the model is given for a problem's prompt (e.g. a chat model's
    template around it, :func:`botgrpo.tasks.data.chat_text`); None = the prompt as is."""
    gen = functools.partial(generate, cache_implementation=cache_implementation)
    if render_prompt is not None:
        base = gen

        def gen(model, tokenizer, prompts, **kwargs):
            return base(model, tokenizer, [render_prompt(p) for p in prompts], **kwargs)

    if seed is None:
        return _evaluate(model, tokenizer, task, examples, max_new_tokens, n_samples,
                         sample_problems, ks, temperature, greedy, gen)  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _evaluate(model, tokenizer, task, examples, max_new_tokens, n_samples,
                         sample_problems, ks, temperature, greedy, gen)  # fmt: skip


def eval_seed(run_seed: int, step: int) -> int:
    """The seed of the evaluation at ``step`` of a run of seed ``run_seed``: one stream per
    (seed, step), the same in every method, so methods are compared on the same draws as far
    as their models agree."""
    return (int(run_seed) * 1_000_003 + int(step)) % (2**63)


def _evaluate(
    model, tokenizer, task, examples, max_new_tokens, n_samples, sample_problems, ks,
    temperature, greedy, generate=generate,
) -> EvalResult:  # fmt: skip
    if not greedy and n_samples < 1:
        raise ValueError("nothing to evaluate: greedy=False needs n_samples >= 1")
    scores = []
    if greedy:
        completions = generate(
            model, tokenizer, [ex.prompt for ex in examples], max_new_tokens=max_new_tokens
        )
        scores = score_all(task, examples, completions)
    extra = _task_metrics(scores, "greedy") if scores else {}
    sampled_solved = sampled_step = None
    pass_at: dict[int, float] = {}
    subset = examples[:sample_problems] if sample_problems is not None else examples
    if n_samples > 0 and subset:
        sampled = generate(
            model,
            tokenizer,
            [ex.prompt for ex in subset],
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            num_return_sequences=n_samples,
        )
        repeated = [ex for ex in subset for _ in range(n_samples)]
        flat = score_all(task, repeated, sampled)
        per_problem = [flat[i * n_samples : (i + 1) * n_samples] for i in range(len(subset))]
        extra.update(_task_metrics(flat, "sampled"))
        correct = [sum(s.solved for s in group) for group in per_problem]
        for k in ks:
            if k <= n_samples:
                pass_at[k] = sum(pass_at_k(n_samples, c, k) for c in correct) / len(subset)
        sampled_solved = sum(correct) / (n_samples * len(subset))
        sampled_step = _step_accuracy([s for group in per_problem for s in group])
    return EvalResult(
        greedy_solved=sum(s.solved for s in scores) / len(scores) if scores else None,
        greedy_step_acc=_step_accuracy(scores) if scores else None,
        sampled_solved=sampled_solved,
        sampled_step_acc=sampled_step,
        pass_at=pass_at,
        n_problems=len(examples),
        task_metrics=extra,
    )
