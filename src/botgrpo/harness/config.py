"""Options of `botgrpo compare` and `botgrpo demo`, one dataclass, one docstring per field.

The command-line flags are generated from these fields (:func:`add_dataclass_arguments`), so an
option is documented once.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import typing
from dataclasses import dataclass

from botgrpo.harness.results import EVAL_METRICS
from botgrpo.rewards.configs import basic_members, matches_basic
from botgrpo.trl.presets import PRESETS
from botgrpo.usage import check_finite_number, check_folder_name, check_unique, parse_bool

DEFAULT_METHODS = ("grpo", "dapo", "gspo", "pure", "bot", "bot_uniform")

#: The most held-out problems an evaluation may use (drawing more would take hours per step).
MAX_PROBLEMS = 100_000

#: The most training problems a run may draw (steps x prompts_per_step, drawn up front).
MAX_TRAIN_PROBLEMS = 10_000_000


@dataclass
class CompareConfig:
    """A methods x seeds comparison with identical data, reward, initial checkpoint and budget."""

    name: str = "compare"
    """Run name: results go to OUT_DIR/NAME/."""
    out_dir: str = "runs"
    """Parent folder of the results."""
    task: str = "chain"
    """Task spec: a built-in name (chain, columns, react, python; options as
    chain:min_steps=12), jsonl:PATH, reasoning_gym:DATASET or package.module:factory
    (docs/tasks.md)."""
    methods: tuple[str, ...] = DEFAULT_METHODS
    """Methods (BoTGRPOTrainer presets) to compare."""
    seeds: int = 5
    """Number of seeds (0..seeds-1); seed s fixes the training data order and sampling."""
    steps: int = 200
    """Optimizer steps per run (the budget)."""
    eval_every: int = 20
    """Evaluate on the held-out problems every this many steps (and at step 0)."""
    eval_problems: int = 500
    """Held-out problems per evaluation (greedy metrics)."""
    pass_samples: int = 4
    """Completions sampled per held-out problem at the training temperature for the sampled
    metrics (sampled_solved = pass@1, sampled_step_acc) and pass@k; 0 = greedy metrics only."""
    pass_problems: int = 500
    """Held-out problems used for the sampled metrics (the first ones of the greedy set; lower it
    to save time: sampling costs pass_samples times a greedy evaluation)."""
    greedy: bool = True
    """Also evaluate each held-out problem's greedy completion (the greedy_* metrics, on
    eval_problems). false skips them, about half of an evaluation's time with one sample per
    problem, where only the sampled metrics matter (the code tasks' warm starts already compile
    greedily); the sampled metrics and training are the same either way."""
    metric: str = "sampled_solved"
    """The metric that thresholds, speedups, the lr sweep and the summary lead with:
    greedy_solved, greedy_step_acc, sampled_solved, sampled_step_acc, or on the code tasks
    greedy_compiled, sampled_compiled, greedy_clean, sampled_clean (see docs/compare.md).
    sampled_solved, the policy's expected solve rate, is what RL raises and the least noisy."""
    prompts_per_step: int = 8
    """Prompts per optimizer step."""
    num_generations: int = 8
    """Rollouts per prompt (K)."""
    max_completion_length: int | None = None
    """Longest completion in tokens; None = the task's (``max_completion_tokens``: 192 for chain
    and columns, 448 for react, 192 for python)."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    generation_cache: str | None = None
    """The KV cache rollouts and evaluations generate with: "dynamic" (grows as it goes) or
    "static" (preallocated: the same samples' distribution, about 1.9x faster for the tiny
    model at a thousand tokens); None = the task's (``generation_cache``: dynamic, static for
    react pages)."""
    learning_rate: float = 1e-4
    """Learning rate of every method (unless method_lrs or the sweep set it per method). On the
    default task every preset learns at 1e-4 with a small spread over seeds; grpo and bot learn
    faster up to 4e-4 (where grpo's seeds spread widely) and break down at 8e-4
    (docs/results/teacher-lr.md). Compare methods each at its best rate (lr_sweep)."""
    warmup_steps: int = 10
    """Linear learning-rate warm-up over this many optimizer steps, then constant (transformers'
    constant_with_warmup: step k < N runs at k/N of the rate, so the first step at 0). Adam's
    first updates move every weight by about the learning rate whatever its gradient's noise;
    a short warm-up keeps those first steps from scrambling a tiny model."""
    method_lrs: tuple[str, ...] = ()
    """Per-method learning rates as METHOD=LR (e.g. grpo=4e-4 bot=2e-4), overriding
    learning_rate for those methods: each method at the rate a previous sweep chose for it."""
    lr_sweep: tuple[float, ...] = ()
    """Optional learning rates to sweep per method before the seeds run, on a separate
    validation stream of held-out problems; each method then runs at its best rate (highest
    mean of the lead metric over the run), so no method looks faster merely by taking bigger
    effective steps."""
    sweep_seeds: int = 1
    """Seeds per (method, rate) of the learning-rate sweep; a rate's score is the mean over
    them (one seed can pick a rate by luck when rates are close)."""
    w_g: float = 3.0
    """Weight of the outcome G in r_t = w_g G + w_s S_t + b_format."""
    w_s: float = 0.5
    """Weight of the local step signal S_t."""
    verdict_noise: str = ""
    """Noisy step verdicts for training, as RATE[:KIND] (e.g. 0.2 = 20% of verdicts flipped;
    kinds flip, false_alarm, miss, random; see botgrpo.tasks.NoisyVerdicts; a code task's
    line penalties take random or miss, botgrpo.tasks.NoisyLines); "" = the task's own
    verdicts. Evaluations always read clean verdicts; outcome-only methods (grpo, dapo, ...)
    see no verdicts, so their runs do not depend on it."""
    step_verifier: str = ""
    """Train with step verdicts from a learned verifier instead of the task's: prm:PATH, a
    process reward model folder (token_classification layout, botgrpo.rewards.prm; e.g. one
    benchmarks/train_prm.py trained). Evaluations read the task's exact verdicts; outcome-only
    methods see no verdicts, so their runs do not depend on it. Not with verdict_noise."""
    critic_learning_rate: float | None = None
    """Learning rate of method ppo's critic (its value model); None = the run's own rate. Other
    methods have no critic, so their runs do not depend on it."""
    warm_start_steps: int | None = None
    """Supervised warm-start steps (cached by config hash, shared by every run); None = the
    task's (``warm_start_steps``: 3000 for chain and columns, fewer for the code tasks, whose
    demonstrations are more regular and longer)."""
    warm_start_lr: float = 3e-3
    """Warm-start learning rate."""
    warm_start_batch_size: int | None = None
    """Demonstrations per warm-start step; None = the task's (``warm_start_batch_size``: 32,
    16 for react pages, whose demonstrations are three times as long)."""
    warm_start_stop: str | None = None
    """When the warm start is done: "steps" (exactly warm_start_steps) or "converged" (when
    its check loss, and with warm_start_watch_accuracy its token accuracy, are flat; at most
    warm_start_steps); None = the task's (``warm_start_stop``: "steps" for chain and columns,
    3000 fixed steps, and for the long React pages and Python helpers, 2400; "converged" for
    the default react and python tasks and for a task of your own)."""
    warm_start_schedule_steps: int = 0
    """Length of the warm start's learning-rate schedule (0 = warm_start_steps); above
    warm_start_steps it stops a longer run early, part-way through learning the task."""
    warm_start_anneal: float = 0.1
    """Length of a "converged" warm start's final anneal (its rate falls linearly to 10%), as
    a fraction of the steps run before it."""
    warm_start_patience: float | None = None
    """How long a "converged" warm start's check must stay flat before the anneal, as a
    fraction of the steps run (and at least 3 checks, 150 steps): a plateau shorter than that
    is a slow phase of learning, not its end; None = the task's (``warm_start_patience``: 0,
    the 3 checks alone, for the built-in tasks whose warm starts ship or are published; 0.2 for
    the others, yours included)."""
    warm_start_watch_accuracy: bool | None = None
    """Whether a "converged" warm start also waits for its check batch's token accuracy to be
    flat, not only its loss; None = the task's (``warm_start_watch_accuracy``: off for the
    built-in tasks whose warm starts ship or are published, on for the others, yours
    included)."""
    warm_start_packed: bool | None = None
    """Pack the warm start's demonstrations into rows, none attending to another (the same
    loss with less padding: cheaper steps); None = the task's (``warm_start_packed``: off for
    the built-in tasks whose warm starts ship or are published, trained on padded rows; on for
    the others, yours included)."""
    init_model: str = ""
    """Start every run from this checkpoint (a local folder, a hub name, warm:NAME or
    real:NAME) instead of the cached tiny warm start; the warm_start_* options are then unused.
    It must not have been trained on the held-out problems."""
    chat: bool = False
    """Render every prompt, in training and evaluation, with the model's chat template as the
    user's turn (for chat models such as real:smollm2-135m-instruct); implied by
    system_prompt."""
    system_prompt: str | None = None
    """A system message before every prompt (implies chat): e.g. the output format."""
    lora_r: int = 0
    """Train LoRA adapters of this rank (peft, alpha = 2 r, every linear layer) instead of
    every weight; 0 = full fine-tuning."""
    top_layers: int | None = None
    """Train only the top N decoder layers and the final norm (with lora_r, LoRA on those
    layers only); None = every layer. Backward stops at the lowest trained layer: a real
    model's step fits a CPU."""
    thresholds: tuple[float, ...] = ()
    """Accuracy thresholds for steps-to-threshold; empty = 25/50/75% of the way from the
    step-0 value to the plateau (the best method's seed-averaged mean over the last third of
    its evaluations, never a single peak; docs/compare.md)."""
    checkpoint_every: int = 0
    """Save each run's training state (weights, optimizer, scheduler, random states) every
    this many steps, a multiple of eval_every, right after that step's evaluation (one
    checkpoint kept per run, under RUN/trainer, removed when the run finishes): a run that is
    stopped part-way then resumes from its last checkpoint with the same results instead of
    starting over (docs/compare.md). 0 = never: a stopped run starts over. ppo's runs and
    those with random step-verdict noise never save one (a checkpoint does not hold their
    critic or running verdict counts); random line noise on a code task does."""
    workers: int = 2
    """Runs in parallel (one CPU thread each)."""
    progress: bool = True
    """Show progress bars (labelled with what each run is doing, with an ETA); when off, a
    progress line goes to stderr every minute and at each finished run"""

    def learning_rates(self) -> dict[str, float]:
        """method -> its learning rate (method_lrs, else learning_rate)."""
        out = dict.fromkeys(self.methods, self.learning_rate)
        for item in self.method_lrs:
            name, sep, value = item.partition("=")
            try:
                lr = float(value) if sep else float("nan")
            except ValueError:
                lr = float("nan")
            if not 0 < lr < float("inf"):
                raise ValueError(f"method_lrs {item!r}: write METHOD=LR with LR > 0, e.g. bot=2e-4")
            if name not in out:
                raise ValueError(
                    f"method_lrs {item!r}: {name!r} is not among the methods {list(self.methods)}"
                )
            out[name] = lr
        return out

    def __post_init__(self) -> None:
        check_field_types(self)
        check_folder_name(self.name, "name")
        if not self.out_dir:
            raise ValueError("out_dir must name a folder, e.g. runs")
        self.out_dir = os.path.expanduser(self.out_dir)  # a quoted "~/runs" means the home's
        if self.lr_sweep and self.method_lrs:
            raise ValueError(
                "method_lrs and lr_sweep both choose the rates; give one (the sweep picks each "
                "method's rate itself)"
            )
        if self.sweep_seeds != 1 and not self.lr_sweep:
            raise ValueError("sweep_seeds applies to a learning-rate sweep: add --lr-sweep RATES")
        if self.steps * self.prompts_per_step > MAX_TRAIN_PROBLEMS:
            raise ValueError(
                f"steps x prompts_per_step = {self.steps * self.prompts_per_step} training "
                f"problems, drawn before training; at most {MAX_TRAIN_PROBLEMS}"
            )
        for name in ("eval_problems", "pass_problems"):
            if getattr(self, name) > MAX_PROBLEMS:
                raise ValueError(
                    f"{name} must be at most {MAX_PROBLEMS}, got {getattr(self, name)}"
                )
        if not self.methods:
            raise ValueError(f"methods is empty; name one or more of {', '.join(PRESETS)}")
        check_unique("methods", self.methods)
        check_unique("lr_sweep", self.lr_sweep)
        for name in ("temperature", "learning_rate", "w_g", "warm_start_lr"):
            check_finite_number(name, getattr(self, name), low=0.0, low_inclusive=False)
        check_finite_number("w_s", self.w_s, low=0.0, low_inclusive=True)
        if self.critic_learning_rate is not None:
            check_finite_number(
                "critic_learning_rate", self.critic_learning_rate, low=0.0, low_inclusive=False
            )
        for lr in self.lr_sweep:
            check_finite_number("every lr_sweep rate", lr, low=0.0, low_inclusive=False)
        for level in self.thresholds:
            if not (isinstance(level, int | float) and 0 < level < 1):
                raise ValueError(
                    f"thresholds must lie strictly between 0 and 1 (solve rates), got {level!r}"
                )
        check_unique("thresholds", self.thresholds)
        if self.metric not in EVAL_METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; valid: {', '.join(EVAL_METRICS)}")
        if self.metric.startswith("greedy") and not self.greedy:
            raise ValueError(
                f"metric {self.metric} needs the greedy evaluation: drop --greedy false, or "
                "lead with a sampled metric"
            )
        if not self.greedy and (self.pass_samples < 1 or self.pass_problems < 1):
            raise ValueError(
                "--greedy false leaves nothing to evaluate without samples: set --pass-samples "
                "and --pass-problems >= 1"
            )
        if self.metric.startswith("sampled") and (self.pass_samples < 1 or self.pass_problems < 1):
            raise ValueError(
                f"metric {self.metric} needs sampled completions: set --pass-samples and "
                "--pass-problems >= 1, or pick a greedy metric"
            )
        unknown = [m for m in self.methods if m not in PRESETS]
        if unknown:
            raise ValueError(f"unknown method(s) {unknown}; valid: {', '.join(PRESETS)}")
        positive = (
            "seeds",
            "steps",
            "eval_every",
            "eval_problems",
            "prompts_per_step",
            "num_generations",
            "max_completion_length",
            "workers",
            "sweep_seeds",
            "warm_start_batch_size",
        )
        for name in positive:
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.num_generations < 2:
            raise ValueError("num_generations must be >= 2 (group statistics need two rollouts)")
        check_unique("method_lrs methods", [item.partition("=")[0] for item in self.method_lrs])
        self.learning_rates()  # checks method_lrs
        if self.warmup_steps >= self.steps:
            raise ValueError(
                f"warmup_steps ({self.warmup_steps}) must be < steps ({self.steps}), or the "
                "learning rate never reaches its value; lower --warmup-steps"
            )
        non_negative = (
            "pass_samples",
            "pass_problems",
            "warm_start_steps",
            "warmup_steps",
            "checkpoint_every",
        )
        for name in non_negative:
            if getattr(self, name) is not None and getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.verdict_noise:
            from botgrpo.tasks.noise import VerdictNoise

            self.verdict_noise = VerdictNoise.parse(self.verdict_noise).spec()
        if self.step_verifier:
            from botgrpo.tasks.learned import PRM_PREFIX

            path = self.step_verifier.removeprefix(PRM_PREFIX)
            if not self.step_verifier.startswith(PRM_PREFIX) or not path:
                raise ValueError(
                    f"step_verifier {self.step_verifier!r}: write prm:PATH (a PRM folder)"
                )
            if self.verdict_noise:
                raise ValueError("give verdict_noise or step_verifier, not both")
        if self.checkpoint_every % self.eval_every:
            raise ValueError(
                f"checkpoint_every ({self.checkpoint_every}) must be a multiple of eval_every "
                f"({self.eval_every}): a run resumes at an evaluated step"
            )
        check_finite_number(
            "warm_start_anneal", self.warm_start_anneal, low=0.0, low_inclusive=False
        )
        if self.warm_start_anneal > 1:
            raise ValueError(
                "warm_start_anneal must be at most 1 (a fraction of the steps run before the "
                f"anneal), got {self.warm_start_anneal}"
            )
        if self.warm_start_patience is not None:
            check_finite_number(
                "warm_start_patience", self.warm_start_patience, low=0.0, low_inclusive=True
            )
            if self.warm_start_patience >= 1:
                raise ValueError(
                    "warm_start_patience must be below 1 (a fraction of the steps run), got "
                    f"{self.warm_start_patience}"
                )
        if self.system_prompt is not None:
            if not str(self.system_prompt).strip():
                raise ValueError("system_prompt is empty; give its text or leave it out")
            self.chat = True
        if self.lora_r < 0:
            raise ValueError(f"lora_r must be >= 0 (0: full fine-tuning), got {self.lora_r}")
        if self.top_layers is not None and self.top_layers < 1:
            raise ValueError(f"top_layers must be >= 1 layer (or None: all), got {self.top_layers}")
        if self.generation_cache not in (None, "dynamic", "static"):
            raise ValueError(
                f"generation_cache must be dynamic or static, got {self.generation_cache!r}"
            )
        if self.warm_start_stop not in (None, "steps", "converged"):
            raise ValueError(
                f"warm_start_stop must be steps or converged, got {self.warm_start_stop!r}"
            )
        if (
            self.warm_start_schedule_steps
            and self.warm_start_steps is not None
            and self.warm_start_schedule_steps < self.warm_start_steps
        ):
            raise ValueError(
                "warm_start_schedule_steps must be 0 or >= warm_start_steps, got "
                f"{self.warm_start_schedule_steps} < {self.warm_start_steps}"
            )


