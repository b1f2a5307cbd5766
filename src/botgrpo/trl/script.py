"""``botgrpo train``: one training run from a YAML recipe and/or flags (TRL's conventions).

The parser is TRL's ``TrlParser`` over three dataclasses, so every field of
:class:`TrainScriptArguments`, :class:`~botgrpo.trl.BoTGRPOConfig` (all of ``GRPOConfig``) and
``trl.ModelConfig`` is settable from the YAML file (``--config recipe.yaml``) and from flags
(``--w_s 0.5``); flags win over the file.
"""

from __future__ import annotations

import functools
import gc
import inspect
import json
import re
import string
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl import ModelConfig, ScriptArguments, TrlParser, get_peft_config

from botgrpo.folders import (
    check_empty_unless_ours,
    check_folder_kind,
    check_not_busy,
    command_line,
    own_folder,
)
from botgrpo.imports import import_hint
from botgrpo.models import (
    REAL_PREFIX,
    TINY_PREFIX,
    WARM_PREFIX,
    check_tiny_folder,
    real_model_path,
    resolve_model_path,
    warm_model_path,
)
from botgrpo.rewards.judges.options import JUDGE_ARGUMENTS, judge_config
from botgrpo.rewards.prm import check_prm_options
from botgrpo.scoring.entries import RewardOutputError
from botgrpo.scoring.loading import (
    BUILTIN_REWARDS,
    TASK_REWARD,
    check_reward_callable,
    load_reward_funcs,
    resolve_entry,
)
from botgrpo.trl.config import BoTGRPOConfig
from botgrpo.trl.reward_adapter import RewardFunctionError
from botgrpo.trl.teardown import end_training
from botgrpo.usage import (
    UsageError,
    check_basic_field_types,
    check_task_spec,
    check_writable_folder,
    check_yaml_mapping,
    one_line_parser_errors,
)


