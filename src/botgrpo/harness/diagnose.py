"""``botgrpo diagnose``: measure, before a long run, whether BoT's token credit will pay on the
user's own task and model, and say why (:mod:`botgrpo.harness.diagnosis` measures,
:mod:`botgrpo.harness.advice` places the figures among the settings measured in
docs/results and recommends).

    botgrpo diagnose --task chain                        # the task's shipped warm start
    botgrpo diagnose --task mypkg.tasks:make --model runs/my-warm-start
    botgrpo diagnose --config recipes/smollm2_chain_cpu.yaml --prompts 32
"""

from __future__ import annotations

import math
import resource
import time
import warnings
from dataclasses import dataclass
from typing import Any

from botgrpo.harness.diagnosis import (
    draw_prompts,
    failure_outcome,
    group_figures,
    length_figures,
    sample_rollouts,
    verdict_figures,
    with_intervals,
)
from botgrpo.harness.flags import flags_digest, sample_flags
from botgrpo.loading import from_pretrained


@dataclass
class DiagnoseConfig:
    """What to diagnose: a task or a ``botgrpo train`` recipe, the model, how many rollouts."""

    task: str = ""
    """Task spec: a built-in name (chain, columns, react, python; options as
    react:sections=3), jsonl:PATH, reasoning_gym:DATASET or package.module:factory
    (docs/tasks.md), scored by its own reward; or leave it empty and give config. Both: the
    recipe's model and settings on the task (the recipe must train on a task with task_reward,
    whose reward the task's replaces)."""
    config: str = ""
    """A `botgrpo train` YAML recipe: its model, data (task or dataset_name), reward_funcs,
    w_g, w_s, num_generations, temperature, max_completion_length and chat settings."""
    model: str = ""
    """The model to sample from (a folder, a hub id, tiny:DIR, warm:NAME, real:NAME); empty =
    the recipe's, else the warm start a comparison on the task would start from (shipped, or
    cached under out_dir/.cache)."""
    prompts: int = 64
    """Prompts to sample (each a group of k rollouts)."""
    k: int | None = None
    """Rollouts per prompt (the training's K); None = the recipe's num_generations, else 8."""
    temperature: float | None = None
    """Sampling temperature; None = the recipe's, else 1.0."""
    max_completion_length: int | None = None
    """Longest completion in tokens; None = the recipe's, else the task's."""
    w_g: float | None = None
    """Weight of the outcome G; None = the recipe's, else 3.0."""
    w_s: float | None = None
    """Weight of the local signal S_t; None = the recipe's, else 0.5."""
    verdict_noise: str = ""
    """Train-time verdicts made noisy as RATE[:KIND] (with a task): their false-alarm and miss
    rates and the share of their flags on wrong steps are measured against the task's exact
    verdicts."""
    step_verifier: str = ""
    """Train-time verdicts from a learned verifier, prm:PATH (with a task): measured against
    the task's exact verdicts."""
    system_prompt: str | None = None
    """A system message before every prompt (implies chat; with a task)."""
    chat: bool = False
    """Render prompts with the model's chat template (with a task)."""
    seed: int = 0
    """Seed of the problems drawn and the sampling."""
    out_dir: str = "runs"
    """Parent folder of the diagnosis folder."""
    name: str = "diagnose"
    """The diagnosis folder's name: diagnosis.json, diagnosis.md, diagnosis.png and flags.jsonl
    there."""
    json: bool = False
    """Print the figures as JSON on stdout instead of the report."""
    progress: bool = True
    """A progress bar while sampling."""
    shortcut_probe: bool = True
    """Score short pieces of each prompt's first failed rollout with the same reward (the
    shortcut probe: does a snippet outscore the model's attempts?); false skips it."""
    flag_sample: int = 100
    """Flagged steps (judged wrong) drawn at random (each equally likely) into flags.jsonl for
    a hand check of the verifier with ``botgrpo check-flags`` (docs/diagnose.md); 0 writes
    none."""

    def __post_init__(self) -> None:
        if not self.task and not self.config:
            raise ValueError("give --task SPEC or --config RECIPE.yaml: what to diagnose")
        if self.flag_sample < 0:
            raise ValueError(f"flag_sample must be >= 0 (0 writes none), got {self.flag_sample}")
        if self.prompts < 2:
            raise ValueError(f"prompts must be >= 2 (an interval needs groups), got {self.prompts}")
        if self.k is not None and self.k < 2:
            raise ValueError(
                f"k must be >= 2: GRPO and BoT compare rollouts of one prompt, got {self.k}"
            )
        if self.temperature is not None and not 0 < self.temperature < math.inf:
            raise ValueError(
                f"temperature must be a finite number > 0 (rollouts are sampled), got "
                f"{self.temperature}"
            )
        for name, positive in (("w_g", True), ("w_s", False)):
            value = getattr(self, name)
            if value is not None and not (
                math.isfinite(value) and (value > 0 if positive else value >= 0)
            ):
                raise ValueError(
                    f"{name} must be a finite number {'> 0' if positive else '>= 0'}, as "
                    f"botgrpo train asks, got {value}"
                )
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if self.verdict_noise and self.step_verifier:
            raise ValueError("give verdict_noise or step_verifier, not both")
        if (self.verdict_noise or self.step_verifier) and not self.task:
            raise ValueError(
                "verdict_noise and step_verifier change a task's verdicts: give --task"
            )
        if self.max_completion_length is not None and self.max_completion_length < 1:
            raise ValueError(
                f"max_completion_length must be >= 1 token, got {self.max_completion_length}"
            )
        if self.system_prompt is not None:
            if not self.system_prompt.strip():
                raise ValueError("system_prompt is empty; give its text or leave it out")
            self.chat = True


