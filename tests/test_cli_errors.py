"""A user's mistake on the command line: one line ``botgrpo <command>: error: ...`` naming the
problem and the fix, exit status 2, and nothing started (no warm start, no model built); a bug
keeps its traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import assert_one_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
CPU_RECIPE = ROOT / "recipes" / "arithmetic_smoke_cpu.yaml"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def compare_args(task: str, out: Path) -> list[str]:
    return ["compare", "--task", task, "--out-dir", str(out), "--progress", "false"]


@pytest.mark.parametrize(
    ("task", "parts"),
    [
        ("jsonl:missing.jsonl", ["missing.jsonl", "No such file", "check the path"]),
        ("jsonl:broken.jsonl", ["broken.jsonl:2", "not valid JSON"]),
        ("jsonl:fields.jsonl", ["fields.jsonl:1", "'prompt' and 'answer'"]),
        ("nonexistent", ["unknown task 'nonexistent'", "jsonl:PATH"]),
        ("mymod_that_is_not_there:factory", ["No module named 'mymod_that_is_not_there'"]),
        ("reasoning_gym:no_such_dataset", ["no_such_dataset"]),
    ],
)
def test_compare_reports_a_bad_task_in_one_line_before_anything_runs(workdir, capsys, task, parts):
    (workdir / "broken.jsonl").write_text('{"prompt": "1+1", "answer": "2"}\n{"prompt": "2+2"\n')
    (workdir / "fields.jsonl").write_text('{"question": "1+1", "answer": "2"}\n')
    out = workdir / "out"
    code, err = run_cli(compare_args(task, out), capsys)
    assert code == 2
    assert_one_line(err, "compare", f"task {task!r}", *parts)
    assert not out.exists(), "nothing may start (no warm start, no run folder) for a bad task"


def test_demo_checks_its_task_too(workdir, capsys):
    code, err = run_cli(["demo", "--task", "nonexistent", "--out-dir", "out"], capsys)
    assert code == 2
    assert_one_line(err, "demo", "unknown task 'nonexistent'")


def test_compare_reports_a_bad_setting_in_one_line(workdir, capsys):
    code, err = run_cli(["compare", "--steps", "5", "--warmup-steps", "10"], capsys)
    assert code == 2
    assert_one_line(err, "compare", "warmup_steps (10) must be < steps (5)")


@pytest.mark.parametrize(
    ("config", "parts"),
    [
        (None, ["missing.yaml", "No such file", "check the path"]),
        ("a: [1, 2\nb: 3\n", ["not valid YAML at line 2, column 2"]),
        ("- 1\n- 2\n", ["must hold a YAML mapping", "list"]),
    ],
)
def test_train_reports_a_bad_config_file_in_one_line(workdir, capsys, config, parts):
    path = workdir / "missing.yaml"
    if config is not None:
        path = workdir / "recipe.yaml"
        path.write_text(config)
    code, err = run_cli(["train", "--config", str(path)], capsys)
    assert code == 2
    assert_one_line(err, "train", f"--config {path}", *parts)


@pytest.mark.parametrize(
    ("flags", "parts"),
    [
        (["--task", "nonexistent"], ["unknown task 'nonexistent'"]),
        (["--task", "jsonl:missing.jsonl"], ["missing.jsonl", "No such file"]),
        (["--task", "chain", "--reward_funcs", "nope"], ["unknown reward function 'nope'"]),
        (
            ["--task", "chain", "--reward_funcs", "no_such_module.sub:fn"],
            ["No module named 'no_such_module'", "import path"],
        ),
        (
            [
                "--task",
                "chain",
                "--reward_funcs",
                "math_step_reward",
                "--reward_func_kwargs",
                '{"math_step_reward": {"bogus": 1}}',
            ],
            ["reward_func_kwargs for 'math_step_reward'", "bogus"],
        ),
        (
            [
                "--task",
                "chain",
                "--reward_funcs",
                "react_code_reward",
                "--reward_func_kwargs",
                '{"react_code_reward": {"code_judge": {"base_url": "http://127.0.0.1:9/v1", '
                '"modle": "judge"}}}',
            ],
            [
                "reward_func_kwargs['react_code_reward']['code_judge']",
                "unknown judge option 'modle'",
            ],
        ),
        (["--reward_funcs", "task_reward"], ["'task_reward'", "set task"]),
        (["--model_name_or_path", "./no_such_model"], ["'./no_such_model' is not a folder"]),
        (["--use_cpu", "false", "--bf16", "true"], ["bf16"]),
        # settings TRL, PEFT or transformers refuse only once the model is loaded
        (["--seed", "-1"], ["seed must be in [0, 2**32 - 1]"]),
        (["--min_p", "2"], ["min_p must be in [0, 1]"]),
        (
            ["--loss_type", "dr_grpo", "--max_completion_length", "None"],
            ["dr_grpo divides by max_completion_length"],
        ),
        (["--lr_scheduler_type", "cosine_with_min_lr"], ["min_lr or min_lr_rate"]),
        (["--use_peft", "true", "--lora_r", "0"], ["lora_r must be a whole number >= 1"]),
        (["--resume_from_checkpoint", "./nothere"], ["is not a checkpoint folder"]),
        (["--resume_from_checkpoint", "true"], ["holds no checkpoint-* folder"]),
        (["--report_to", "dagshub"], ["report_to dagshub needs dagshub", "report_to none"]),
        # fewer prompts than one generation batch draws: TRL would stop at step 0
        (["--task_size", "3"], ["the training set has 3 prompts, fewer than the 4"]),
    ],
)
def test_train_checks_its_inputs_before_building_a_model(workdir, capsys, flags, parts):
    model = workdir / "tiny"
    argv = ["train", "--config", str(CPU_RECIPE), "--model_name_or_path", f"tiny:{model}"]
    code, err = run_cli([*argv, *flags], capsys)
    assert code == 2
    assert_one_line(err, "train", *parts)
    assert not model.exists(), "the tiny model is built only after the inputs are checked"


def test_the_console_script_exits_2_and_a_bug_keeps_its_traceback(workdir):
    """A user's mistake is one line with exit status 2; a bug in botgrpo (here: its task check
    made to fail, through a sitecustomize on PYTHONPATH) keeps its traceback, exit status 1. A
    user's own task failing in its own code is the user's: one line, with the way to its
    traceback."""
    (workdir / "faulty_task.py").write_text("def factory():\n    raise RuntimeError('boom')\n")
    (workdir / "bugged").mkdir()
    (workdir / "bugged" / "sitecustomize.py").write_text(
        "import botgrpo.usage\n\n\ndef broken(spec):\n    raise RuntimeError('boom')\n\n\n"
        "botgrpo.usage.check_task_spec = broken\n"
    )
    env = {**os.environ, "PYTHONPATH": str(workdir), "HF_HUB_OFFLINE": "1"}
    script = str(Path(sys.executable).parent / "botgrpo")

    def botgrpo(*args: str) -> subprocess.CompletedProcess:
        cmd = [script, *args, "--out-dir", "out"]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)

    user_error = botgrpo("compare", "--task", "nonexistent")
    assert user_error.returncode == 2
    assert user_error.stderr.strip().count("\n") == 0
    assert "Traceback" not in user_error.stderr
    users_code = botgrpo("compare", "--task", "faulty_task:factory")
    assert users_code.returncode == 2 and "Traceback" not in users_code.stderr
    assert "loading it raised RuntimeError: boom" in users_code.stderr
    assert "BOTGRPO_TRACEBACK=1" in users_code.stderr
    env["PYTHONPATH"] = str(workdir / "bugged")
    bug = botgrpo("compare", "--task", "chain")
    assert bug.returncode == 1
    assert "Traceback" in bug.stderr and "RuntimeError: boom" in bug.stderr


@pytest.mark.parametrize(
    ("template", "parts"),
    [
        ("Q: {}", ["has the field {}", "name a column in braces"]),
        ("Q: {question.real}", ["has the field {question.real}"]),
        ("Q: {question", ["is not a format string", "double a literal brace"]),
        ("Q: {nope}", ["names the column 'nope'", "['question', 'sol']"]),
    ],
)
def test_a_prompt_template_that_does_not_fit_the_dataset_is_named(workdir, capsys, template, parts):
    data = workdir / "my data"
    data.mkdir()
    rows = "".join(f'{{"question": "{i} + 1?", "sol": "{i + 1}"}}\n' for i in range(8))
    (data / "train.jsonl").write_text(rows)
    argv = ["train", "--config", str(CPU_RECIPE), "--model_name_or_path", f"tiny:{workdir / 'm'}"]
    argv += ["--task", "none", "--dataset_name", str(data), "--answer_column", "sol"]
    argv += ["--reward_funcs", "math_step_reward", "--prompt_template", template]
    code, err = run_cli(argv, capsys)
    assert code == 2
    assert_one_line(err, "train", *parts)
    assert "cannot be loaded" not in err
    assert not (workdir / "m").exists()