@dataclass
class TrainScriptArguments(ScriptArguments):
    """What to train on: the data and the reward functions (besides TRL's ScriptArguments)."""

    task: str | None = field(
        default=None,
        metadata={
            "help": "A procedural task instead of dataset_name: 'arithmetic' (prompts 'a+b=', "
            "answer column; for CPU smoke runs with the tiny model) or any botgrpo task spec "
            "(chain, columns, react, python, jsonl:PATH, reasoning_gym:DATASET, "
            "package.module:factory; see docs/tasks.md), whose reward (the step reward; the "
            "code tasks' line recipe) is the reward function 'task_reward'. Not with "
            "dataset_name; 'none' clears a recipe's task."
        },
    )
    task_size: int = field(default=512, metadata={"help": "Number of prompts of the task."})
    verdict_noise: str | None = field(
        default=None,
        metadata={
            "help": "Noisy verdicts for the task's reward 'task_reward', as RATE[:KIND] "
            "(e.g. 0.2 = 20% of step verdicts flipped; kinds flip, false_alarm, miss, random; "
            "a code task's line penalties take random, moved to a random line, or miss, "
            "dropped; see botgrpo.tasks.NoisyVerdicts, NoisyLines). None: the task's own "
            "verdicts."
        },
    )
    prompt_column: str = field(
        default="prompt", metadata={"help": "Dataset column holding the problem text."}
    )
    answer_column: str | None = field(
        default=None,
        metadata={
            "help": "Dataset column holding the reference answer, renamed to 'answer'; 'none' "
            "clears a recipe's."
        },
    )
    prompt_template: str | None = field(
        default=None,
        metadata={
            "help": "Python format string building each prompt from the row's columns, e.g. "
            "'Solve step by step in <step i> tags, answer in <final> tags.\\n{Question}'. None: "
            "the prompt column as is ('none' clears a recipe's)."
        },
    )
    eval_fraction: float | None = field(
        default=None,
        metadata={
            "help": "Hold out this fraction of the training split for evaluation (seeded by "
            "`seed`), e.g. 0.2 for the paper's 80/20 AIME split."
        },
    )
    eval_split: str | None = field(
        default=None,
        metadata={
            "help": "A split of dataset_name held out for evaluation (e.g. 'test'), as the "
            "React recipe's 20 held-out prompts; an alternative to eval_fraction."
        },
    )
    conversational: bool = field(
        default=False,
        metadata={
            "help": "Send each prompt as a chat conversation (TRL's conversational format: the "
            "model's chat template renders it, and adds the assistant's turn). For chat models "
            "such as real:smollm2-135m-instruct; implied by system_prompt."
        },
    )
    system_prompt: str | None = field(
        default=None,
        metadata={
            "help": "A system message put before every prompt (implies conversational), e.g. "
            "the output format and one worked example. The task's reward still reads the "
            "problem from the user turn."
        },
    )
    top_layers: int | None = field(
        default=None,
        metadata={
            "help": "Train only the top N decoder layers and the final norm, the rest frozen "
            "(with use_peft: LoRA on those layers only). Backward stops at the lowest trained "
            "layer, so a step costs far less on a CPU. None: every layer."
        },
    )
    reward_funcs: list[str] = field(
        default_factory=lambda: ["arithmetic_token_reward"],
        metadata={
            "help": "Reward functions: built-in names ("
            + ", ".join([*BUILTIN_REWARDS, TASK_REWARD])
            + "; task_reward: the task's own, with task set) or import paths 'pkg.module:function'. A trailing '()' marks a factory, called "
            "with tokenizer=<the policy's tokenizer> when it takes one, plus the keyword "
            "arguments in reward_func_kwargs[entry]."
        },
    )
    reward_func_kwargs: dict[str, Any] | str | None = field(
        default=None,
        metadata={"help": "Keyword arguments of factory entries, keyed by the entry (JSON/YAML)."},
    )

    def __post_init__(self) -> None:
        check_basic_field_types(self)  # e.g. a YAML list or 1.5 where an int belongs
        if isinstance(self.reward_funcs, str):  # YAML `reward_funcs: name`: one entry
            self.reward_funcs = [self.reward_funcs]
        if not isinstance(self.reward_funcs, list) or not all(
            isinstance(entry, str) for entry in self.reward_funcs
        ):
            raise ValueError(f"reward_funcs must be a list of names, got {self.reward_funcs!r}")
        if not self.reward_funcs:
            raise ValueError("reward_funcs is empty; name at least one reward function")
        for name in ("task", "dataset_name", "answer_column", "prompt_template"):
            value = getattr(self, name)
            if isinstance(value, str) and value.lower() == "none":
                setattr(self, name, None)  # `--task none` clears a recipe's task, and so on
        if self.task is not None and self.dataset_name:
            raise ValueError(
                f"task {self.task!r} and dataset_name {self.dataset_name!r} are both set; train on "
                "one (pass --task none to use dataset_name with a recipe that names a task, or "
                "--dataset_name none to train on the task)"
            )
        if len(set(self.reward_funcs)) < len(self.reward_funcs):
            raise ValueError(
                f"reward_funcs lists an entry twice ({self.reward_funcs}); to weigh one more, "
                "use reward_weights"
            )
        dataset_only = {
            "prompt_column": self.prompt_column != "prompt",
            "answer_column": self.answer_column is not None,
            "prompt_template": self.prompt_template is not None,
        }
        if self.task is not None and any(dataset_only.values()):
            given = [k for k, v in dataset_only.items() if v]
            raise ValueError(
                f"{', '.join(given)} shape a dataset_name's rows; task {self.task!r} builds its "
                "own prompts: drop them or train on dataset_name"
            )
        if self.task_size < 1:
            raise ValueError(f"task_size must be >= 1 prompt, got {self.task_size}")
        if self.top_layers is not None and self.top_layers < 1:
            raise ValueError(f"top_layers must be >= 1 layer (or None: all), got {self.top_layers}")
        if self.system_prompt is not None:
            if not self.system_prompt.strip():
                raise ValueError("system_prompt is empty; give its text or leave it out")
            self.conversational = True
        if self.task == "arithmetic" and self.conversational:
            raise ValueError(
                "task 'arithmetic' scores the completion's leading integer of a raw 'a+b=' "
                "prompt; with a chat model use a botgrpo task (e.g. chain) or dataset_name"
            )
        if self.verdict_noise == "":
            self.verdict_noise = None  # as in compare: the task's own verdicts
        if self.verdict_noise is not None:
            from botgrpo.tasks.noise import VerdictNoise

            if TASK_REWARD not in self.reward_funcs:
                raise ValueError(
                    f"verdict_noise changes the step or line verdicts of the task's reward: add "
                    f"{TASK_REWARD!r} to reward_funcs (with a task such as chain), or drop it"
                )
            self.verdict_noise = VerdictNoise.parse(self.verdict_noise).spec()
        if self.eval_fraction is not None and not 0 < self.eval_fraction < 1:
            raise ValueError(
                f"eval_fraction must lie strictly between 0 and 1 (e.g. 0.2), got "
                f"{self.eval_fraction}"
            )
        if self.eval_split is not None and (self.eval_fraction or not self.dataset_name):
            raise ValueError(
                "eval_split names a split of dataset_name: set dataset_name, and drop "
                "eval_fraction (use one of them)"
            )