@dataclass
class Plan:
    """Everything :func:`diagnose` samples and scores with, resolved and checked."""

    model_path: str
    prompts: list
    columns: dict
    reward_funcs: list
    reference_funcs: list | None
    weights: list | None
    k: int
    temperature: float
    max_new: int
    w_g: float
    w_s: float
    render: Any
    label: str
    cache: str = "dynamic"


class ModelUnavailable(ValueError):
    """The model's weights cannot be loaded (a user's folder without them, a missing shard)."""


def plan(cfg: DiagnoseConfig) -> Plan:
    """Resolve the recipe or task, the model, the rewards and every default; ValueError (a
    user's mistake) before any model is loaded."""
    from transformers import AutoTokenizer

    from botgrpo.models import TINY_PREFIX, WARM_PREFIX, resolve_model_path

    recipe = _recipe(cfg.config) if cfg.config else None
    if recipe is not None and cfg.task:
        _check_task_replaces(recipe["args"], cfg.task)
    task_spec = cfg.task or (recipe["task"] if recipe else "")
    model = cfg.model or (recipe["model"] if recipe else _default_model(task_spec, cfg.out_dir))
    model_path = resolve_model_path(model)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    except (OSError, ValueError, TypeError) as err:
        reason = " ".join(str(err).split())[:200]
        raise ValueError(
            f"the tokenizer of {model!r} cannot be loaded ({reason}); save the tokenizer into "
            "the model's folder (tokenizer.save_pretrained) or pass another --model"
        ) from None
    k = cfg.k or (recipe["k"] if recipe else 8)
    if k < 2:
        raise ValueError(f"the recipe's num_generations is {k}: GRPO and BoT need K >= 2")
    w_g = cfg.w_g if cfg.w_g is not None else (recipe["w_g"] if recipe else 3.0)
    w_s = cfg.w_s if cfg.w_s is not None else (recipe["w_s"] if recipe else 0.5)
    temperature = cfg.temperature or (recipe["temperature"] if recipe else 1.0)
    system = (
        cfg.system_prompt
        if cfg.system_prompt is not None
        else (recipe["system_prompt"] if recipe else None)
    )
    chat = cfg.chat or system is not None or bool(recipe and recipe["chat"])
    render = _renderer(tokenizer, chat, system)
    if recipe is not None and not cfg.task:
        prompts, columns = _recipe_rows(recipe, cfg)
        funcs, weights = recipe["reward_funcs"](tokenizer), recipe["weights"]
        reference = None
        max_new = cfg.max_completion_length or recipe["max_new"]
        cache = recipe["cache"]
    else:
        from botgrpo.tasks import load_task
        from botgrpo.tasks.learned import with_step_verifier
        from botgrpo.tasks.noise import clean_task, with_verdict_noise
        from botgrpo.tasks.reward import task_reward

        task = load_task(task_spec)
        if model.startswith((TINY_PREFIX, WARM_PREFIX)):  # as botgrpo train checks
            from botgrpo.tasks.vocabulary import check_tiny_vocabulary

            check_tiny_vocabulary(task, other_model="diagnose --model")
        judged = with_step_verifier(with_verdict_noise(task, cfg.verdict_noise), cfg.step_verifier)
        clean = clean_task(judged)
        examples = draw_prompts(clean, cfg.prompts, cfg.seed)
        prompts = [ex.prompt for ex in examples]
        rows = [ex.to_row() for ex in examples]
        columns = {c: [r[c] for r in rows] for c in ("answer", "meta")}
        funcs, weights = [task_reward(judged, tokenizer)], None
        reference = [task_reward(clean, tokenizer)] if judged is not clean else None
        default_new = getattr(clean, "max_completion_tokens", 192)
        max_new = cfg.max_completion_length or default_new
        cache = getattr(clean, "generation_cache", "dynamic")
    if len(prompts) < 2:
        raise ValueError(
            f"only {len(prompts)} problem(s) to diagnose: an interval needs at least 2 prompts; "
            "give a task or dataset with more problems"
        )
    if len(prompts) < cfg.prompts:
        warnings.warn(
            f"the task has {len(prompts)} problems to diagnose, fewer than --prompts "
            f"{cfg.prompts}: the figures rest on those",
            UserWarning,
            stacklevel=2,
        )
    if chat:
        from botgrpo.tasks.data import chat_prompt

        prompts = [chat_prompt(p, system) for p in prompts]
    return Plan(
        model_path,
        prompts,
        columns,
        funcs,
        reference,
        weights,
        k,
        float(temperature),
        int(max_new),
        float(w_g),
        float(w_s),
        render,
        task_spec or cfg.config,
        cache,
    )


