"""benchmarks/where_bot_pays.py on a small set of stored records: the map joins each stored
comparison with its step-0 figures, derives the rule from them, and writes the page's table
between its markers, the JSON and the plot; settings not diagnosed yet are left out."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    spec = importlib.util.spec_from_file_location(
        "where_bot_pays", ROOT / "benchmarks" / "where_bot_pays.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def load_part(name: str):
    """One module of the map's package (benchmarks/paymap), importable once the script is."""
    load_script()
    return importlib.import_module(f"paymap.{name}")


def test_the_map_from_a_few_stored_records(tmp_path):
    script = load_script()
    records = tmp_path / "records"
    records.mkdir()
    kept = (
        "chain-4-16",
        "chain-4-7",
        "chain-flip0.2",
        "chain-false_alarm0.3",
        "chain-miss0.3",
        "react",
    )
    for sid in kept:
        shutil.copy(ROOT / "benchmarks" / "records" / "where-bot-pays" / f"{sid}.json", records)
    out = tmp_path / "docs"
    out.mkdir()
    page = out / "where-bot-pays.md"
    render = load_part("render")
    page.write_text(f"# prose before\n\n{render.BEGIN}\nold table\n{render.END}\n\nprose after\n")
    package_map = tmp_path / "map.json"
    script.main(
        [
            "--records",
            str(records),
            "--out",
            str(out),
            "--package-map",
            str(package_map),
            "--report-only",
        ]
    )
    data = json.loads(package_map.read_text())
    assert {s["id"] for s in data["settings"]} == set(kept)
    assert json.loads((out / "where-bot-pays.json").read_text()) == data
    rule = data["rule"]
    assert rule["pays_from_no_signal"] == 0.73 and "chain-4-16 1.69x" in rule["pays_basis"]
    assert rule["ties_below_no_signal"] == 0.5  # chain 4-7, the most silent tie on this set
    # tied on speed, still a little ahead over the run: chain 4-7's AUC +0.0235, rounded up
    assert rule["ties_gain_up_to"] == 0.024 and len(rule["ties_gain_basis"]) == 2
    # the starting solve rate: paid at 7% solved (chain 4-16), tied from 18% (chain 4-7, react)
    assert (rule["pays_up_to_solved"], rule["ties_from_solved"]) == (0.08, 0.17)
    # the share earning outcome credit: the solve rate on chain, react's 36% compiling pages
    assert (rule["pays_up_to_credit"], rule["ties_from_credit"]) == (0.08, 0.17)
    assert rule["separating"] == ["grpo_no_signal", "solved", "outcome_credit"]
    assert rule["overlap_basis"] == {}
    assert rule["min_accuracy"] == 0.78  # 20% flipped (79% right) still kept the lead over the run
    # 43% of 20%-flipped verdicts' flags on wrong steps kept the lead, 39% (30% false alarms) lost it
    assert rule["min_flags_right"] == 0.43 and len(rule["flags_right_basis"]) == 3
    assert all(c["agrees"] for c in data["advice_check"])
    react = next(s for s in data["settings"] if s["id"] == "react")
    assert react["recorded_first_step"]["runs"] == 10  # its kept runs' first steps
    text = page.read_text()
    assert text.startswith("# prose before") and text.rstrip().endswith("prose after")
    assert "old table" not in text and "chain, 4-7 steps" in text
    assert "| `pays_from_no_signal` | 0.73 | BoT paid from this share" in text  # the rule, read
    assert (out / "where-bot-pays.png").read_bytes()[:4] == b"\x89PNG"


def test_the_shipped_map_is_the_docs_map():
    """The copy `botgrpo diagnose` reads is the one docs/results shows."""
    shipped = ROOT / "src" / "botgrpo" / "harness" / "where_bot_pays.json"
    docs = ROOT / "docs" / "results" / "where-bot-pays.json"
    assert json.loads(shipped.read_text()) == json.loads(docs.read_text())


def rule_row(sid, no_signal, solved, low, share=0.04, accuracy=1.0, credit=None):
    """A measured setting as the rule reads it: its speedup interval from ``low`` up."""
    predictors = {
        "grpo_no_signal": {"value": no_signal},
        "solved": {"value": solved},
        "local_share": {"value": share},
        "verdict_accuracy": accuracy,
        "false_alarm": 0.0,
    }
    if credit is not None:
        predictors["outcome_credit"] = {"value": credit}
    return {
        "id": sid,
        "w_s": 0.5,
        "speedup": {"ratio": low + 0.2, "low": low, "high": low + 0.4},
        "auc_diff": {"mean": 0.0, "low": -0.01, "high": 0.01},
        "predictors": predictors,
    }