def _escape_percent(m: re.Match) -> str:
    """``%`` as argparse must read it in help: ``%%`` and ``%(default)s`` kept, a lone ``%``
    doubled."""
    return m.group(0) if m.group(0) != "%" else "%%"


def make_train_parser(prog: str = "botgrpo train") -> TrlParser:
    """The ``botgrpo train`` parser: TrainScriptArguments, BoTGRPOConfig and TRL's ModelConfig;
    a malformed flag is one line (:class:`~botgrpo.usage.UsageError`), not the whole usage."""
    parser = TrlParser((TrainScriptArguments, BoTGRPOConfig, ModelConfig), prog=prog)
    for action in parser._actions:  # a field's help is prose: "20%" is not a format directive
        if isinstance(action.help, str):
            action.help = re.sub(r"%%|%\(\w+\)s|%", _escape_percent, action.help)
    return one_line_parser_errors(parser)


#: What ``botgrpo train`` with nothing to train on says.
NOTHING_TO_TRAIN = (
    "nothing to train: pass a recipe, e.g. `botgrpo train --config recipes/chain_tiny_cpu.yaml`, "
    "or flags (--model_name_or_path and --task or --dataset_name); `botgrpo train --help` lists "
    "every option"
)


def load_datasets(args: TrainScriptArguments, seed: int):
    """(train, eval or None) datasets with a 'prompt' column (and 'answer' if mapped); chat
    conversations with ``conversational`` / ``system_prompt``."""
    train, held_out = _load_datasets(args, seed)
    if not args.conversational:
        return train, held_out
    from botgrpo.tasks.data import chat_prompt

    as_chat = functools.partial(chat_prompt, system_prompt=args.system_prompt)
    convert = lambda ds: ds.map(lambda row: {"prompt": as_chat(row["prompt"])})  # noqa: E731
    return convert(train), (convert(held_out) if held_out is not None else None)


