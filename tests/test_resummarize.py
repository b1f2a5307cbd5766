"""`botgrpo summarize`: summaries recomputed from finished runs, subsets, merges, refusals."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from botgrpo.cli import main
from botgrpo.harness.config import CompareConfig
from botgrpo.harness.resummarize import resummarize

CURVES = {
    "grpo": [0.1, 0.2, 0.4, 0.6, 0.7, 0.7],
    "bot": [0.1, 0.4, 0.6, 0.7, 0.7, 0.7],
}


def _comparison(root: Path, lr: float, methods: tuple[str, ...], seeds: int = 3, **options) -> Path:
    """A finished comparison folder made by hand: config.json and one run folder per seed."""
    cfg = CompareConfig(
        name=root.name, methods=methods, seeds=seeds, steps=50, eval_every=10, learning_rate=lr
    )
    cfg = dataclasses.replace(cfg, **options)
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps(cfg.__dict__, default=list))
    for method in methods:
        for seed in range(seeds):
            run = root / "runs" / f"{method}-lr{lr:g}-s{seed}"
            run.mkdir(parents=True)
            rows = [
                {
                    "kind": "eval",
                    "method": method,
                    "seed": seed,
                    "lr": lr,
                    "step": 10 * i,
                    "sampled_solved": v + 0.01 * seed,
                    "greedy_solved": v / 2,
                }
                for i, v in enumerate(CURVES[method])
            ]
            (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            settings = {"method": method, "seed": seed, "learning_rate": lr, "steps": cfg.steps,
                        "eval_every": cfg.eval_every}  # fmt: skip
            (run / "done.json").write_text(json.dumps({"seconds": 60.0, "settings": settings}))
    return root


def test_another_metric_in_place(tmp_path):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    resummarize([root], root, metric="greedy_solved")
    s = json.loads((root / "summary.json").read_text())
    assert s["metric"] == "greedy_solved" and s["n_seeds"] == 3
    assert s["start"] == pytest.approx(0.05) and (root / "curves.png").stat().st_size > 0
    assert s["methods"]["bot"]["wall_seconds_per_run"] == pytest.approx(60.0)


def test_merge_each_method_at_its_chosen_rate(tmp_path):
    a = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    b = _comparison(tmp_path / "b", 2e-4, ("grpo",))
    with pytest.raises(ValueError, match=r"grpo ran at several learning rates.*grpo@0.0001"):
        resummarize([a, b], tmp_path / "m")
    resummarize([a, b], tmp_path / "m", methods=("grpo@2e-4", "bot"))
    s = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert s["methods"]["grpo"]["lr"] == 2e-4 and s["methods"]["bot"]["lr"] == 1e-4
    assert s["speedups"] and s["speedups"][0]["baseline"] == "grpo"
    records = (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()
    assert len(records) == 2 * 3 * 6  # two methods, three seeds, six evaluations


def test_methods_with_different_seeds_are_paired_on_the_shared_ones(tmp_path):
    a = _comparison(tmp_path / "a", 1e-4, ("grpo",), seeds=5)
    b = _comparison(tmp_path / "b", 2e-4, ("bot",), seeds=3)
    resummarize([a, b], tmp_path / "m")
    s = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert s["methods"]["grpo"]["seeds"] == [0, 1, 2, 3, 4]
    assert {sp["n_seeds"] for sp in s["speedups"]} == {3}
    assert s["auc_differences"][0]["low"] is not None


def _swept(tmp_path: Path) -> Path:
    """A swept comparison: grpo ran at 1e-4 and 2e-4, bot at 1e-4; the sweep chose grpo=2e-4."""
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    other = _comparison(tmp_path / "b", 2e-4, ("grpo",))
    for run in sorted((other / "runs").iterdir()):
        done = json.loads((run / "done.json").read_text())
        (run / "done.json").write_text(json.dumps({**done, "seconds": 90.0}))
        run.rename(root / "runs" / run.name)
    report = {
        "metric": "sampled_solved",
        "stream": "validation",
        "sweep_seeds": 2,
        "best": {"grpo": 2e-4, "bot": 1e-4},
        "mean_over_run": {
            "grpo": {"0.0001": 0.31, "0.0002": 0.35},
            "bot": {"0.0001": 0.44, "0.0002": 0.41},
        },
    }
    (root / "lr_sweep.json").write_text(json.dumps(report))
    return root


def test_a_swept_folder_is_summarised_at_the_rates_its_sweep_chose(tmp_path):
    root = _swept(tmp_path)
    resummarize([root], tmp_path / "m")
    s = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert s["methods"]["grpo"]["lr"] == 2e-4 and s["methods"]["bot"]["lr"] == 1e-4
    assert s["methods"]["grpo"]["wall_seconds_per_run"] == pytest.approx(90.0)
    assert s["lr_sweep"]["best"] == {"grpo": 2e-4, "bot": 1e-4}
    md = (tmp_path / "m" / "summary.md").read_text()
    assert "chosen per method on the validation stream" in md and "2 seeds per rate" in md
    assert "| grpo | 0.310 | **0.350** | 0.0002 |" in md
    assert "| bot | **0.440** | 0.410 | 0.0001 |" in md
    # both choices lie at an edge of the grid: the summary says the best may lie beyond it
    assert "grpo chose 0.0002, the highest rate it tried: a higher one may do better" in md
    assert "bot chose 0.0001, the lowest rate it tried: a lower one may do better" in md
    assert (tmp_path / "m" / "lr_sweep.png").stat().st_size > 0
    # a rate given on the command line overrides the sweep's choice; the table keeps the subset
    resummarize([root], tmp_path / "n", methods=("grpo@1e-4",))
    s = json.loads((tmp_path / "n" / "summary.json").read_text())
    assert s["methods"]["grpo"]["lr"] == 1e-4 and list(s["methods"]) == ["grpo"]
    assert list(s["lr_sweep"]["best"]) == ["grpo"]
    assert s["methods"]["grpo"]["wall_seconds_per_run"] == pytest.approx(60.0)


def test_refuses_sweeps_that_disagree(tmp_path):
    a = _swept(tmp_path)
    c = _comparison(tmp_path / "c", 2e-4, ("bot",))
    report = {"metric": "sampled_solved", "sweep_seeds": 1, "best": {"bot": 2e-4}}
    (c / "lr_sweep.json").write_text(json.dumps({**report, "mean_over_run": {"bot": {}}}))
    with pytest.raises(ValueError, match="differ in sweep_seeds"):
        resummarize([a, c], tmp_path / "m")


def test_refuses_incomparable_folders_and_unknown_choices(tmp_path):
    a = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    c = _comparison(tmp_path / "c", 2e-4, ("bot",), steps=60)
    with pytest.raises(ValueError, match=r"not comparable.*steps 50 vs 60"):
        resummarize([a, c], tmp_path / "m")
    with pytest.raises(ValueError, match="no finished runs of dapo"):
        resummarize([a], tmp_path / "m", methods=("dapo",))
    with pytest.raises(ValueError, match="METHOD@LR"):
        resummarize([a], tmp_path / "m", methods=("bot@fast",))
    with pytest.raises(ValueError, match="pass --out"):
        resummarize([a], a, methods=("bot",))
    with pytest.raises(
        ValueError, match=r"(grpo|bot) seed 0 step 0 is recorded twice \(in .*a and .*a\)"
    ):
        resummarize([a, a], tmp_path / "m")


def test_cli_errors_are_one_line(tmp_path, capsys):
    a = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    assert main(["summarize", str(tmp_path / "nothing")]) == 2
    assert "nothing does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["summarize", str(tmp_path / "empty")]) == 2
    assert "holds no config.json" in capsys.readouterr().err
    assert main(["summarize", str(a), str(a)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pass --out" in err
    assert main(["summarize", str(a), "--out", str(tmp_path / "o"), "--methods", "bot"]) == 0
    assert "summary:" in capsys.readouterr().out


def test_a_rate_chosen_inside_the_grid_raises_no_doubt():
    from botgrpo.harness.summary import sweep_edges

    sweep = {
        "best": {"grpo": 4e-4, "bot": 4e-4, "dapo": 1e-4},
        "mean_over_run": {
            "grpo": {"0.0002": 0.30, "0.0004": 0.39, "0.0008": 0.26},
            "bot": {"0.0004": 0.52, "0.0008": 0.20},
            "dapo": {"0.0001": 0.4},
        },
    }
    assert sweep_edges(sweep) == [
        "bot chose 0.0004, the lowest rate it tried: a lower one may do better; add one to the "
        "sweep (--lr-sweep)."
    ]  # grpo's lies inside its grid; dapo tried one rate only


def test_summarize_says_on_the_terminal_when_a_choice_lies_at_the_grid_edge(tmp_path, capsys):
    root = _swept(tmp_path)
    assert main(["summarize", str(root), "--out", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "note:    grpo chose 0.0002, the highest rate it tried" in out
    assert "note:    bot chose 0.0001, the lowest rate it tried" in out
    a = _comparison(tmp_path / "plain", 1e-4, ("grpo", "bot"))  # no sweep: nothing to say
    assert main(["summarize", str(a), "--out", str(tmp_path / "o")]) == 0
    assert "note:" not in capsys.readouterr().out


def test_a_method_whose_chosen_rate_has_no_finished_runs_is_never_dropped(tmp_path, capsys):
    """A sweep that chose a rate whose test runs have not finished: the summary would show the
    other methods alone; it ends in one line naming the method, and writes nothing."""
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    report = {
        "metric": "sampled_solved",
        "sweep_seeds": 2,
        "best": {"grpo": 2e-4, "bot": 1e-4},
        "mean_over_run": {"grpo": {"0.0001": 0.3, "0.0002": 0.35}, "bot": {"0.0001": 0.4}},
    }
    (root / "lr_sweep.json").write_text(json.dumps(report))
    with pytest.raises(ValueError, match=r"no finished run of grpo at the rate its learning-rate"):
        resummarize([root], root)
    assert main(["summarize", str(root)]) == 2
    err = capsys.readouterr().err
    assert "sweep chose in lr_sweep.json (0.0002; its runs are at 0.0001)" in err
    assert not (root / "summary.json").exists()
    # the rate that ran, asked for by name, is summarised
    resummarize([root], tmp_path / "m", methods=("grpo@1e-4", "bot"))
    assert set(json.loads((tmp_path / "m" / "summary.json").read_text())["methods"]) == {
        "grpo",
        "bot",
    }


def test_a_method_of_the_comparison_with_no_finished_run_is_named(tmp_path):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    for run in (root / "runs").glob("bot-*"):
        (run / "done.json").unlink()
    with pytest.raises(ValueError, match="has no finished run of bot"):
        resummarize([root], tmp_path / "m")
    resummarize([root], tmp_path / "m", methods=("grpo",))  # the others, asked for


def test_a_subset_of_a_comparison_with_rates_per_method(tmp_path):
    """--methods bot on a comparison run with --method-lrs grpo=... bot=...: the subset keeps
    bot's rate and drops grpo's (a config naming a method it does not run is invalid)."""
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"), method_lrs=("grpo=1e-4", "bot=1e-4"))
    resummarize([root], tmp_path / "m", methods=("bot",))
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["methods"] == ["bot"] and cfg["method_lrs"] == ["bot=1e-4"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("[1, 2]", "needs the objects 'best' and 'mean_over_run'"),
        ('{"mean_over_run": {}}', "needs the objects 'best' and 'mean_over_run'"),
        ('{"best": {"bot": 1e-4}, "mean_over_run": {}}', "mean_over_run holds no scores of 'bot'"),
        ('{"best": {"bot": "fast"}, "mean_over_run": {"bot": {}}}', "is not a learning rate"),
        ('{"best": {"bot": 1e-4', "is not valid JSON"),
    ],
)
def test_a_broken_sweep_record_is_named(tmp_path, content, says):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    (root / "lr_sweep.json").write_text(content)
    with pytest.raises(ValueError, match=r"lr_sweep\.json") as info:
        resummarize([root], tmp_path / "m")
    assert says in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("kept", [0, 3])
def test_a_finished_run_whose_records_were_cut_is_named(tmp_path, kept):
    """A run with done.json evaluated at step 0 and at its last step; records that stop short
    (a truncated or emptied metrics.jsonl) would pass for a run that learned less."""
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    resummarize([root], tmp_path / "whole")  # whole records: summarised
    metrics = root / "runs" / "bot-lr0.0001-s1" / "metrics.jsonl"
    metrics.write_text("".join(line + "\n" for line in metrics.read_text().splitlines()[:kept]))
    with pytest.raises(ValueError, match=r"bot-lr0.0001-s1 is finished .* its records were cut"):
        resummarize([root], tmp_path / "m")


def test_a_finished_run_missing_evaluations_in_the_middle_is_named(tmp_path):
    """Evaluations lost between the first and the last would move the thresholds and the
    crossings without a word."""
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    metrics = root / "runs" / "grpo-lr0.0001-s1" / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    metrics.write_text("".join(line + "\n" for i, line in enumerate(lines) if i not in (2, 3)))
    with pytest.raises(ValueError, match=r"grpo-lr0.0001-s1 is finished .* no evaluation at "
                       r"steps 20, 30 of its 50 steps: its records were cut"):  # fmt: skip
        resummarize([root], tmp_path / "m")


def test_a_merged_metrics_file_cut_at_a_line_is_named(tmp_path, capsys):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    resummarize([root], tmp_path / "m")
    merged = tmp_path / "m" / "metrics.jsonl"
    merged.write_text("".join(line + "\n" for line in merged.read_text().splitlines()[:-4]))
    assert main(["summarize", str(tmp_path / "m"), "--out", str(tmp_path / "n")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "seed 2 has no evaluation at steps 20, 30, 40, 50 of its 50" in err[0]
    ), err


def test_a_finished_run_without_its_metrics_file_is_one_line(tmp_path, capsys):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    (root / "runs" / "bot-lr0.0001-s0" / "metrics.jsonl").unlink()
    assert main(["summarize", str(root), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read" in err[0] and "bot-lr0.0001-s0" in err[0], err


def test_the_speed_sentence_names_the_pairs_seeds_and_given_thresholds(tmp_path):
    a = _comparison(tmp_path / "a", 1e-4, ("grpo",), seeds=5)
    b = _comparison(tmp_path / "b", 1e-4, ("bot",), seeds=2)
    text = resummarize([a, b], tmp_path / "m").read_text()
    assert "From 2 seeds this is one observation" in text and "From 5 seeds" not in text
    text = resummarize([a, b], tmp_path / "n", thresholds=(0.3, 0.5)).read_text()
    assert "To reach 0.500 (the middle one of the thresholds given)" in text
    assert "half-way" not in text.split("Lead metric")[0]


def test_a_merge_is_never_written_into_one_of_its_inputs(tmp_path, capsys):
    a = _comparison(tmp_path / "a", 1e-4, ("grpo",))
    b = _comparison(tmp_path / "b", 1e-4, ("bot",))
    assert main(["summarize", str(a), str(b), "--out", str(a)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "merge into a new folder" in err[0], err
    assert not (a / "summary.json").exists()


def test_summary_json_is_strict_json_when_a_run_diverged_and_costs_are_checked(tmp_path):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    metrics = root / "runs" / "bot-lr0.0001-s0" / "metrics.jsonl"
    train = {
        "kind": "train",
        "method": "bot",
        "seed": 0,
        "lr": 1e-4,
        "step": 1,
        "loss": float("nan"),
    }
    metrics.write_text(metrics.read_text() + json.dumps(train) + "\n")
    resummarize([root], tmp_path / "m")

    def refuse(constant):
        raise AssertionError(f"summary.json holds {constant}")

    json.loads((tmp_path / "m" / "summary.json").read_text(), parse_constant=refuse)
    cost = {
        "kind": "cost",
        "method": "bot",
        "seed": 0,
        "lr": 1e-4,
        "step": 50,
        "seconds_per_step": -5.0,
    }
    metrics.write_text(metrics.read_text() + json.dumps(cost) + "\n")
    with pytest.raises(ValueError, match=r"metrics\.jsonl:\d+: seconds_per_step is a cost"):
        resummarize([root], tmp_path / "n")


def test_a_run_folder_mixing_runs_is_named_and_a_missing_ratio_is_explained(tmp_path):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    text = resummarize([root], tmp_path / "m", thresholds=(0.05,)).read_text()
    assert "no speed ratio at 0.050" in text  # every run is there from step 0
    metrics = root / "runs" / "grpo-lr0.0001-s2" / "metrics.jsonl"
    metrics.write_text(metrics.read_text().replace('"method": "grpo"', '"method": "dapo"'))
    with pytest.raises(ValueError, match=r"done.json is grpo seed 2 but .* holds records of dapo"):
        resummarize([root], tmp_path / "n")


def test_summarize_in_place_keeps_the_measured_wall_time(tmp_path):
    """A comparison's summary records the wall time its commands took; summarising it again in
    place trains nothing and keeps that figure (a new folder estimates it from the runs)."""
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    resummarize([root], root)
    s = json.loads((root / "summary.json").read_text())
    assert s["wall_seconds"] == pytest.approx(6 * 60.0 / 2)  # no measure yet: 2 workers
    s["wall_seconds"] = 1234.5
    (root / "summary.json").write_text(json.dumps(s))
    resummarize([root], root, metric="greedy_solved")
    s = json.loads((root / "summary.json").read_text())
    assert (s["wall_seconds"], s["wall_seconds_command"]) == (1234.5, 0.0)
    assert "Wall time 20.6 min" in (root / "summary.md").read_text()


def test_summaries_keep_the_permissions_a_new_file_gets(tmp_path):
    """Files are written through a temporary file renamed into place; they get the permissions
    open() would give (not mkstemp's owner-only 0600), and a replaced file keeps its own."""
    import os

    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    umask = os.umask(0o022)
    try:
        resummarize([root], root)
        assert (root / "summary.json").stat().st_mode & 0o777 == 0o644
        (root / "summary.md").chmod(0o640)
        resummarize([root], root)
        assert (root / "summary.md").stat().st_mode & 0o777 == 0o640
        assert (root / ".botgrpo.json").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(umask)


def test_a_greedy_metric_of_runs_evaluated_without_greedy_is_refused_for_what_it_is(tmp_path):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"), greedy=False)
    with pytest.raises(ValueError, match=r"without greedy completions.*--metric sampled_solved"):
        resummarize([root], tmp_path / "m", metric="greedy_solved")


@pytest.mark.parametrize(
    "done",
    [
        {"seconds": "abc", "settings": {"steps": 50}},
        {"seconds": 60.0, "settings": {}},
        {"seconds": 60.0, "settings": "fast"},
    ],
)
def test_a_done_json_botgrpo_did_not_write_is_named(tmp_path, done):
    root = _comparison(tmp_path / "a", 1e-4, ("grpo", "bot"))
    (root / "runs" / "bot-lr0.0001-s2" / "done.json").write_text(json.dumps(done))
    with pytest.raises(ValueError, match=r"bot-lr0.0001-s2/done.json is not a done.json"):
        resummarize([root], tmp_path / "m")