def test_a_figure_whose_ranges_overlap_is_named_and_left_out_of_the_rule():
    row = rule_row
    rule = load_part("rule").derive_rule(
        [
            row("pages", 0.48, 0.0, 1.2),
            row("rare", 0.89, 0.02, 1.4),
            row("short", 0.5, 0.18, 0.9),
            # a learned verifier at a low w_s: not an exact-verdict setting, but it paid
            row("learned", 0.7, 0.05, 1.1, share=0.0105, accuracy=0.998),
            row("quiet, noisy", 0.9, 0.02, 0.8, share=0.002, accuracy=0.7),
        ]
    )
    assert rule["pays_from_no_signal"] == 0.48 and rule["ties_below_no_signal"] == 0.5
    assert rule["separating"] == ["solved"]
    assert rule["overlap_basis"] == {"grpo_no_signal": ["pages paid at 0.48", "short tied at 0.50"]}
    assert (rule["pays_up_to_solved"], rule["ties_from_solved"]) == (0.02, 0.18)
    # the quietest local signal that paid, whatever its verdicts
    assert rule["pays_from_local_share"] == 0.0105 and rule["local_share_basis"] == [
        "learned 1.30x"
    ]
    table = "\n".join(load_part("render").render_rule(rule))
    assert (
        "| `pays_from_local_share` | 0.0105 | the quietest local signal that still paid |" in table
    )
    assert "| `pays_from_no_signal` | 0.48 (left out: overlaps) |" in table
    assert "| `pays_up_to_solved` | 0.02 | BoT paid" in table
    assert (
        "Left out, its ranges overlap: silent share (pages paid at 0.48, short tied at 0.50)"
        in table
    )


def test_the_outcome_credit_is_read_where_the_solve_rate_overlaps():
    """Long pages that paid and tied at 0% solved: the solve rate cannot separate them, the
    share of rollouts earning outcome credit (the compile rate there) can."""

    def row(sid, no_signal, solved, credit, low):
        return rule_row(sid, no_signal, solved, low, credit=credit)

    rule = load_part("rule").derive_rule(
        [
            row("pages-hard", 0.75, 0.0, 0.035, 1.7),
            row("pages-middle", 0.45, 0.0, 0.105, 1.2),
            row("pages-easy", 0.1, 0.0, 0.295, 0.9),
            row("chain-easy", 0.5, 0.18, 0.18, 0.95),
        ]
    )
    assert rule["separating"] == ["outcome_credit"]
    assert (rule["pays_up_to_credit"], rule["ties_from_credit"]) == (0.11, 0.18)
    assert set(rule["overlap_basis"]) == {"grpo_no_signal", "solved"}
    table = "\n".join(load_part("render").render_rule(rule))
    assert "| `pays_up_to_credit` | 0.11 | BoT paid up to this share" in table
    assert "| `pays_up_to_solved` | 0 (left out: overlaps) |" in table
    assert "the advice reads these): outcome credit." in table


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--out", "{tmp}/missing"], "is not a folder"),
        (["--records", "{tmp}/none"], "run without --report-only first"),
        (["--records", "{tmp}"], "nothing to map"),
        (["--prompts", "0"], "--prompts must be at least 1"),
        (["--out", ""], "an empty path"),
        (["--package-map", "{tmp}"], "is a folder: name the JSON file"),
    ],
)
def test_bad_inputs_end_in_one_line_and_write_nothing(tmp_path, capsys, extra, says):
    script = load_script()
    args = ["--report-only", "--out", str(tmp_path), "--package-map", str(tmp_path / "m.json")]
    with pytest.raises(SystemExit) as exit_info:
        script.main(args + [a.format(tmp=tmp_path) for a in extra])
    assert exit_info.value.code == 2
    assert says in capsys.readouterr().err.strip().splitlines()[-1]
    assert list(tmp_path.iterdir()) == []