def _load_datasets(args: TrainScriptArguments, seed: int):
    if args.task == "arithmetic":
        from botgrpo.tasks.arithmetic import make_arithmetic_dataset

        train = make_arithmetic_dataset(args.task_size, seed=seed)
    elif args.task is not None:
        from botgrpo.tasks import load_task
        from botgrpo.tasks.data import sample_examples, task_dataset

        task = load_task(args.task)
        train = task_dataset(sample_examples(task, args.task_size, f"train-{seed}"))
    elif args.dataset_name:
        from datasets import load_dataset

        train = load_dataset(args.dataset_name, args.dataset_config, split=args.dataset_train_split)
        train = _to_prompts(train, args)
    else:
        raise ValueError("set task (e.g. arithmetic) or dataset_name")
    if args.eval_split:
        if args.eval_fraction or not args.dataset_name:
            raise ValueError("eval_split needs dataset_name and excludes eval_fraction; set one")
        from datasets import load_dataset

        held_out = load_dataset(args.dataset_name, args.dataset_config, split=args.eval_split)
        return train, _to_prompts(held_out, args)
    if args.eval_fraction:
        split = train.train_test_split(test_size=args.eval_fraction, seed=seed)
        return split["train"], split["test"]
    return train, None


def _datasets_or_usage_error(args: TrainScriptArguments, seed: int):
    """:func:`load_datasets`, before any model is built; a dataset that cannot be loaded (not
    on the hub, offline, no such split or config) or a prompt_template naming a column the
    dataset lacks is a :class:`~botgrpo.usage.UsageError`."""
    from datasets.utils.logging import (
        disable_progress_bar,
        enable_progress_bar,
        is_progress_bar_enabled,
    )

    shown = is_progress_bar_enabled()
    disable_progress_bar()  # a local file's "Generating train split" bar: noise, before an error
    try:
        return load_datasets(args, seed)
    except DatasetColumnsError as err:
        raise UsageError(str(err)) from err
    except KeyError as err:
        raise UsageError(
            f"prompt_template names the column {err.args[0]!r}, which the dataset lacks; use "
            "its columns in braces, e.g. {question}"
        ) from err
    except (ConnectionError, FileNotFoundError, ValueError) as err:
        reason = " ".join(str(err).split())
        if args.task is not None:
            raise UsageError(f"task {args.task!r}: {reason}") from err
        raise UsageError(
            f"dataset {args.dataset_name!r} cannot be loaded ({reason}); check dataset_name, "
            "dataset_config and the splits, or set HF_HUB_OFFLINE=0 to download it"
        ) from err
    finally:
        if shown:
            enable_progress_bar()


def _check_run_options(config: BoTGRPOConfig, model_args) -> None:
    """Settings that TRL, PEFT or transformers would refuse only after the model is loaded:
    LoRA's rank, and the checkpoint to resume from."""
    if model_args.use_peft and not (isinstance(model_args.lora_r, int) and model_args.lora_r >= 1):
        raise UsageError(
            f"lora_r must be a whole number >= 1 with use_peft, got {model_args.lora_r}"
        )
    resume = config.resume_from_checkpoint
    if resume is None or str(resume).lower() in ("false", ""):
        return
    if str(resume).lower() == "true":
        folder = Path(config.output_dir)
        if not any(folder.glob("checkpoint-*/trainer_state.json")):
            raise UsageError(
                f"resume_from_checkpoint true: {folder} holds no checkpoint-* folder to resume "
                "from; train without it, or pass a checkpoint folder"
            )
        config.resume_from_checkpoint = True  # type: ignore[assignment]  # transformers' "latest"
        return
    if not (Path(resume) / "trainer_state.json").is_file():
        raise UsageError(
            f"resume_from_checkpoint {resume!r} is not a checkpoint folder (no "
            "trainer_state.json); pass an output_dir's checkpoint-N folder, or true for the "
            "latest one in output_dir"
        )


#: report_to names and the package each needs (transformers' integrations; any of several).
_REPORTERS = {
    "wandb": "wandb",
    "tensorboard": "tensorboard tensorboardX",
    "comet_ml": "comet_ml",
    "mlflow": "mlflow",
    "clearml": "clearml",
    "neptune": "neptune",
    "dvclive": "dvclive",
    "codecarbon": "codecarbon",
    "swanlab": "swanlab",
    "trackio": "trackio",
    "azure_ml": "azureml",
    "flyte": "flytekit",
    "dagshub": "dagshub",
}