#: What a task may set when the comparison leaves it open (None), and the value otherwise.
TASK_DEFAULTS = {
    "max_completion_length": ("max_completion_tokens", 192),
    "generation_cache": ("generation_cache", "dynamic"),
    "warm_start_steps": ("warm_start_steps", 3000),
    "warm_start_stop": ("warm_start_stop", "converged"),
    "warm_start_patience": ("warm_start_patience", 0.2),
    "warm_start_watch_accuracy": ("warm_start_watch_accuracy", True),
    "warm_start_packed": ("warm_start_packed", True),
    "warm_start_batch_size": ("warm_start_batch_size", 32),
}


def task_value(cfg: CompareConfig, task: object, name: str):
    """``cfg``'s field ``name``, or the task's value when the field is None (``TASK_DEFAULTS``:
    the task's attribute, else the fallback)."""
    value = getattr(cfg, name)
    if value is not None:
        return value
    attribute, fallback = TASK_DEFAULTS[name]
    return type(fallback)(getattr(task, attribute, fallback))


def resolve_task_defaults(cfg: CompareConfig, task: object) -> CompareConfig:
    """Fill, in place, the fields left None with the task's values (``TASK_DEFAULTS``), so
    everything after it (settings, runs, the warm start's key) sees numbers; returns ``cfg``."""
    for name in TASK_DEFAULTS:
        setattr(cfg, name, task_value(cfg, task, name))
    if cfg.warm_start_schedule_steps and cfg.warm_start_stop == "converged":
        raise ValueError(
            "warm_start_schedule_steps needs --warm-start-stop steps (a warm start that stops "
            "when converged has no fixed schedule)"
        )
    if cfg.warm_start_schedule_steps and cfg.warm_start_schedule_steps < cfg.warm_start_steps:
        raise ValueError(
            "warm_start_schedule_steps must be 0 or >= warm_start_steps, got "
            f"{cfg.warm_start_schedule_steps} < {cfg.warm_start_steps} (the task's warm start)"
        )
    return cfg