def test_the_code_regime_arms_join_the_map_with_their_verdicts(tmp_path):
    """bot, its random-line control and its w_s = 0 ablation, each against grpo, become
    settings diagnosed with the verdicts and w_s they trained with; other pairs do not."""
    speed = {"half-way": {"ratio": 1.2, "low": 1.1, "high": 1.3, "censoring": ""}}
    pairs = [
        {"arm": arm, "baseline": base, "speedup": speed, "auc_diff": [0.1, 0.05, 0.15]}
        for arm, base in (
            ("bot", "grpo"),
            ("bot random lines", "grpo"),
            ("bot w_s=0", "grpo"),
            ("bot", "bot random lines"),
            ("otb", "grpo"),
        )
    ]
    report = {"id": "react-pages-hard", "label": "pages", "task": "react:x", "model": "warm:p"}
    (tmp_path / "regime-hard-report.json").write_text(json.dumps({**report, "pairs": pairs}))
    got = {s.id: s for s in load_part("settings").code_regime_settings(tmp_path)}
    assert set(got) == {"react-pages-hard", "react-pages-hard-random", "react-pages-hard-ws0"}
    control = got["react-pages-hard-random"]
    assert (control.verdict_noise, control.exact_verdicts, control.w_s) == ("1:random", False, 0.5)
    assert control.label == "pages, line verdicts 1:random"
    assert (got["react-pages-hard-ws0"].w_s, got["react-pages-hard"].exact_verdicts) == (0.0, True)


def test_the_flags_precision_is_read_only_where_it_separates_kept_from_lost():
    """min_flags_right: the least precise flags among the noisy-verdict settings (w_s 0.5) that
    kept their lead over the run, read only where every setting that lost it flagged less
    precisely; exact verdicts, other weights and learned verifiers are not its basis."""
    rule, render = load_part("rule"), load_part("render")

    def row(sid, flags, auc_low, noise="0.2:flip", w_s=0.5):
        return {
            "id": sid,
            "w_s": w_s,
            "verdict_noise": noise,
            "speedup": {"ratio": 1.0, "low": 0.9, "high": 1.1},
            "auc_diff": {"mean": auc_low + 0.02, "low": auc_low, "high": auc_low + 0.04},
            "predictors": {"flags_right": flags},
        }

    rows = [
        row("flip0.1", 0.63, 0.015),
        row("flip0.2", 0.437, 0.015),
        row("miss0.3", 1.0, 0.009, noise="0.3:miss"),
        row("false_alarm0.3", 0.39, -0.05, noise="0.3:false_alarm"),
        row("pages random", 0.07, -0.1, noise="1:random"),
        row("at w_s 1", 0.2, 0.01, w_s=1.0),  # another weight: not counted
        row("exact", 1.0, -0.01, noise=""),  # no noise put in: not counted
    ]
    got = rule._flags_right(rows)
    assert got["min_flags_right"] == 0.43
    assert got["flags_right_basis"][0] == "flip0.1 0.63, AUC +0.035"
    assert len(got["flags_right_basis"]) == 5
    table = "\n".join(render.render_rule(got))
    assert "| `min_flags_right` | 0.43 | of the steps judged wrong" in table
    # a setting that lost its lead with more precise flags than one that kept it: not read
    overlap = rule._flags_right([*rows, row("noisy loss", 0.5, -0.02)])
    assert "min_flags_right" not in overlap and len(overlap["flags_right_overlap"]) == 6
    assert "Not read, its ranges overlap: the flags' precision" in "\n".join(
        render.render_rule(overlap)
    )
    assert rule._flags_right(rows[:3]) == {}  # nothing lost: nothing to read


def test_a_records_path_that_is_a_file_or_a_broken_record_is_named(tmp_path, capsys):
    """--records naming a file ends before any diagnosis; a stored diagnosis that cannot be read
    is named with its fix, and nothing is written."""
    script = load_script()
    out = tmp_path / "out"
    out.mkdir()
    records = tmp_path / "records"
    records.write_text("")
    args = ["--out", str(out), "--package-map", str(out / "m.json")]
    with pytest.raises(SystemExit) as exit_info:
        script.main([*args, "--records", str(records)])
    assert exit_info.value.code == 2
    assert "is a file: give a folder" in capsys.readouterr().err.strip().splitlines()[-1]
    with pytest.raises(SystemExit):  # with --report-only too, the same line
        script.main([*args, "--records", str(records), "--report-only"])
    assert "is a file: give a folder" in capsys.readouterr().err.strip().splitlines()[-1]
    records.unlink()
    records.mkdir()
    first = load_part("settings").stored_settings()[0].id
    for broken in ("{", "{}", '{"figures": {}, "verdicts": {}}'):
        (records / f"{first}.json").write_text(broken)
        with pytest.raises(SystemExit) as exit_info:
            script.main([*args, "--records", str(records), "--report-only"])
        assert exit_info.value.code == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"{first}.json" in last and "delete it to diagnose again" in last
    assert list(out.iterdir()) == []