def _check_reporters(config: BoTGRPOConfig) -> None:
    """Each report_to integration's package must be importable (transformers would raise once
    the trainer is built)."""
    import importlib.util

    names = config.report_to if isinstance(config.report_to, list) else [config.report_to]
    missing = [
        name
        for name in names
        if name in _REPORTERS
        and all(importlib.util.find_spec(p) is None for p in _REPORTERS[name].split())
    ]
    if missing:
        packages = " ".join(_REPORTERS[name].split()[0] for name in missing)
        raise UsageError(
            f"report_to {', '.join(missing)} needs {packages}, which is not installed: pip "
            f"install {packages}, or set report_to none"
        )


def _check_enough_prompts(config: BoTGRPOConfig, n_train: int) -> None:
    """A training set smaller than one generation batch gives TRL's sampler nothing to draw:
    it would stop at step 0 and save the starting model as the result."""
    per_batch = config.generation_batch_size // config.num_generations  # all processes
    if n_train < per_batch:
        raise UsageError(
            f"the training set has {n_train} prompts, fewer than the {per_batch} that one "
            f"generation batch draws (generation_batch_size {config.generation_batch_size} / "
            f"num_generations {config.num_generations}); raise task_size, use a larger dataset "
            "or a smaller eval_fraction, or lower per_device_train_batch_size"
        )


def _task_of(args: TrainScriptArguments):
    """The botgrpo task object of ``args.task`` (None for 'arithmetic' or a hub dataset)."""
    if args.task is None or args.task == "arithmetic":
        return None
    from botgrpo.tasks import load_task
    from botgrpo.tasks.noise import with_verdict_noise

    return with_verdict_noise(load_task(args.task), args.verdict_noise)


class DatasetColumnsError(ValueError):
    """The dataset loaded, but the options that read its columns do not fit it."""


def _check_template(template: str, columns: list[str]) -> None:
    """DatasetColumnsError unless ``template`` is a format string whose every field is one of
    ``columns`` by name (``{question}``; no ``{}``, ``{0}``, ``{q.real}``, ``{q[0]}``)."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as err:
        raise DatasetColumnsError(
            f"prompt_template {template!r} is not a format string ({err}); write columns in "
            "braces, e.g. 'Q: {question}', and double a literal brace ({{ }})"
        ) from None
    for name in fields:
        if not name.isidentifier():
            raise DatasetColumnsError(
                f"prompt_template {template!r} has the field {{{name}}}; name a column in "
                f"braces, e.g. {{{columns[0] if columns else 'question'}}} (its columns: "
                f"{columns})"
            )
        if name not in columns:
            raise DatasetColumnsError(
                f"prompt_template names the column {name!r}, which the dataset lacks; use its "
                f"columns in braces, e.g. {{{columns[0] if columns else 'question'}}} (its "
                f"columns: {columns})"
            )


def _to_prompts(dataset, args: TrainScriptArguments):
    columns = list(dataset.column_names)
    needed = [("answer_column", args.answer_column)]
    if args.prompt_template is None:
        needed.append(("prompt_column", args.prompt_column))
    else:
        _check_template(args.prompt_template, columns)
    for option, column in needed:
        if column is not None and column not in columns:
            raise DatasetColumnsError(
                f"{option} {column!r} is not a column of the dataset; its columns: {columns}"
            )
    if args.prompt_template is not None:
        dataset = dataset.map(lambda row: {"prompt": args.prompt_template.format(**row)})
    elif args.prompt_column != "prompt":
        dataset = dataset.rename_column(args.prompt_column, "prompt")
    if args.answer_column and args.answer_column != "answer":
        dataset = dataset.map(lambda row: {"answer": str(row[args.answer_column])})
    return dataset


def parse_train_args(
    argv: Sequence[str] | None,
) -> tuple[TrainScriptArguments, BoTGRPOConfig, Any]:
    """TRL's parse of ``argv`` (None: the command line); a missing or malformed ``--config``
    file or an invalid setting raises :class:`~botgrpo.usage.UsageError`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        raise UsageError(NOTHING_TO_TRAIN)
    # TRL's parser reads only "--config PATH"; argparse users also write "--config=PATH"
    argv = [p for a in argv for p in (a.split("=", 1) if a.startswith("--config=") else [a])]
    for i, arg in enumerate(argv):
        path = argv[i + 1] if arg == "--config" and i + 1 < len(argv) else None
        path = arg.split("=", 1)[1] if arg.startswith("--config=") else path
        if path is not None:
            check_yaml_mapping(path, "--config")
    with warnings.catch_warnings(record=True) as caught:  # shown only when the parse succeeds
        warnings.simplefilter("default")
        parser = make_train_parser()
        try:
            script_args, config, model_args = parser.parse_args_and_config(argv)
            check_basic_field_types(model_args)
        except (ValueError, TypeError) as err:
            raise UsageError(_unknown_keys(str(err), parser) or " ".join(str(err).split())) from err
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return script_args, config, model_args


