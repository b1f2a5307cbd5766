"""A user's mistakes, class by class: each ends in one line ``botgrpo <command>: error: ...``,
exit status 2, and leaves nothing created or deleted; silent misparses are refused; options
that delete stay inside what they own."""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path

import pytest

from botgrpo.harness import cli as harness_cli
from botgrpo.harness.config import CompareConfig
from botgrpo.harness.warmstart import PACKAGED_DIR
from botgrpo.usage import (
    check_folder_name,
    check_package_name,
    check_writable_folder,
    parse_bool,
    remove_owned_folder,
)
from tests.cli_helpers import assert_one_line as one_line
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
SMOKE_RECIPE = ROOT / "recipes" / "arithmetic_smoke_cpu.yaml"


def snapshot(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "few.jsonl").write_text(
        "".join(json.dumps({"prompt": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(30))
    )
    (tmp_path / "nulls.jsonl").write_text('{"prompt": "1+1=", "answer": null}\n')
    (tmp_path / "a_file").write_text("not a folder\n")
    return tmp_path


# ---- compare / demo: every option checked before a folder, warm start or run is made ---------


@pytest.mark.parametrize(
    ("flags", "parts"),
    [
        (["--temperature", "0"], ["temperature must be a finite number > 0", "0.0"]),
        (["--temperature", "-1"], ["temperature must be a finite number > 0"]),
        (["--learning-rate", "nan"], ["learning_rate", "nan"]),
        (["--w-g", "nan"], ["w_g must be a finite number > 0"]),
        (["--w-s", "inf"], ["w_s must be a finite number >= 0"]),
        (["--warm-start-lr", "-1"], ["warm_start_lr must be a finite number > 0"]),
        (["--warm-start-anneal", "0"], ["warm_start_anneal must be a finite number > 0"]),
        (["--warm-start-anneal", "1.5"], ["warm_start_anneal must be at most 1", "fraction"]),
        (["--warm-start-batch-size", "0"], ["warm_start_batch_size must be >= 1"]),
        (["--warm-start-patience", "1"], ["warm_start_patience must be below 1"]),
        (["--warm-start-patience", "-0.1"], ["warm_start_patience must be a finite number >= 0"]),
        (["--warm-start-packed", "sometimes"], ["--warm-start-packed", "not a boolean"]),
        (["--lr-sweep", "1e-4", "inf"], ["lr_sweep"]),
        (["--lr-sweep", "1e-4", "1e-4"], ["lr_sweep lists", "more than once"]),
        (["--methods"], ["--methods: expected at least one argument"]),
        (["--methods", "bot", "bot"], ["methods lists ['bot'] more than once"]),
        (["--method-lrs", "bot=1e-4", "bot=2e-4"], ["more than once"]),
        (["--method-lrs", "bot=nan"], ["METHOD=LR with LR > 0"]),
        (["--name", ""], ["name '' must be a plain folder name"]),
        (["--name", "../elsewhere"], ["plain folder name"]),
        (["--name", "."], ["plain folder name"]),
        (["--thresholds", "2.0"], ["thresholds must lie strictly between 0 and 1", "2.0"]),
        (["--thresholds", "nan"], ["strictly between 0 and 1", "nan"]),
        (["--thresholds", "0"], ["strictly between 0 and 1"]),
        (["--progress", "flase"], ["--progress", "'flase' is not a boolean", "on, false"]),
        (["--progress", "maybe"], ["not a boolean"]),
        (["--steps", "x"], ["--steps: invalid int value: 'x'", "--help"]),
        (["--steps", "0"], ["steps must be >= 1"]),
        (
            ["--init-model", "./no_such_model"],
            ["init_model './no_such_model' is not a model folder"],
        ),
        (["--init-model", "a_file"], ["is not a model folder"]),
        (["--out-dir", "a_file"], ["out_dir a_file is a file, not a folder"]),
        (["--out-dir", "a_file/below"], ["a_file is a file, not a folder"]),
        (["--out-dir", "/proc/botgrpo-runs"], ["cannot write in /proc"]),
        (["--task", "jsonl:few.jsonl"], ["has 30 distinct problems", "lower --eval-problems"]),
        (
            ["--task", "jsonl:few.jsonl", "--eval-problems", "14", "--pass-problems", "14"],
            ["leave 2 for training, fewer than 8", "lower --eval-problems to at most 11"],
        ),
        (["--task", "jsonl:nulls.jsonl"], ["nulls.jsonl:1", "'answer' must be", "None"]),
        (["--task", "chain:min_steps=x"], ["min_steps='x' is not a valid int"]),
    ],
)
def test_compare_refuses_a_bad_option_in_one_line_and_creates_nothing(
    workdir, capsys, flags, parts
):
    before = snapshot(workdir)
    code, err = run_cli(["compare", "--progress", "false", *flags], capsys)
    assert code == 2
    one_line(err, "compare", *parts)
    assert snapshot(workdir) == before, "a refused command leaves no folder or file behind"


def test_demo_shares_compares_checks(workdir, capsys):
    code, err = run_cli(["demo", "--w-g", "nan"], capsys)
    assert code == 2
    one_line(err, "demo", "w_g must be a finite number > 0")
    assert not (workdir / "runs").exists()


@pytest.mark.parametrize("word", ["true", "Yes", "1", "ON", "false", "no", "0", "Off"])
def test_booleans_take_the_documented_spellings(word):
    assert parse_bool(word) is (word.lower() in ("true", "yes", "1", "on"))


@pytest.mark.parametrize("word", ["flase", "", "y", "2", "none"])
def test_other_boolean_spellings_are_refused(word):
    with pytest.raises(Exception, match="is not a boolean"):
        parse_bool(word)


def test_the_config_dataclass_holds_the_checks_for_the_python_api_too():
    with pytest.raises(ValueError, match="temperature"):
        CompareConfig(temperature=0.0)
    with pytest.raises(ValueError, match="progress must be bool"):
        CompareConfig(progress="false")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="steps must be int"):
        CompareConfig(steps=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="methods is empty"):
        CompareConfig(methods=())


def test_resuming_with_changed_settings_is_one_line_before_anything_trains(
    workdir, capsys, monkeypatch
):
    from botgrpo.harness import compare as compare_module
    from botgrpo.harness.runner import RunSpec, run_label, run_settings

    cfg = CompareConfig(name="r", methods=("bot",), seeds=1, steps=5, warmup_steps=0)
    task = compare_module.check_inputs(cfg)
    model = compare_module.planned_checkpoint(cfg, task)
    run_dir = workdir / "runs" / "r" / "runs" / run_label("bot", 0, cfg.learning_rate)
    run_dir.mkdir(parents=True)
    spec = RunSpec("bot", 0, cfg.learning_rate, str(model), str(run_dir), cfg)
    (run_dir / "done.json").write_text(json.dumps({"seconds": 1.0, "settings": run_settings(spec)}))

    def no_warm_start(*args, **kwargs):
        raise AssertionError("the refusal must come before the warm start")

    monkeypatch.setattr(compare_module, "starting_checkpoint", no_warm_start)
    argv = ["compare", "--name", "r", "--methods", "bot", "--seeds", "1", "--steps", "5"]
    argv += ["--warmup-steps", "0", "--temperature", "0.7", "--progress", "false"]
    code, err = run_cli(argv, capsys)
    assert code == 2
    one_line(err, "compare", "different settings", "temperature: 1.0 -> 0.7", "--name")
    assert not (workdir / "runs" / ".cache").exists()


# ---- train: TRL's parser, the YAML file, the config dataclasses ------------------------------


@pytest.mark.parametrize(
    ("flags", "parts"),
    [
        (["--learning_rate", "-1"], ["learning_rate must be a finite number > 0", "-1.0"]),
        (["--learning_rate", "nan"], ["learning_rate", "nan"]),
        (["--task_size", "0"], ["task_size must be >= 1"]),
        (["--eval_split", "test"], ["eval_split names a split of dataset_name"]),
        (["--eval_fraction", "1.5"], ["eval_fraction must lie strictly between 0 and 1"]),
        (["--max_completion_length", "0"], ["max_completion_length must be >= 1"]),
        (["--temperature", "0"], ["temperature must be a finite number > 0"]),
        (["--max_steps", "0"], ["max_steps must be >= 1 (or -1"]),
        (["--max_steps", "x"], ["--max_steps", "invalid int value: 'x'", "--help"]),
        (["--num_generations", "1"], ["num_generations must be >= 2"]),
        (["--output_dir", "a_file"], ["output_dir a_file is a file"]),
        (["--output_dir", "/proc/botgrpo-out"], ["cannot write in /proc"]),
        (["--eval_strategy", "steps"], ["eval_strategy steps needs an evaluation set"]),
        (["--reward_funcs", "os:getcwd"], ["'os:getcwd' cannot take TRL's reward arguments"]),
        (["--reward_funcs", "json:decoder"], ["'json:decoder' is a module, not a function"]),
        (["--model_name_or_path", "warm:nope"], ["no warm start 'nope' ships", "warm:chain"]),
        (["--model_name_or_path", "warm:../x"], ["must be a plain name"]),
    ],
)
def test_train_refuses_a_bad_setting_in_one_line_before_building_a_model(
    workdir, capsys, flags, parts
):
    before = snapshot(workdir)
    argv = ["train", "--config", str(SMOKE_RECIPE), "--model_name_or_path", "tiny:tiny"]
    code, err = run_cli([*argv, "--output_dir", "out", *flags], capsys)
    assert code == 2
    one_line(err, "train", *parts)
    assert snapshot(workdir) == before, "nothing is built or written for a refused run"


def test_train_without_arguments_says_what_to_pass(workdir, capsys):
    code, err = run_cli(["train"], capsys)
    assert code == 2
    one_line(err, "train", "nothing to train", "--config recipes/chain_tiny_cpu.yaml", "--help")


@pytest.mark.parametrize(
    ("yaml_text", "parts"),
    [
        ("model_name_or_path: tiny:tiny\ntask: chain\nlearning_rate: .nan\n", ["learning_rate"]),
        ("model_name_or_path: tiny:tiny\ntask: chain\ntask_size: -3\n", ["task_size must be"]),
        ("model_name_or_path: tiny:tiny\ntask: chain\nmax_steps: 0\n", ["max_steps must be"]),
        ("model_name_or_path: tiny:tiny\ntask: nope\n", ["unknown task 'nope'"]),
        (
            "model_name_or_path: tiny:tiny\ntask: chain\nlearnin_rate: 0.001\n",
            ["the recipe sets learnin_rate (did you mean learning_rate?)", "--help"],
        ),
    ],
)
def test_a_yaml_recipe_mistake_is_one_line(workdir, capsys, yaml_text, parts):
    (workdir / "r.yaml").write_text(yaml_text + "output_dir: out\n")
    code, err = run_cli(["train", "--config", "r.yaml"], capsys)
    assert code == 2
    one_line(err, "train", *parts)
    assert not (workdir / "tiny").exists() and not (workdir / "out").exists()


def test_a_yaml_reward_funcs_string_is_one_entry(workdir):
    from botgrpo.trl.script import parse_train_args

    (workdir / "r.yaml").write_text(
        "model_name_or_path: tiny:tiny\ntask: chain\nreward_funcs: task_reward\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        script_args, _, _ = parse_train_args(["--config", "r.yaml"])
    assert script_args.reward_funcs == ["task_reward"]


def test_a_config_on_a_cpu_does_not_ask_for_bf16(tmp_path):
    from botgrpo.trl import BoTGRPOConfig

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # no deprecated key among the defaults
        config = BoTGRPOConfig(output_dir=str(tmp_path / "o"))
    assert config.bf16 is False, "no bf16 accelerator here: float32, as a CPU needs"
    assert config.activation_checkpointing is True, "TRL's default is kept"
    assert BoTGRPOConfig(output_dir=str(tmp_path / "o"), bf16=False).bf16 is False


# ---- summarize -----------------------------------------------------------------------------


def test_summarize_refuses_a_file_as_out_and_a_malformed_config(workdir, capsys):
    (workdir / "cmp").mkdir()
    (workdir / "cmp" / "config.json").write_text("[1, 2]")
    code, err = run_cli(["summarize", "cmp", "--out", "a_file"], capsys)
    assert code == 2
    one_line(err, "summarize", "--out a_file is a file")
    code, err = run_cli(["summarize", "cmp"], capsys)
    assert code == 2
    one_line(err, "summarize", "config.json must hold", "got a list")
    code, err = run_cli(["summarize", "cmp", "--thresholds", "1.5"], capsys)
    assert code == 2
    one_line(err, "summarize", "--thresholds must lie strictly between 0 and 1")
    assert sorted(p.name for p in (workdir / "cmp").iterdir()) == ["config.json"]


# ---- deletion stays inside what a command owns -----------------------------------------------


@pytest.fixture
def packaged_copy(tmp_path, monkeypatch):
    """A temporary copy of the shipped warm starts, standing in for the package's folder, with
    a user's folder beside it that no command may touch."""
    copy = tmp_path / "site" / "botgrpo" / "checkpoints"
    shutil.copytree(PACKAGED_DIR, copy)
    (copy.parent / "user_code.py").write_text("precious = True\n")
    (copy / "notes").mkdir()
    (copy / "notes" / "keep.txt").write_text("mine\n")
    monkeypatch.setattr(harness_cli, "PACKAGED_DIR", copy, raising=False)
    monkeypatch.setattr("botgrpo.shipped.PACKAGED_DIR", copy)
    return copy


@pytest.mark.parametrize("name", ["..", "", "/abs/dir", "../checkpoints", "a/b", ".hidden", "-x"])
def test_warm_start_package_takes_only_a_plain_name(workdir, capsys, packaged_copy, name):
    before = snapshot(packaged_copy.parent)
    code, err = run_cli(["warm-start", f"--package={name}", "--out-dir", "out"], capsys)
    assert code == 2
    one_line(err, "warm-start", "--package", "plain name")
    assert snapshot(packaged_copy.parent) == before
    assert not (workdir / "out").exists(), "refused before any warm start is trained"


@pytest.mark.parametrize(
    ("device", "says"),
    [("meta", "only cpu and cuda"), ("gpu!", "not a device name"), ("cuda:7", "CUDA device")],
)
def test_warm_start_device_is_checked_before_anything_is_written(workdir, capsys, device, says):
    code, err = run_cli(["warm-start", "--device", device, "--out-dir", "out"], capsys)
    assert code == 2
    one_line(err, "warm-start", "--device", says)
    assert not (workdir / "out").exists()


def test_warm_start_package_never_replaces_a_folder_it_did_not_write(
    workdir, capsys, packaged_copy
):
    before = snapshot(packaged_copy.parent)
    code, err = run_cli(["warm-start", "--package", "notes", "--out-dir", "out"], capsys)
    assert code == 2
    one_line(err, "warm-start", "exists and is not a warm start", "another name")
    assert snapshot(packaged_copy.parent) == before


def test_remove_owned_folder_checks_the_resolved_path_and_the_marker(tmp_path):
    home = tmp_path / "home"
    (home / "ours").mkdir(parents=True)
    (home / "ours" / "warm_start.json").write_text("{}")
    (home / "theirs").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "warm_start.json").write_text("{}")
    (home / "link").symlink_to(outside)
    for path, reason in [
        (home / "theirs", "holds no warm_start.json"),
        (home / "link", "not a folder directly inside"),
        (home / "ours" / ".." / ".." / "outside", "not a folder directly inside"),
        (home, "not a folder directly inside"),
    ]:
        with pytest.raises(ValueError, match=reason):
            remove_owned_folder(path, home, "warm_start.json")
    assert (home / "theirs").is_dir() and (outside / "warm_start.json").is_file()
    remove_owned_folder(home / "ours", home, "warm_start.json")
    assert not (home / "ours").exists()
    remove_owned_folder(home / "missing", home, "warm_start.json")  # nothing to do


@pytest.mark.parametrize("name", ["chain", "my-task_2", "v1.2"])
def test_plain_names_pass(name):
    check_package_name(name)
    check_folder_name(name, "name")


def test_the_write_check_creates_nothing(tmp_path):
    target = tmp_path / "a" / "b"
    check_writable_folder(target, "out")
    assert list(tmp_path.iterdir()) == []


# ---- the sandbox's limits ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout_s", math.inf),
        ("timeout_s", math.nan),
        ("cpu_time_s", math.inf),
        ("memory_mb", math.inf),
        ("max_processes", 2.5),
        ("timeout_s", True),
    ],
)
def test_sandbox_limits_must_be_finite_numbers(option, value):
    from botgrpo.rewards.sandbox import SandboxConfig

    with pytest.raises(ValueError, match=f"SandboxConfig: {option}"):
        SandboxConfig(**{option: value})