def test_a_code_regime_settings_first_steps_are_read_from_its_comparison(tmp_path):
    """Each code family's settings find their comparison's kept runs (react pages in
    regime-<point>, python functions in regime-python-<point>); other ids find none."""
    diagnoses = load_part("diagnoses")
    assert diagnoses.regime_folder("react-pages-hard-random") == "regime-hard-random"
    assert diagnoses.regime_folder("python-helpers-middle") == "regime-python-middle"
    assert diagnoses.regime_folder("chain-4-16") == ""
    run = tmp_path / "regime-python-hard" / "runs" / "grpo-s0"
    run.mkdir(parents=True)
    rows = [
        {"kind": "train", "step": 1, "method": "grpo", "bot/frac_zero_signal_groups": 0.25},
        {"kind": "train", "step": 2, "method": "grpo", "bot/frac_zero_signal_groups": 0.5},
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = diagnoses.recorded_first_step("python-helpers-hard", tmp_path)
    assert first == {"grpo_no_signal": 0.25, "local_share": None, "runs": 1}
    assert diagnoses.recorded_first_step("chain-4-16", tmp_path) is None


def test_a_tie_on_speed_that_led_over_the_run_says_so_and_a_bound_near_zero_keeps_its_side():
    rule = load_part("rule")
    render = load_part("render")
    row = {"id": "x", "speedup": {"ratio": 0.99}, "auc_diff": {"mean": 0.019, "low": 0.0002}}
    assert rule._tie(row) == "x 0.99x, ahead over the run (AUC +0.019)"
    row["auc_diff"]["low"] = -0.001
    assert rule._tie(row) == "x 0.99x"
    entry = {"mean": 0.0192, "low": 0.00025, "high": 0.0382}
    assert render._iv(entry, "+.3f") == "+0.019 (+0.0003-+0.038)"
    assert render._iv({"mean": 0.0, "low": 0.0, "high": 0.01}, "+.3f") == "+0.000 (+0.000-+0.010)"


def test_another_out_leaves_the_package_map_alone(tmp_path, monkeypatch):
    """With --out other than docs/results and no --package-map, the map is written there only:
    the package's copy that `botgrpo diagnose` reads is never replaced from a trial folder."""
    script = load_script()
    shipped = tmp_path / "shipped.json"
    shipped.write_text("{}")
    monkeypatch.setattr(script, "PACKAGE_MAP", shipped)
    records = tmp_path / "records"
    records.mkdir()
    shutil.copy(ROOT / "benchmarks" / "records" / "where-bot-pays" / "react.json", records)
    out = tmp_path / "out"
    out.mkdir()
    script.main(["--records", str(records), "--out", str(out), "--report-only"])
    assert shipped.read_text() == "{}"
    assert sorted(p.name for p in out.iterdir()) == [
        "where-bot-pays.json",
        "where-bot-pays.md",
        "where-bot-pays.png",
    ]


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("figures", "local_share", float("nan")),
        ("figures", "solved", "abc"),
        ("figures", "grpo_no_signal", 1.5),
        ("lengths", "mean_tokens", -3),
    ],
)
def test_a_record_with_a_figure_out_of_range_is_named_before_anything_is_written(
    tmp_path, capsys, section, key, value
):
    script = load_script()
    records = tmp_path / "records"
    records.mkdir()
    record = json.loads(
        (ROOT / "benchmarks" / "records" / "where-bot-pays" / "react.json").read_text()
    )
    entry = record[section][key]
    if isinstance(entry, dict):
        entry["value"] = value
    else:
        record[section][key] = value
    (records / "react.json").write_text(json.dumps(record))
    out = tmp_path / "out"
    out.mkdir()
    args = ["--records", str(records), "--out", str(out), "--package-map", str(out / "m.json")]
    with pytest.raises(SystemExit) as exit_info:
        script.main([*args, "--report-only"])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{section}.{key}" in last and "delete it to diagnose again" in last
    assert list(out.iterdir()) == []