def _default_model(task_spec: str, out_dir: str) -> str:
    """The warm start a comparison on ``task_spec`` would start from: shipped with the package,
    or cached under ``out_dir/.cache`` by an earlier `botgrpo compare` or `warm-start`;
    ValueError naming how to make one otherwise."""
    from botgrpo.harness.compare import planned_checkpoint, warm_start_config
    from botgrpo.harness.config import CompareConfig, resolve_task_defaults
    from botgrpo.harness.evaluate import held_out_prompts
    from botgrpo.harness.warmstart import is_complete, packaged_warm_start
    from botgrpo.tasks import load_task

    task = load_task(task_spec)
    cfg = CompareConfig(task=task_spec, out_dir=out_dir)
    for key, value in getattr(task, "compare_defaults", {}).items():
        setattr(cfg, key, value)
    resolve_task_defaults(cfg, task)
    held = held_out_prompts(task, cfg.eval_problems)
    shipped = packaged_warm_start(warm_start_config(cfg, task).cache_key(task, held))
    if shipped is not None:
        return str(shipped)
    cached = planned_checkpoint(cfg, task)
    if is_complete(cached):
        return str(cached)
    raise ValueError(
        f"no warm start of task {task_spec!r} ships or is cached in {out_dir}/.cache: give "
        f"--model (a folder, real:NAME), or make one with `botgrpo warm-start --task "
        f"{task_spec} --out-dir {out_dir}`"
    )


def _renderer(tokenizer, chat: bool, system: str | None):
    """The text the model continues for a prompt: the chat template's rendering of a
    conversation (as TRL renders a conversational prompt), a plain prompt as it is."""
    from botgrpo.tasks.data import chat_text

    if chat and not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "chat prompts need a model whose tokenizer has a chat template; this one has none "
            "(drop --chat / system_prompt, or pick a chat model)"
        )
    if not chat:
        return lambda p: p if isinstance(p, str) else chat_text(tokenizer, p)
    return lambda p: chat_text(tokenizer, p, system)


def _recipe(path: str) -> dict:
    """The parts of a `botgrpo train` recipe a diagnosis uses, read by the train command's
    own parser and checks."""
    from botgrpo.scoring.loading import load_reward_funcs
    from botgrpo.trl.script import _task_of, check_train_inputs, parse_train_args

    args, config, model_args = parse_train_args(["--config", path])
    check_train_inputs(args, model_args.model_name_or_path)
    if args.task == "arithmetic":
        raise ValueError("task 'arithmetic' is a plumbing check with no problems to diagnose")

    def funcs(tokenizer):
        return load_reward_funcs(
            args.reward_funcs, tokenizer, args.reward_func_kwargs, _task_of(args)
        )

    return {
        "args": args,
        "task": args.task or "",
        "model": model_args.model_name_or_path,
        "k": config.num_generations,
        "temperature": config.temperature,
        "w_g": config.w_g,
        "w_s": config.w_s,
        "max_new": config.max_completion_length,
        "weights": config.reward_weights,
        "system_prompt": args.system_prompt,
        "chat": args.conversational,
        "cache": config.cache_implementation or "dynamic",
        "reward_funcs": funcs,
    }


