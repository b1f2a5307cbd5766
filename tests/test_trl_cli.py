"""The ``botgrpo`` command line: train from a YAML recipe (+ flags), the recipes, the demo."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml

from botgrpo.cli import main
from botgrpo.trl.script import load_datasets, load_reward_funcs, make_train_parser

pytestmark = pytest.mark.usefixtures("torch_single_thread")

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"
CPU_RECIPE = RECIPES / "arithmetic_smoke_cpu.yaml"


def _parse(argv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_train_parser().parse_args_and_config(argv)


@pytest.mark.slow
def test_cli_trains_the_cpu_recipe_for_two_steps(tmp_path):
    out = tmp_path / "run"
    cmd = [
        str(Path(sys.executable).parent / "botgrpo"),
        "train",
        "--config",
        str(CPU_RECIPE),
        "--max_steps",
        "2",
        "--logging_steps",
        "1",
        "--output_dir",
        str(out),
        "--model_name_or_path",
        f"tiny:{tmp_path / 'tiny'}",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "tiny" / "config.json").exists(), "tiny: builds the model"
    assert (out / "model.safetensors").exists() and (out / "tokenizer.json").exists()
    events = list(out.rglob("events.out.tfevents*"))
    assert events, "the recipe reports to tensorboard"
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/bot/advantage/abs_mean")] == [1, 2]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("return [1.0] * (len(completions) - 1)", "returned 15 entries for 16 completions"),
        ("raise KeyError('solution')", "raised KeyError on completion 0"),
    ],
)
def test_a_reward_function_failing_mid_training_ends_in_one_line(tmp_path, body, says):
    """What a reward returns is checked on the first batch it scores: a user's mistake there
    ends `botgrpo train` in one line with exit status 2, not a traceback."""
    (tmp_path / "myrewards.py").write_text(f"def bad(completions, **kwargs):\n    {body}\n")
    out = tmp_path / "run"
    cmd = [str(Path(sys.executable).parent / "botgrpo"), "train"]
    cmd += ["--config", str(RECIPES / "chain_tiny_cpu.yaml"), "--output_dir", str(out)]
    cmd += ["--max_steps", "1", "--per_device_train_batch_size", "16"]
    cmd += ["--reward_funcs", "myrewards:bad"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": "."}
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    err = [line for line in done.stderr.splitlines() if line.startswith("botgrpo train: error")]
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(err) == 1 and says in err[0] and "Traceback" not in done.stderr, done.stderr[-3000:]


@pytest.mark.slow
def test_the_learning_recipe_starts_from_the_shipped_warm_start_and_logs_the_solve_rate(tmp_path):
    out = tmp_path / "run"
    cmd = [str(Path(sys.executable).parent / "botgrpo"), "train"]
    cmd += ["--config", str(RECIPES / "chain_tiny_cpu.yaml"), "--output_dir", str(out)]
    cmd += ["--max_steps", "2", "--logging_steps", "1", "--per_device_train_batch_size", "16"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "task/solved" in done.stdout + done.stderr
    assert (out / "model.safetensors").exists()


@pytest.mark.slow
def test_the_readme_trl_snippet_runs_as_written_on_a_cpu(tmp_path):
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Training with TRL") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("\n```", start)]
    for full, short in (("max_steps=20", "max_steps=1"), ("batch_size=64", "batch_size=16")):
        assert full in code
        code = code.replace(full, short)  # one step of the same run
    script = tmp_path / "snippet.py"
    script.write_text(code)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "runs" / "bot").is_dir()


def test_every_field_is_settable_from_yaml_and_from_flags(tmp_path):
    values = {
        "preset": "gspo",
        "advantage_estimator": "bot",
        "advantage_options": {},
        "advantage_eps": 1e-5,
        "w_g": 2.0,
        "w_s": 0.25,
        "local_bound": 1.5,
        "dynamic_sampling": True,
        "dynamic_sampling_max_rounds": 5,
        "loss_type": "dapo",
        "epsilon": 0.1,
        "epsilon_high": 0.3,
        "importance_sampling_level": "token",
        "beta": 0.02,
        "scale_rewards": "batch",
        "num_generations": 4,
        "max_completion_length": 16,
        "task": "arithmetic",
        "reward_funcs": ["arithmetic_outcome", "arithmetic_token_reward"],
        "model_name_or_path": "tiny:somewhere",
    }
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        yaml.safe_dump({**values, "output_dir": str(tmp_path), "use_cpu": True, "bf16": False})
    )
    flags = [f"--{k}={v if not isinstance(v, list | dict) else ''}" for k, v in values.items()]
    flags = [f for f in flags if not f.endswith("=")]
    flags += ["--reward_funcs", *values["reward_funcs"], "--advantage_options", "{}"]
    for argv in (
        ["--config", str(recipe)],
        [*flags, "--output_dir", str(tmp_path), "--use_cpu", "--bf16", "false"],
    ):
        script, config, model = _parse(argv)
        merged = {**vars(script), **vars(config), **vars(model)}
        for key, value in values.items():
            assert merged[key] == value, (argv[0], key)


def test_flags_override_the_yaml_file():
    script, config, _model = _parse(
        ["--config", str(CPU_RECIPE), "--preset", "grpo", "--w_s", "0.1", "--max_steps", "2"]
    )
    assert (config.preset, config.advantage_estimator, config.w_s, config.max_steps) == (
        "grpo",
        "grpo",
        0.1,
        2,
    )
    assert config.w_g == 3.0 and script.task == "arithmetic"


def test_aime_recipe_is_the_papers_setup(tiny_tokenizer):
    recipe = RECIPES / "aime_qwen2.5-3b.yaml"
    script, config, model = _parse(
        ["--config", str(recipe), "--bf16", "false", "--use_cpu", "true"]
    )
    assert model.model_name_or_path == "Qwen/Qwen2.5-3B-Instruct"
    assert (config.preset, config.w_g, config.w_s) == ("bot", 3.0, 0.5)
    assert config.num_generations == 8 and config.generation_batch_size == 64  # K = 8, 8 prompts
    assert script.eval_fraction == 0.2 and script.answer_column == "Answer"
    (reward,) = load_reward_funcs(script.reward_funcs, tiny_tokenizer, script.reward_func_kwargs)
    assert reward.__name__ == "math_step_reward"
    prompt = script.prompt_template.format(Question="What is 1+1?")
    assert "<step i>" in prompt and prompt.endswith("What is 1+1?")


def test_reward_func_entries_and_their_errors(tiny_tokenizer):
    from botgrpo.tasks.arithmetic import arithmetic_outcome

    funcs = load_reward_funcs(
        ["arithmetic_outcome", "botgrpo.tasks.arithmetic:make_arithmetic_token_reward()"],
        tiny_tokenizer,
    )
    assert funcs[0] is arithmetic_outcome and funcs[1].__name__ == "arithmetic_token_reward"
    with pytest.raises(
        ValueError, match="unknown reward function 'nope': use one of arithmetic_outcome"
    ):
        load_reward_funcs(["nope"], tiny_tokenizer)
    with pytest.raises(ValueError, match="not a factory"):
        load_reward_funcs(["arithmetic_outcome"], tiny_tokenizer, {"arithmetic_outcome": {"x": 1}})
    with pytest.raises(ValueError, match="not in reward_funcs"):
        load_reward_funcs(["arithmetic_outcome"], tiny_tokenizer, {"other": {}})


def test_builtin_task_and_its_errors():
    script, config, _ = _parse(
        ["--config", str(CPU_RECIPE), "--task_size", "20", "--eval_fraction", "0.25"]
    )
    train, held_out = load_datasets(script, config.seed)
    assert (len(train), len(held_out)) == (15, 5) and set(train.column_names) == {
        "prompt",
        "answer",
    }
    script.task = "chess"
    with pytest.raises(ValueError, match="unknown task 'chess': use one of chain, columns"):
        load_datasets(script, 0)


def test_botgrpo_tasks_and_their_step_reward(tiny_tokenizer):
    script, config, _ = _parse(
        [
            "--config",
            str(CPU_RECIPE),
            "--task",
            "chain",
            "--task_size",
            "4",
            "--reward_funcs",
            "task_reward",
        ]
    )
    train, _ = load_datasets(script, config.seed)
    assert train.column_names == ["prompt", "answer", "meta"] and len(train) == 4
    from botgrpo.tasks import load_task
    from botgrpo.tasks.base import Example

    [reward] = load_reward_funcs(script.reward_funcs, tiny_tokenizer, None, load_task("chain"))
    row = train[0]
    demo = load_task("chain:slip=none").demonstration(Example.from_row(**row))
    ids = [*tiny_tokenizer(demo).input_ids, tiny_tokenizer.eos_token_id]
    [tr] = reward(
        prompts=[row["prompt"]],
        completions=[demo],
        completion_ids=[ids],
        answer=[row["answer"]],
        meta=[row["meta"]],
    )
    assert tr.outcome == 1.0 and tr.format_bonus == 0.2
    with pytest.raises(ValueError, match="needs a task"):
        load_reward_funcs(["task_reward"], tiny_tokenizer)


def test_top_level_usage(capsys):
    assert main([]) == 0
    usage = capsys.readouterr().out
    assert "train" in usage and "demo" in usage
    assert main(["fly"]) == 2
    assert "unknown command 'fly'" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_runs_grpo_and_bot_and_prints_the_summary(tmp_path, capsys):
    argv = [
        "demo",
        "--out-dir",
        str(tmp_path),
        "--task",
        "tests.user_task:make_task",
        "--seeds",
        "1",
        "--steps",
        "1",
        "--eval-every",
        "1",
        "--eval-problems",
        "4",
        "--prompts-per-step",
        "2",
        "--num-generations",
        "2",
        "--max-completion-length",
        "8",
        "--warm-start-steps",
        "1",
        "--warmup-steps",
        "0",
        "--progress",
        "false",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "botgrpo demo: grpo, bot" in out and "| grpo |" in out and "| bot |" in out
    assert (tmp_path / "demo" / "curves.png").exists()


def test_compare_flags_are_generated_from_the_config(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = capsys.readouterr().out
    assert "--lr-sweep" in out and "best rate" in out and "--workers" in out
    assert main(["compare", "--methods", "grpo", "trpo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("botgrpo compare: error: unknown method") and err.count("\n") == 1


@pytest.mark.parametrize("spelling", [["--config=RECIPE"], ["--config", "RECIPE"]])
def test_the_recipe_is_read_with_either_spelling_of_the_config_flag(spelling):
    from botgrpo.trl.script import parse_train_args

    recipe = str(Path(__file__).resolve().parents[1] / "recipes" / "chain_tiny_cpu.yaml")
    argv = [a.replace("RECIPE", recipe) for a in spelling] + ["--max_steps", "3"]
    script_args, config, _ = parse_train_args(argv)
    assert (script_args.task, config.max_steps) == ("chain", 3)


def test_none_clears_a_recipes_dataset_options():
    """A recipe that trains on a dataset, switched to a task from the command line."""
    from botgrpo.trl.script import TrainScriptArguments

    args = TrainScriptArguments(
        task="chain",
        dataset_name="none",
        answer_column="None",
        prompt_template="none",
        reward_funcs=["task_reward"],
    )
    assert (args.task, args.dataset_name, args.answer_column, args.prompt_template) == (
        "chain",
        None,
        None,
        None,
    )