def _unknown_keys(message: str, parser) -> str | None:
    """TRL's refusal of a recipe's unknown keys in this command's words, each with the nearest
    option's name; None for any other error."""
    import difflib
    import re

    if not message.startswith("Unknown arguments from config file:"):
        return None
    keys = re.findall(r"'--([^']+)'", message)
    known = sorted({a.dest for a in parser._actions if a.dest != "help"})
    named = []
    for key in keys:
        near = difflib.get_close_matches(key, known, n=1)
        named.append(f"{key} (did you mean {near[0]}?)" if near else key)
    return (
        f"the recipe sets {', '.join(named)}, which no option of botgrpo train takes: fix or "
        "remove it (botgrpo train --help lists the options)"
    )


def check_train_inputs(
    args: TrainScriptArguments, model_name_or_path: str | None, config: BoTGRPOConfig | None = None
) -> None:
    """Check the task, the reward functions and their options, the output folder and the
    evaluation set before any model is built or loaded; raises
    :class:`~botgrpo.usage.UsageError` naming the problem and the fix."""
    if not model_name_or_path:
        if args.task is None and not args.dataset_name:
            raise UsageError(NOTHING_TO_TRAIN)
        raise UsageError(
            "set model_name_or_path (a hub id, a local directory, tiny:DIR, warm:NAME or real:NAME)"
        )
    if config is not None:
        try:
            check_writable_folder(config.output_dir, "output_dir")
            check_folder_kind(config.output_dir, "training", what="output_dir")
            check_empty_unless_ours(config.output_dir, "output_dir")
            check_not_busy(config.output_dir, "output_dir")
        except ValueError as err:
            raise UsageError(str(err)) from err
        weights = config.reward_weights
        if weights is not None and len(weights) != len(args.reward_funcs):
            raise UsageError(
                f"reward_weights has {len(weights)} weights for {len(args.reward_funcs)} reward "
                f"functions {args.reward_funcs}; give one weight per function"
            )
        no_eval_set = args.eval_fraction is None and args.eval_split is None
        if str(config.eval_strategy) not in ("no", "IntervalStrategy.NO") and no_eval_set:
            raise UsageError(
                f"eval_strategy {getattr(config.eval_strategy, 'value', config.eval_strategy)} needs an evaluation set: set "
                "eval_fraction (e.g. 0.2) or eval_split, or eval_strategy no"
            )
    if model_name_or_path.startswith(TINY_PREFIX):
        try:
            check_tiny_folder(model_name_or_path)
        except ValueError as err:
            raise UsageError(str(err)) from err
    if model_name_or_path.startswith(WARM_PREFIX):
        try:
            warm_model_path(model_name_or_path)
        except ValueError as err:
            raise UsageError(str(err)) from err
    if model_name_or_path.startswith(REAL_PREFIX):
        try:
            real_model_path(model_name_or_path)
        except ValueError as err:
            raise UsageError(f"model_name_or_path {model_name_or_path!r}: {err}") from err
    local = model_name_or_path.startswith(("/", "./", "../", "~"))
    if local and not Path(model_name_or_path).expanduser().is_dir():
        raise UsageError(
            f"model_name_or_path {model_name_or_path!r} is not a folder; pass a model saved "
            "with save_pretrained, a hub name or tiny:DIR"
        )
    if args.task is None and not args.dataset_name:
        raise UsageError("set task (e.g. arithmetic or chain) or dataset_name")
    if args.task not in (None, "arithmetic"):
        task = check_task_spec(args.task)
        if model_name_or_path.startswith((TINY_PREFIX, WARM_PREFIX)):
            from botgrpo.tasks.vocabulary import check_tiny_vocabulary

            try:
                check_tiny_vocabulary(task)
            except ValueError as err:
                raise UsageError(str(err)) from err
        if args.verdict_noise is not None:
            from botgrpo.tasks.noise import with_verdict_noise

            try:
                with_verdict_noise(task, args.verdict_noise)
            except ValueError as err:
                raise UsageError(f"verdict_noise {args.verdict_noise!r}: {err}") from err
    elif args.verdict_noise is not None:
        raise UsageError(
            "verdict_noise needs a botgrpo task with step or line verdicts: set task (e.g. chain)"
        )
    kwargs_by_entry = args.reward_func_kwargs or {}
    if isinstance(kwargs_by_entry, str):
        try:
            kwargs_by_entry = json.loads(kwargs_by_entry)
        except json.JSONDecodeError as err:
            raise UsageError(f"reward_func_kwargs is not valid JSON ({err})") from err
    shape_ok = isinstance(kwargs_by_entry, Mapping) and all(
        isinstance(v, Mapping) for v in kwargs_by_entry.values()
    )
    if not shape_ok:
        raise UsageError(
            "reward_func_kwargs must map each factory entry to its keyword arguments, e.g. "
            f'{{"math_step_reward": {{"config": {{...}}}}}}; got {kwargs_by_entry!r}'
        )
    unknown = sorted(set(kwargs_by_entry) - set(args.reward_funcs))
    if unknown:
        raise UsageError(f"reward_func_kwargs names entries not in reward_funcs: {unknown}")
    for entry in args.reward_funcs:
        _check_reward_entry(entry, kwargs_by_entry.get(entry, {}), args.task)