def _check_task_replaces(args, task: str) -> None:
    """--task with --config samples the task's prompts and scores them with the task's own
    reward, keeping the recipe's model and settings; refuse it where the recipe trains on
    something else, which the diagnosis would then silently not measure."""
    from botgrpo.scoring.loading import TASK_REWARD

    if not args.task:
        raise ValueError(
            f"--task {task!r} would replace the recipe's dataset_name {args.dataset_name!r} and "
            f"its reward_funcs: drop --task to diagnose the recipe as it trains"
        )
    if list(args.reward_funcs) != [TASK_REWARD]:
        raise ValueError(
            f"--task {task!r} would score with the task's own reward, not the recipe's "
            f"reward_funcs {list(args.reward_funcs)}: drop --task to diagnose the recipe as it "
            "trains"
        )


def _recipe_rows(recipe: dict, cfg: DiagnoseConfig):
    from botgrpo.trl.script import load_datasets

    args = recipe["args"]
    args.conversational, args.system_prompt = False, None  # chat is applied by plan()
    train, _ = load_datasets(args, cfg.seed)
    train = train.shuffle(seed=cfg.seed).select(range(min(cfg.prompts, len(train))))
    rows = list(train)
    prompts = [r["prompt"] for r in rows]
    columns = {c: [r[c] for r in rows] for c in train.column_names if c != "prompt"}
    return prompts, columns