@pytest.mark.slow
@pytest.mark.usefixtures("torch_single_thread")
def test_warm_start_package_writes_and_replaces_only_its_own_folder(workdir, capsys, packaged_copy):
    argv = ["warm-start", "--out-dir", "out", "--eval-problems", "4", "--pass-problems", "4"]
    argv += ["--pass-samples", "1"]
    assert run_cli([*argv, "--package", "chain_copy"], capsys)[0] == 0
    meta = json.loads((packaged_copy / "chain_copy" / "warm_start.json").read_text())
    assert (
        meta["key"] == json.loads((packaged_copy / "chain" / "warm_start.json").read_text())["key"]
    )
    (packaged_copy / "chain_copy" / "stale.txt").write_text("from the last packaging\n")
    assert run_cli([*argv, "--package", "chain_copy"], capsys)[0] == 0, "its own: replaced"
    assert not (packaged_copy / "chain_copy" / "stale.txt").exists()
    assert (packaged_copy.parent / "user_code.py").read_text() == "precious = True\n"
    assert (packaged_copy / "notes" / "keep.txt").read_text() == "mine\n"


# ---- found by trying mistakes nobody listed ----------------------------------------------------


def _finished_comparison(root: Path, lr: float) -> Path:
    """A comparison folder as `botgrpo compare` leaves it: config.json and one finished run."""
    from botgrpo.harness.runner import RunSpec, run_label, run_settings

    cfg = CompareConfig(name=root.name, methods=("bot",), seeds=1, steps=2, warmup_steps=0)
    cfg.learning_rate = lr
    run = root / "runs" / run_label("bot", 0, lr)
    run.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps(cfg.__dict__, default=list))
    spec = RunSpec("bot", 0, lr, "model", str(run), cfg)
    (run / "done.json").write_text(json.dumps({"seconds": 5.0, "settings": run_settings(spec)}))
    base = {"method": "bot", "seed": 0, "lr": lr, "kind": "eval"}
    records = [{**base, "step": s, "sampled_solved": 0.1 + 0.1 * s} for s in (0, 1, 2)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


@pytest.mark.parametrize("where", ["other", "inside_run", "inside_root"])
def test_summarize_never_writes_into_another_comparison(workdir, capsys, where):
    a = _finished_comparison(workdir / "a", 1e-4)
    b = _finished_comparison(workdir / "b", 2e-4)
    out = {"other": b, "inside_run": next((a / "runs").iterdir()), "inside_root": a / "sub"}[where]
    before = {p: p.read_bytes() for p in workdir.rglob("*") if p.is_file()}
    code, err = run_cli(["summarize", str(a), "--out", str(out)], capsys)
    assert code == 2
    one_line(err, "summarize", "--out")
    assert {p: p.read_bytes() for p in workdir.rglob("*") if p.is_file()} == before


def test_summarize_names_a_corrupt_record_and_writes_nothing(workdir, capsys):
    a = _finished_comparison(workdir / "a", 1e-4)
    metrics = next((a / "runs").iterdir()) / "metrics.jsonl"
    metrics.write_text(
        metrics.read_text().replace('"sampled_solved": 0.2', '"sampled_solved": NaN')
    )
    code, err = run_cli(["summarize", str(a), "--out", "o"], capsys)
    assert code == 2
    one_line(err, "summarize", "metrics.jsonl:2", "sampled_solved is nan")
    metrics.write_text('{"kind": "eval", oops\n')
    code, err = run_cli(["summarize", str(a), "--out", "o"], capsys)
    one_line(err, "summarize", "metrics.jsonl:1", "not valid JSON")
    assert not (workdir / "o").exists()


@pytest.mark.parametrize(
    ("old", "new", "part"),
    [
        ('"step": 1', '"step": "1"', "step must be a whole number"),
        ('"sampled_solved": 0.2', '"sampled_solved": "0.2"', "sampled_solved must be a number"),
        ('"method": "bot"', '"method": 3', "method must be a string"),
    ],
)
def test_summarize_names_a_record_of_the_wrong_shape(workdir, capsys, old, new, part):
    a = _finished_comparison(workdir / "a", 1e-4)
    metrics = next((a / "runs").iterdir()) / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    lines[1] = lines[1].replace(old, new)
    metrics.write_text("\n".join(lines) + "\n")
    code, err = run_cli(["summarize", str(a), "--out", "o"], capsys)
    assert code == 2
    one_line(err, "summarize", "metrics.jsonl:2", part)
    assert not (workdir / "o").exists()


def test_summarize_checks_the_metric_before_writing(workdir, capsys):
    a = _finished_comparison(workdir / "a", 1e-4)
    code, err = run_cli(["summarize", str(a), "--metric", "greedy_step_acc", "--out", "o"], capsys)
    assert code == 2
    one_line(err, "summarize", "hold no 'greedy_step_acc'")
    assert not (workdir / "o").exists()


def test_a_quoted_home_folder_is_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert CompareConfig(out_dir="~/runs").out_dir == str(tmp_path / "runs")


@pytest.mark.parametrize(
    ("flags", "parts"),
    [
        (["--beta", "-1"], ["beta must be a finite number >= 0"]),
        (["--epsilon", "-0.2"], ["epsilon must be a finite number >= 0"]),
        (["--importance_sampling_level", "bogus"], ["importance_sampling_level 'bogus'"]),
        (
            ["--advantage_estimator", "grpo", "--advantage_options", '{"scale": "x"}'],
            ["advantage_options for 'grpo'", "scale='x'"],
        ),
        (["--preset", "pure", "--advantage_options", '{"form": "STRICT"}'], ["form='STRICT'"]),
        (["--preset", "grpo", "--scale_rewards", "bogus"], ["scale_rewards 'bogus'"]),
        (["--reward_weights", "nan"], ["reward_weights must be finite numbers"]),
        (["--reward_funcs", "task_reward", "task_reward", "--task", "chain"], ["twice"]),
        (["--prompt_template", "Q: {prompt}"], ["prompt_template shape a dataset_name's rows"]),
        (["--dataset_name", "some/dataset"], ["are both set", "--task none"]),
    ],
)
def test_train_refuses_settings_that_would_fail_at_the_first_step(workdir, capsys, flags, parts):
    argv = ["train", "--config", str(SMOKE_RECIPE), "--model_name_or_path", "tiny:tiny"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, err = run_cli([*argv, "--output_dir", "out", *flags], capsys)
    assert code == 2
    one_line(err, "train", *parts)
    assert not (workdir / "tiny").exists() and not (workdir / "out").exists()


def test_reward_recipe_options_are_type_checked():
    from botgrpo.rewards.configs import config_from_mapping
    from botgrpo.rewards.recipes.math import MathRewardConfig
    from botgrpo.rewards.recipes.python import PythonRewardConfig

    for cls, values, message in [
        (MathRewardConfig, {"require_final": "false"}, "require_final must be bool"),
        (MathRewardConfig, {"steps": 5}, "steps must be a mapping of StepSignalConfig"),
        (MathRewardConfig, {"steps": {"spread_positive": "no"}}, "spread_positive must be bool"),
        (PythonRewardConfig, {"languages": "python"}, "languages must be a list"),
    ]:
        with pytest.raises(TypeError, match=message):
            config_from_mapping(cls, values)


@pytest.mark.parametrize(
    ("flags", "parts"),
    [
        (["--task", "jsonl:nan.jsonl"], ["nan.jsonl:1", "finite number"]),
        (["--task", "jsonl:blank.jsonl"], ["blank.jsonl:1", "non-blank"]),
        (["--task", "sys:exit"], ["exited"]),
        (["--task", "odd_tasks:text_sampler"], ["sample() returned a str, not an Example"]),
        (["--task", "chain:min_steps=3,min_steps=5"], ["'min_steps' of 'chain' is given twice"]),
        (["--lr-sweep", "1e-4", "2e-4", "--method-lrs", "bot=3e-4"], ["give one"]),
        (["--sweep-seeds", "3"], ["add --lr-sweep"]),
        (["--eval-problems", "100000000"], ["at most 100000"]),
    ],
)
def test_compare_refuses_more_mistakes(workdir, capsys, monkeypatch, flags, parts):
    (workdir / "nan.jsonl").write_text('{"prompt": "1+1=", "answer": NaN}\n')
    (workdir / "blank.jsonl").write_text('{"prompt": "1+1=", "answer": "  "}\n')
    (workdir / "odd_tasks.py").write_text(
        "class Texts:\n    name = 'texts'\n    def sample(self, rng):\n        return 'a string'\n"
        "    def demonstration(self, ex):\n        return ''\n"
        "    def score(self, ex, c):\n        return None\n"
        "def text_sampler():\n    return Texts()\n"
    )
    monkeypatch.syspath_prepend(str(workdir))
    before = snapshot(workdir)
    code, err = run_cli(["compare", "--progress", "false", *flags], capsys)
    assert code == 2
    one_line(err, "compare", *parts)
    assert snapshot(workdir) == before


def test_an_unknown_command_is_one_line(capsys):
    code, err = run_cli(["frobnicate"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "unknown command 'frobnicate'" in lines[0] and "compare" in lines[0]


def test_core_api_mistakes_raise_value_errors():
    import torch

    from botgrpo.core import aggregate_loss, get_policy_loss, kl_penalty

    loss = torch.ones(2, 3)
    for mask, message in [
        (torch.full((2, 3), -1.0), "only 0 and 1"),
        (torch.full((2, 3), 0.5), "only 0 and 1"),
        (torch.ones(3, 2), "shape"),
    ]:
        with pytest.raises(ValueError, match=message):
            aggregate_loss(loss, mask)
    with pytest.raises(ValueError, match="2-D"):
        aggregate_loss(torch.ones(3), torch.ones(3))
    nan_loss = torch.tensor([[1.0, float("nan")]])
    with pytest.raises(ValueError, match=r"loss_BT contains NaN"):
        aggregate_loss(nan_loss, torch.ones(1, 2))
    zeros = [[0.0, 0.0]]
    out, _ = get_policy_loss("ppo_clip")(zeros, zeros, [[1.0, -1.0]], [[1, 1]])
    assert out.item() == 0.0, "lists are taken as tensors"
    assert kl_penalty(zeros, zeros).shape == (1, 2)


def test_run_many_takes_a_list_of_programs():
    from botgrpo.rewards.sandbox import run_many

    with pytest.raises(TypeError, match="list of programs"):
        run_many("print(1)")  # type: ignore[arg-type]


def test_a_yaml_key_given_twice_is_refused_with_its_line(workdir, capsys):
    (workdir / "r.yaml").write_text("task: chain\nlearning_rate: 1.0e-3\nlearning_rate: 2.0e-3\n")
    code, err = run_cli(["train", "--config", "r.yaml"], capsys)
    assert code == 2
    one_line(err, "train", "line 3", "key 'learning_rate' is given twice")


@pytest.mark.parametrize("kwargs", ["[1]", '{"arithmetic_token_reward": 5}'])
def test_reward_func_kwargs_must_map_entries_to_options(workdir, capsys, kwargs):
    argv = ["train", "--config", str(SMOKE_RECIPE), "--model_name_or_path", "tiny:tiny"]
    code, err = run_cli([*argv, "--reward_func_kwargs", kwargs], capsys)
    assert code == 2
    one_line(err, "train", "reward_func_kwargs must map each factory entry")


def test_a_budget_too_large_to_draw_is_refused_at_once():
    with pytest.raises(ValueError, match="training problems, drawn before training"):
        CompareConfig(steps=1_000_000, prompts_per_step=100)


def test_reward_configs_built_in_python_check_their_types_too():
    from botgrpo.rewards.compose import LineSignalConfig, StepSignalConfig
    from botgrpo.rewards.recipes.python import PythonRewardConfig

    with pytest.raises(TypeError, match="normalize must be bool"):
        LineSignalConfig(normalize="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="spread_positive must be bool"):
        StepSignalConfig(spread_positive="false")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="languages must be a list"):
        PythonRewardConfig(languages="python")  # type: ignore[arg-type]


@pytest.mark.parametrize("seconds", [math.inf, math.nan, 5e6, 0.0])
def test_code_reward_timeouts_stay_within_a_day(seconds):
    """A render or test limit past a day (or not a number) is refused when the config is built,
    not when the first completion is scored."""
    from botgrpo.rewards.recipes.python import PythonRewardConfig
    from botgrpo.rewards.recipes.react.recipe import ReactRewardConfig

    with pytest.raises(ValueError, match="render_timeout_s must be > 0 and at most 86400"):
        ReactRewardConfig(render_timeout_s=seconds)
    with pytest.raises(ValueError, match="test_timeout_s must be > 0 and at most 86400"):
        PythonRewardConfig(test_timeout_s=seconds)
    from botgrpo.rewards import check_components, screenshot_components

    for call in (check_components, screenshot_components):  # before any worker starts
        with pytest.raises(ValueError, match="timeout_s must be > 0 and at most 86400"):
            call(["export default () => <p/>;"], timeout_s=seconds)


def test_reward_helpers_refuse_values_outside_their_range():
    import numpy as np

    from botgrpo.rewards.compose import clamp_local, decay, propagate_errors, step_values

    for call, message in [
        (lambda: decay(np.arange(3), -1), "window must be an integer >= 0"),
        (lambda: clamp_local(np.ones(2), -1.0), "bound must be a number > 0"),
        (lambda: clamp_local(np.ones(2), math.nan), "bound must be a number > 0"),
        (lambda: propagate_errors([2, 0.5, -1]), "verdicts must be a list of -1, 0 and"),
        (lambda: step_values([[1, -1]]), "verdicts must be a list"),
        (lambda: step_values([math.nan]), "verdicts must be a list"),
    ]:
        with pytest.raises(ValueError, match=message):
            call()
    assert clamp_local(np.array([5.0]), math.inf).tolist() == [5.0], "inf: no clamp"


@pytest.mark.parametrize(
    ("flags", "parts"),
    [
        (["--num_iterations", "0"], ["num_iterations must be >= 1"]),
        (["--steps_per_generation", "0"], ["steps_per_generation must be >= 1"]),
        (["--repetition_penalty", "0"], ["repetition_penalty must be a finite number > 0"]),
        (["--top_entropy_quantile", "1.5"], ["top_entropy_quantile must be in [0, 1]"]),
        (["--preset", "bot", "--beta", "-1"], ["beta must be a finite number >= 0"]),
    ],
)
def test_train_refuses_generation_settings_in_one_line_without_warnings(
    workdir, capsys, flags, parts
):
    from botgrpo.cli import main

    argv = ["train", "--config", str(SMOKE_RECIPE), "--model_name_or_path", "tiny:tiny"]
    code = main([*argv, "--output_dir", "out", *flags])
    err = capsys.readouterr().err
    assert code == 2
    one_line(err, "train", *parts)  # no preset warning before the error


def test_a_rate_outside_zero_one_in_the_records_is_refused(workdir, capsys):
    a = _finished_comparison(workdir / "a", 1e-4)
    metrics = next((a / "runs").iterdir()) / "metrics.jsonl"
    metrics.write_text(
        metrics.read_text().replace('"sampled_solved": 0.2', '"sampled_solved": 7.5')
    )
    code, err = run_cli(["summarize", str(a), "--out", "o"], capsys)
    assert code == 2
    one_line(err, "summarize", "metrics.jsonl:2", "sampled_solved is a rate")