def _check_reward_entry(entry: str, kwargs: dict[str, Any], task: str | None) -> None:
    if entry == TASK_REWARD:
        if task in (None, "arithmetic") or kwargs:
            raise UsageError(
                f"reward function {TASK_REWARD!r} scores a botgrpo task without options: set "
                "task (e.g. chain) and give it no reward_func_kwargs"
            )
        return
    try:
        obj, is_factory = resolve_entry(entry)
    except ImportError as err:
        raise UsageError(f"reward function {entry!r}: {import_hint(err, entry)}") from err
    except AttributeError as err:
        raise UsageError(
            f"reward function {entry!r}: {err}; check the import path 'package.module:function'"
        ) from err
    except ValueError as err:
        raise UsageError(str(err)) from err
    if not is_factory:
        if kwargs:
            raise UsageError(f"reward_func_kwargs given for {entry!r}, which is not a factory '()'")
        try:
            check_reward_callable(obj, entry)
        except ValueError as err:
            raise UsageError(str(err)) from err
        return
    params = inspect.signature(obj).parameters
    try:
        inspect.signature(obj).bind(
            **({"tokenizer": None} if "tokenizer" in params else {}), **kwargs
        )
    except TypeError as err:
        raise UsageError(
            f"reward_func_kwargs for {entry!r}: {err}; it takes {', '.join(params) or 'nothing'}"
        ) from err
    for name, value in kwargs.items():  # judges named by options: checked before the model loads
        if name in JUDGE_ARGUMENTS and isinstance(value, Mapping):
            where = f"reward_func_kwargs[{entry!r}][{name!r}]"
            try:
                if name == "step_verifier" and "prm" in value:
                    check_prm_options(value, where)
                else:
                    judge_config(value, where)
            except ValueError as err:
                raise UsageError(str(err)) from err