def diagnose(cfg: DiagnoseConfig, planned: Plan | None = None) -> dict:
    """Sample, score and measure (see :mod:`botgrpo.harness.diagnosis`); returns the figures."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the command's own bar says what is happening
    p = planned or plan(cfg)
    tokenizer = AutoTokenizer.from_pretrained(p.model_path, padding_side="left")
    try:
        model = from_pretrained(AutoModelForCausalLM, p.model_path)
    except Exception as err:  # no weights, a missing shard, a file cut short
        reason = " ".join(str(err).split())[:200]
        raise ModelUnavailable(
            f"the model {p.model_path!r} cannot be loaded ({type(err).__name__}: {reason}); "
            "pass a folder saved with save_pretrained, weights included"
        ) from err
    bar = _bar(cfg, len(p.prompts))
    try:
        rollouts = sample_rollouts(
            model,
            tokenizer,
            p.prompts,
            p.columns,
            k=p.k,
            temperature=p.temperature,
            max_new_tokens=p.max_new,
            render=p.render,
            seed=cfg.seed,
            progress=bar.update if bar is not None else None,
            cache_implementation=p.cache,
        )
    finally:
        if bar is not None:
            bar.close()
    scored = _score(rollouts, p.reward_funcs, p)
    reference = _score(rollouts, p.reference_funcs, p).verdicts if p.reference_funcs else None
    flags, n_flags, flag_kind = sample_flags(
        rollouts, scored, tokenizer, cfg.flag_sample, cfg.seed, reference
    )
    sums = group_figures(scored, rollouts.group_B)
    shortcut = _shortcut(rollouts, scored, tokenizer, p) if cfg.shortcut_probe else {}
    if "sums" in shortcut:
        sums.update(shortcut.pop("sums"))
    probe_seconds = shortcut.pop("seconds", None)
    figures = with_intervals(sums, cfg.seed)
    n = len(rollouts.texts)
    result = {
        "label": p.label,
        "model": p.model_path,
        "prompts": len(p.prompts),
        "k": p.k,
        "temperature": p.temperature,
        "w_g": p.w_g,
        "w_s": p.w_s,
        "max_completion_length": p.max_new,
        "figures": figures,
        "failure_outcome": failure_outcome(scored),
        "lengths": length_figures(rollouts),
        "verdicts": verdict_figures(scored, reference),
        "shortcut": shortcut,
        "costs": {
            "seconds_per_rollout": rollouts.seconds / max(1, n),
            "seconds_per_scoring_call": list(scored.seconds),
            **({"seconds_shortcut_probe": probe_seconds} if probe_seconds is not None else {}),
            "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            **_state_memory(model),
        },
        "examples": rollouts.texts[:3],
        "exact_verdicts": _exact_verdicts(cfg),
        "flag_sample": {
            "sampled": len(flags),
            "of": n_flags,
            "kind": flag_kind,
            "digest": flags_digest(flags),
        },
        "flags": flags,
    }
    return result


def _exact_verdicts(cfg: DiagnoseConfig) -> bool:
    """Whether the verdicts are a built-in task's own (exact by construction): no noise put in,
    no learned verifier, no recipe's or user's reward functions."""
    from botgrpo.tasks import BUILTIN_TASKS

    task = cfg.task or (_recipe(cfg.config)["task"] if cfg.config else "")
    if cfg.config and not _recipe_scores_its_task(cfg.config):
        return False  # the recipe's own reward functions judge the steps
    kind = (task or "").split(":", 1)[0].strip()
    return kind in BUILTIN_TASKS and not (cfg.verdict_noise or cfg.step_verifier)


def _recipe_scores_its_task(path: str) -> bool:
    """Whether a recipe's only reward function is its task's own (``task_reward``)."""
    return list(_recipe(path)["args"].reward_funcs or []) == ["task_reward"]


def _bar(cfg: DiagnoseConfig, total: int):
    if not cfg.progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="diagnose: sampling prompts", unit="prompt")


def _score(rollouts, funcs, p: Plan, solved_from: float | None = None):
    from botgrpo.harness.diagnosis import score_rollouts as score

    try:
        return score(
            rollouts, funcs, w_g=p.w_g, w_s=p.w_s, weights=p.weights, solved_from=solved_from
        )
    except (ValueError, TypeError, RuntimeError) as err:
        raise RewardFailed(" ".join(str(err).split())) from err


def _shortcut(rollouts, scored, tokenizer, p: Plan) -> dict:
    """The shortcut probe (:func:`botgrpo.harness.shortcut.probe_rollouts`): its per-group
    sums under ``sums``, what :func:`~botgrpo.harness.shortcut.shortcut_figures` reports and
    the probe's scoring time; a reward (or anything else) that fails on the short answers
    leaves the figure out, with the error named, and the rest of the diagnosis stands."""
    from botgrpo.harness.shortcut import probe_rollouts, shortcut_figures, shortcut_sums

    end = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []

    def encode(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False).input_ids + end

    try:
        probes = probe_rollouts(rollouts, encode, scored.solved_B)
        start = time.perf_counter()
        best = float(scored.outcome_B.max()) if len(rollouts.texts) else 0.0
        probed = _score(probes, p.reward_funcs, p, solved_from=best)
        return {
            "sums": shortcut_sums(scored, probed, rollouts.k),
            **shortcut_figures(scored, probed, rollouts.k, probes.texts),
            "seconds": time.perf_counter() - start,
        }
    except Exception as err:  # a diagnostic of its own: the figures above stand without it
        reason = " ".join(str(err).split())
        return {"error": f"the short answers could not be scored: {type(err).__name__}: {reason}"}


class RewardFailed(RuntimeError):
    """A reward function raised or answered wrongly on the sampled rollouts."""


def _state_memory(model) -> dict[str, float]:
    """BoT's and PPO-with-a-critic's training state at this model's shape (bf16 weights,
    AdamW), from :mod:`botgrpo.trl.memory`; empty when the shape is not a Llama/Qwen2 one."""
    from botgrpo.trl.memory import DecoderShape, training_state_bytes

    c = model.config
    try:
        shape = DecoderShape(
            vocab=c.vocab_size,
            hidden=c.hidden_size,
            intermediate=c.intermediate_size,
            layers=c.num_hidden_layers,
            heads=c.num_attention_heads,
            kv_heads=getattr(c, "num_key_value_heads", c.num_attention_heads),
            tied=bool(getattr(c, "tie_word_embeddings", False)),
            qkv_bias=bool(getattr(c, "attention_bias", False)),
        )
    except (AttributeError, TypeError, ValueError):
        return {}
    bot, ppo = training_state_bytes(shape, critic=False), training_state_bytes(shape, critic=True)
    return {"bot_state_gib": bot.total / 2**30, "ppo_state_gib": ppo.total / 2**30}