def check_field_types(obj: object) -> None:
    """ValueError naming the first field of dataclass ``obj`` whose value has the wrong type
    (an int field takes an int, a float field a number, a bool field a bool, a tuple field a
    tuple or list of its item type), e.g. a hand-edited config.json."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value, hint = getattr(obj, f.name), hints[f.name]
        if typing.get_origin(hint) is tuple:
            inner = typing.get_args(hint)[0]
            ok = isinstance(value, tuple | list) and all(matches_basic(v, (inner,)) for v in value)
            shown = f"a list of {inner.__name__}"
        else:
            allowed = basic_members(hint) or (hint,)
            ok = matches_basic(value, allowed)
            shown = " or ".join("None" if t is type(None) else t.__name__ for t in allowed)
        if not ok:
            raise ValueError(f"{f.name} must be {shown}, got {value!r}")


def _field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (the string literal after each field) from the class source."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, nxt in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr):
            value = getattr(nxt, "value", None)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docs[node.target.id] = " ".join(value.value.split())  # type: ignore[union-attr]
    return docs


def add_dataclass_arguments(
    parser: argparse.ArgumentParser,
    cls: type,
    defaults: dict | None = None,
    only: tuple[str, ...] | None = None,
) -> None:
    """Add one ``--field`` flag per dataclass field (or per field in ``only``), help from its
    docstring."""
    docs = _field_docs(cls)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if only is not None and f.name not in only:
            continue
        default = (defaults or {}).get(f.name, f.default)
        hint = hints[f.name]
        optional = [a for a in typing.get_args(hint) if a is not type(None)]
        if type(None) in typing.get_args(hint) and len(optional) == 1:
            hint = optional[0]  # `int | None`: the flag takes an int; None stays the default
        flag = "--" + f.name.replace("_", "-")
        help_ = f"{docs.get(f.name, '')} (default: {default})".replace("%", "%%")
        if hint is bool:
            help_ = help_.replace(" (default:", " (true/false, yes/no, 1/0 or on/off; default:")
            parser.add_argument(flag, type=parse_bool, default=default, metavar="BOOL", help=help_)
        elif typing.get_origin(hint) is tuple:
            inner = typing.get_args(hint)[0]
            parser.add_argument(flag, type=inner, nargs="+", default=default, help=help_)
        else:
            parser.add_argument(flag, type=hint, default=default, help=help_)


def config_from_args(cls: type, ns: argparse.Namespace):
    """Build the dataclass from parsed flags (tuples from lists)."""
    values = {}
    for f in dataclasses.fields(cls):
        v = getattr(ns, f.name)
        values[f.name] = tuple(v) if isinstance(v, list) else v
    return cls(**values)