def train(argv: Sequence[str] | None = None) -> BoTGRPOConfig:
    """Parse ``argv`` (TRL conventions), train, save the model; returns the resolved config."""
    from transformers import AutoTokenizer

    from botgrpo.trl.trainer import BoTGRPOTrainer

    script_args, config, model_args = parse_train_args(argv)
    check_train_inputs(script_args, model_args.model_name_or_path, config)
    _check_run_options(config, model_args)
    _check_reporters(config)
    train_set, eval_set = _datasets_or_usage_error(script_args, config.seed)
    _check_enough_prompts(config, len(train_set))
    model_path = resolve_model_path(model_args.model_name_or_path)
    init_kwargs = {"revision": model_args.model_revision, "dtype": model_args.dtype}
    if model_args.attn_implementation is not None:
        init_kwargs["attn_implementation"] = model_args.attn_implementation
    config.model_init_kwargs = {**init_kwargs, **(config.model_init_kwargs or {})}
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            model_path, revision=model_args.model_revision, padding_side="left"
        )
    except OSError as err:
        raise UsageError(
            f"model {model_path!r}: cannot load its tokenizer ({err}); pass a local model "
            "folder, a hub name available offline, or tiny:DIR"
        ) from err
    task = _task_of(script_args)
    try:
        reward_funcs = load_reward_funcs(
            script_args.reward_funcs, tokenizer, script_args.reward_func_kwargs, task
        )
    except (ValueError, TypeError) as err:  # a factory refusing its options
        raise UsageError(
            f"reward functions {script_args.reward_funcs}: {' '.join(str(err).split())}"
        ) from err
    peft_config = get_peft_config(model_args)
    if script_args.top_layers is not None:
        from transformers import AutoConfig

        from botgrpo.trl.layers import lora_on_top_layers, top_layer_indices

        try:
            top_layer_indices(AutoConfig.from_pretrained(model_path), script_args.top_layers)
        except ValueError as err:
            raise UsageError(str(err)) from err
        if peft_config is not None:
            lora_on_top_layers(peft_config, model_path, script_args.top_layers)
    with own_folder(config.output_dir, "training", command_line(), what="output_dir"):
        try:
            trainer = BoTGRPOTrainer(
                model=model_path,
                reward_funcs=reward_funcs,
                args=config,
                train_dataset=train_set,
                eval_dataset=eval_set if config.eval_strategy != "no" else None,
                processing_class=tokenizer,
                peft_config=peft_config,
            )
        except (ValueError, ImportError) as err:  # a setting TRL, PEFT or transformers refuse
            raise UsageError(
                f"{' '.join(str(err).split())} (the trainer refused its settings; "
                "BOTGRPO_TRACEBACK=1 for the traceback)"
            ) from err
        if script_args.top_layers is not None:
            from botgrpo.trl.layers import freeze_below_top_layers

            freeze_below_top_layers(trainer.model, script_args.top_layers)
        try:
            trainer.train(resume_from_checkpoint=config.resume_from_checkpoint)
        except (RewardFunctionError, RewardOutputError) as err:  # the user's reward code
            raise UsageError(
                f"{err} (the training stopped there; BOTGRPO_TRACEBACK=1 for the traceback)"
            ) from err
        trainer.save_model(config.output_dir)
        # under torchrun/accelerate, a process group freed carelessly can abort or hang the
        # process after training has finished: botgrpo.trl.teardown says why
        end_training(trainer)
        del trainer
        gc.collect()
    return config
