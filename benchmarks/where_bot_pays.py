"""One map of where BoT pays: every stored BoT-vs-GRPO comparison against what a user can measure
before training.

For each measured setting it reads the comparison's result (steps to the half-way level, GRPO /
BoT, and the AUC difference, 5 seeds, paired 95% intervals) from the file the comparison left
(docs/results/*.json, benchmarks/records/*) and measures the setting's step-0 figures with
``botgrpo diagnose``'s own function (:mod:`botgrpo.harness.diagnose`) on the setting's starting
model and task: the share of GRPO's groups with no signal, the local signal's share of BoT's
token reward, the starting solve rate, completion length, and the verdicts' accuracy and
their flags' precision (the share of the steps judged wrong that are wrong) against the exact
ones. Those measurements are kept in ``--records`` (one JSON per setting), so the
command resumes, and ``--report-only`` rewrites the page from what is there.

Writes docs/results/where-bot-pays.md, .json and .png, and the copy of the map that
``botgrpo diagnose`` reads (src/botgrpo/harness/where_bot_pays.json).

    python benchmarks/where_bot_pays.py [--records benchmarks/records/where-bot-pays]
        [--prompts 64] [--report-only]

A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
RECORDS = ROOT / "benchmarks" / "records"
PACKAGE_MAP = ROOT / "src" / "botgrpo" / "harness" / "where_bot_pays.json"


@dataclass
class Setting:
    """One measured BoT-vs-GRPO comparison and how to diagnose its starting point."""

    id: str
    label: str
    page: str
    task: str
    model: str
    result: dict  # speedup {ratio, low, high, censoring}, auc_diff {mean, low, high}, finals
    verdict_noise: str = ""
    step_verifier: str = ""
    w_s: float = 0.5
    exact_verdicts: bool = True


def _speedup(ratio, low, high, censoring=""):
    return {"ratio": ratio, "low": low, "high": high, "censoring": censoring}


def _auc(mean, low, high):
    return {"mean": mean, "low": low, "high": high}


def stored_settings() -> list[Setting]:
    """Every stored BoT-vs-GRPO comparison with its result (those whose files are present)."""
    out: list[Setting] = []
    difficulty = RESULTS / "difficulty.json"
    if difficulty.is_file():
        names = {
            "chain:min_steps=4,max_steps=7": ("chain-4-7", "chain, 4-7 steps"),
            "chain": ("chain-4-16", "chain, 4-16 steps (default)"),
            "chain:min_steps=12,max_steps=16": ("chain-12-16", "chain, 12-16 steps"),
        }
        for row in json.loads(difficulty.read_text()):
            sid, label = names[row["task"]]
            sp, auc = row["speedup"], row["auc_difference"]
            out.append(
                Setting(
                    sid,
                    label,
                    "difficulty.md",
                    row["task"],
                    "warm:chain",
                    {
                        "speedup": _speedup(sp["ratio"], sp["low"], sp["high"], sp["censoring"]),
                        "auc_diff": _auc(auc["mean"], auc["low"], auc["high"]),
                        "final": row["final"],
                        "start": row["start"],
                    },
                )
            )
    noise = RESULTS / "verdict-noise.json"
    if noise.is_file():
        for row in json.loads(noise.read_text())["settings"]:
            if row["task"] == "columns":
                continue  # its converged warm start is not kept: see columns below
            if row["setting"] == "clean":
                sid, label = "chain-noise-clean", "chain, exact verdicts (noise map's replicate)"
            else:
                sid, label = f"chain-{row['setting']}", f"chain, verdicts {row['verdict_noise']}"
                if row["w_s"] != 0.5:
                    label += f", w_s {row['w_s']:g}"
            out.append(
                Setting(
                    sid,
                    label,
                    "verdict-noise.md",
                    "chain",
                    "warm:chain",
                    {
                        "speedup": _speedup(*row["speedup"], row["censoring"]),
                        "auc_diff": _auc(*row["auc_diff"]),
                        "final": {"grpo": row["grpo_final"], "bot": row["bot_final"]},
                    },
                    verdict_noise=row["verdict_noise"],
                    w_s=row["w_s"],
                    exact_verdicts=not row["verdict_noise"],
                )
            )
    prm = RECORDS / "prm-chain-map.json"
    if prm.is_file():
        data = json.loads(prm.read_text())
        for row in data["rows"]:
            if row["setting"] == "clean":
                continue  # the exact-verdict replicate of the same task: kept as chain-prm-clean
            out.append(
                Setting(
                    f"chain-{row['setting']}",
                    f"chain, verdicts of a learned PRM, w_s {row['w_s']:g}",
                    "prm.md",
                    "chain",
                    "warm:chain",
                    {
                        "speedup": _speedup(
                            row["speedup"],
                            row["speedup_low"],
                            row["speedup_high"],
                            row["censoring"],
                        ),
                        "auc_diff": _auc(row["auc_diff"], row["auc_low"], row["auc_high"]),
                        "final": {"grpo": data["grpo_final"], "bot": row["bot_final"]},
                    },
                    step_verifier=row["step_verifier"],
                    w_s=row["w_s"],
                    exact_verdicts=False,
                )
            )
        clean = next((r for r in data["rows"] if r["setting"] == "clean"), None)
        if clean is not None:
            out.append(
                Setting(
                    "chain-prm-clean",
                    "chain, exact verdicts (PRM page's replicate)",
                    "prm.md",
                    "chain",
                    "warm:chain",
                    {
                        "speedup": _speedup(
                            clean["speedup"],
                            clean["speedup_low"],
                            clean["speedup_high"],
                            clean["censoring"],
                        ),
                        "auc_diff": _auc(clean["auc_diff"], clean["auc_low"], clean["auc_high"]),
                        "final": {"grpo": data["grpo_final"], "bot": clean["bot_final"]},
                    },
                )
            )
    for task, page in (("python", "python-tiny.md"), ("react", "react-tiny.md")):
        report = RESULTS / f"{task}-5seed.report.json"
        if not report.is_file():
            continue
        data = json.loads(report.read_text())
        for pair in data["pairs"]:
            if pair["baseline"] != "grpo" or pair["arm"] not in ("bot", "bot w_s=0"):
                continue
            sp = pair["speedup"]["half-way"]
            w_s = 0.0 if pair["arm"] == "bot w_s=0" else 0.5
            out.append(
                Setting(
                    f"{task}" + ("-ws0" if w_s == 0 else ""),
                    f"{task} (code, line verdicts)" + (", w_s 0" if w_s == 0 else ""),
                    page,
                    task,
                    f"warm:{task}",
                    {
                        "speedup": _speedup(sp["ratio"], sp["low"], sp["high"], sp["censoring"]),
                        "auc_diff": _auc(*pair["auc_diff"]),
                    },
                    w_s=w_s,
                )
            )
    out += code_regime_settings()
    return out


#: The BoT arms of a code regime report that the map holds against GRPO: arm -> (id suffix,
#: label suffix, the verdict noise diagnose measures it with, w_s).
CODE_REGIME_ARMS = {
    "bot": ("", "", "", 0.5),
    "bot random lines": ("-random", ", line verdicts 1:random", "1:random", 0.5),
    "bot w_s=0": ("-ws0", ", w_s 0", "", 0.0),
}


def code_regime_settings() -> list[Setting]:
    """The long code settings' comparisons (benchmarks/code_regime.py), where finished and
    where the arm's speedup over GRPO to the half-way level was measured (both learned): BoT,
    and at the hardest point its random-line control and its w_s = 0 ablation."""
    out = []
    for report in sorted(RECORDS.glob("regime-*-report.json")):
        data = json.loads(report.read_text())
        for pair in data.get("pairs", []):
            if pair["arm"] not in CODE_REGIME_ARMS or pair["baseline"] != "grpo":
                continue
            suffix, label, noise, w_s = CODE_REGIME_ARMS[pair["arm"]]
            sp = (pair.get("speedup") or {}).get("half-way")
            low, high = pair["auc_diff"][1], pair["auc_diff"][2]
            if sp is None or low is None:
                print(
                    f"where_bot_pays: {report.name}, {pair['arm']}: no speedup with an "
                    "interval: left out"
                )
                continue
            out.append(
                Setting(
                    data["id"] + suffix,
                    data["label"] + label,
                    "code-regime.md",
                    data["task"],
                    data["model"],
                    {
                        "speedup": _speedup(sp["ratio"], sp["low"], sp["high"], sp["censoring"]),
                        "auc_diff": _auc(pair["auc_diff"][0], low, high),
                    },
                    verdict_noise=noise,
                    w_s=w_s,
                    exact_verdicts=not noise,
                )
            )
    return out


#: What the map reads of a stored diagnosis (:func:`predictors`, :func:`advice_check`).
RECORD_KEYS = (
    ("figures", "grpo_no_signal"),
    ("figures", "bot_no_signal"),
    ("figures", "local_share"),
    ("figures", "solved"),
    ("lengths", "mean_tokens"),
    ("verdicts",),
)


class RecordError(ValueError):
    """A stored diagnosis that cannot be used."""


def load_record(path: Path) -> dict:
    """A stored diagnosis; one that cannot be read names its file and the fix."""
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path} cannot be read ({err}): delete it to diagnose again") from None
    missing = [
        ".".join(key)
        for key in RECORD_KEYS
        if not isinstance(record, dict)
        or not isinstance(record.get(key[0]), dict)
        or (len(key) > 1 and key[1] not in record[key[0]])
    ]
    if missing:
        raise RecordError(
            f"{path} is not a diagnosis (no {', '.join(missing)}): delete it to diagnose again"
        )
    return record


def measure(setting: Setting, records: Path, prompts: int) -> dict:
    """The setting's step-0 figures (cached in ``records``)."""
    path = records / f"{setting.id}.json"
    if path.is_file():
        return load_record(path)
    from botgrpo.harness.diagnose import DiagnoseConfig, diagnose

    cfg = DiagnoseConfig(
        task=setting.task,
        model=setting.model,
        prompts=prompts,
        w_s=setting.w_s,
        verdict_noise=setting.verdict_noise,
        step_verifier=setting.step_verifier,
        progress=False,
    )
    print(f"where_bot_pays: diagnosing {setting.id}", flush=True)
    result = diagnose(cfg)
    result.pop("examples", None)
    records.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str))
    return result


def predictors(setting: Setting, diagnosis: dict) -> dict:
    f, v = diagnosis["figures"], diagnosis["verdicts"]
    accuracy = 1.0 if setting.exact_verdicts else v.get("verdict_accuracy")
    return {
        "grpo_no_signal": f["grpo_no_signal"],
        "bot_no_signal": f["bot_no_signal"],
        "local_share": f["local_share"],
        "solved": f["solved"],
        "mean_tokens": diagnosis["lengths"]["mean_tokens"],
        "verdict_accuracy": accuracy,
        "false_alarm": 0.0 if setting.exact_verdicts else v.get("false_alarm"),
        "miss": 0.0 if setting.exact_verdicts else v.get("miss"),
        "flags_right": 1.0 if setting.exact_verdicts else v.get("flags_right"),
    }


#: Settings whose comparison kept its runs' records, and the folder: the first training step's
#: figures there check what diagnose measured before any training.
RECORDED = {
    "chain-prm-clean": "prm-chain-clean",
    "react": "react-5seed",
    "react-ws0": "react-5seed-ws0",
}


def recorded_first_step(setting_id: str) -> dict | None:
    """GRPO's groups without signal and BoT's local share at the first training step of the
    setting's stored runs (the test seeds), where its records are kept."""
    # else a code regime comparison: react-pages-hard in regime-hard, its control
    # react-pages-hard-random in regime-hard-random
    folder = RECORDS / RECORDED.get(setting_id, f"regime-{setting_id.removeprefix('react-pages-')}")
    runs = sorted((folder / "runs").glob("*/metrics.jsonl")) if folder.is_dir() else []
    zero, share = [], []
    for path in runs:
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("kind") != "train" or r.get("step") != 1:
                continue
            if r["method"] == "grpo":
                zero.append(r["bot/frac_zero_signal_groups"])
            if r["method"] == "bot" and "bot/local_share" in r:
                share.append(r["bot/local_share"])
    if not zero and not share:
        return None
    return {
        "grpo_no_signal": sum(zero) / len(zero) if zero else None,
        "local_share": sum(share) / len(share) if share else None,
        "runs": len(zero) + len(share),
    }


def _separation(pays: list[dict], ties: list[dict]) -> dict:
    """The starting solve rate's thresholds (BoT paid at or below ``pays_up_to_solved``, tied
    at or above ``ties_from_solved``) and which of the two step-0 figures separate the settings
    where BoT paid from those where it tied (``separating``): a figure whose ranges overlap
    cannot tell them apart, and the settings that overlap are named (``overlap_basis``)."""

    def value(r, name):
        return r["predictors"][name]["value"]

    out: dict = {
        "pays_up_to_solved": math.ceil(max(value(r, "solved") for r in pays) * 100) / 100,
        "ties_from_solved": math.floor(min(value(r, "solved") for r in ties) * 100) / 100,
        "separating": [],
        "overlap_basis": {},
    }
    # silent groups: more of them where BoT pays; starting solve rate: lower where BoT pays
    for name, pay_side in (("grpo_no_signal", 1), ("solved", -1)):
        edge_pay = min(pay_side * value(r, name) for r in pays)
        edge_tie = max(pay_side * value(r, name) for r in ties)
        if edge_pay > edge_tie:
            out["separating"].append(name)
            continue
        out["overlap_basis"][name] = sorted(
            [
                f"{r['id']} paid at {value(r, name):.2f}"
                for r in pays
                if pay_side * value(r, name) <= edge_tie
            ]
            + [
                f"{r['id']} tied at {value(r, name):.2f}"
                for r in ties
                if pay_side * value(r, name) >= edge_pay
            ]
        )
    return out


def derive_rule(rows: list[dict]) -> dict:
    """The rule's thresholds from the measured settings (each clause lists its basis)."""
    exact = [r for r in rows if r["predictors"]["verdict_accuracy"] == 1.0 and r["w_s"] > 0]
    pays = [r for r in exact if r["speedup"]["low"] > 1.0]
    ties = [r for r in exact if r["speedup"]["low"] <= 1.0 <= r["speedup"]["high"]]
    noisy = [r for r in rows if r["id"].startswith("chain-flip") and r["w_s"] == 0.5]
    kept = [r for r in noisy if r["auc_diff"]["low"] > 0]
    lost = [r for r in noisy if r["auc_diff"]["low"] <= 0]

    def no_signal(r):
        return r["predictors"]["grpo_no_signal"]["value"]

    rule: dict = {}
    if pays:
        low = min(pays, key=no_signal)
        rule["pays_from_no_signal"] = math.floor(no_signal(low) * 100) / 100
        rule["pays_basis"] = [f"{r['id']} {r['speedup']['ratio']:.2f}x" for r in pays]
    # the quietest local signal that still paid, whatever its verdicts (a learned PRM at a
    # low w_s is as informative here as exact verdicts)
    paid = [r for r in rows if r["speedup"]["low"] > 1.0 and r["w_s"] > 0]
    if paid:
        quietest = min(paid, key=lambda r: r["predictors"]["local_share"]["value"])
        share = quietest["predictors"]["local_share"]["value"]
        rule["pays_from_local_share"] = math.floor(share * 10000) / 10000
        rule["local_share_basis"] = [f"{quietest['id']} {quietest['speedup']['ratio']:.2f}x"]
    if ties:
        rule["ties_below_no_signal"] = math.ceil(max(no_signal(r) for r in ties) * 100) / 100
        rule["ties_basis"] = [f"{r['id']} {r['speedup']['ratio']:.2f}x" for r in ties]
    if pays and ties:
        rule.update(_separation(pays, ties))
    if kept:
        lowest = min(r["predictors"]["verdict_accuracy"] for r in kept)
        rule["min_accuracy"] = math.floor(lowest * 100) / 100
        rule["accuracy_basis"] = [
            f"{r['id']} AUC {r['auc_diff']['mean']:+.3f}" for r in kept + lost
        ]
    fa = [r for r in rows if r["id"] == "chain-false_alarm0.3"]
    miss = [r for r in rows if r["id"] == "chain-miss0.3"]
    alarms = [r["predictors"]["false_alarm"] for r in kept if r["predictors"]["false_alarm"]]
    if fa and miss and alarms:
        rule["max_false_alarm"] = math.ceil(max(alarms) * 100) / 100  # kept the lead up to here
        weights = [r for r in rows if r["id"].startswith("chain-flip0.2-ws")]
        rule["noisy_w_s"] = 0.5
        top = max((r["predictors"]["verdict_accuracy"] for r in weights), default=0.0)
        rule["noisy_w_s_up_to"] = math.ceil(top * 100) / 100  # the accuracy it was measured at
        rule["noisy_w_s_basis"] = [f"{r['id']} AUC {r['auc_diff']['mean']:+.3f}" for r in weights]
        rule["accuracy_basis"] = [
            *rule.get("accuracy_basis", []),
            f"{fa[0]['id']} {fa[0]['speedup']['ratio']:.2f}x",
            f"{miss[0]['id']} {miss[0]['speedup']['ratio']:.2f}x",
        ]
    rule.update(_flags_right(rows))
    return rule


def _flags_right(rows: list[dict]) -> dict:
    """``min_flags_right``: the lowest share of flagged steps that were wrong among the
    settings with noise put into their verdicts (at w_s 0.5) whose lead over the run held (AUC
    difference above 0), where every setting that lost it flagged less precisely; else the
    overlap is named and no threshold is read."""
    noisy = [
        r
        for r in rows
        if r.get("verdict_noise")
        and r["w_s"] == 0.5
        and r["predictors"].get("flags_right") is not None
    ]
    kept = [r for r in noisy if r["auc_diff"]["low"] > 0]
    lost = [r for r in noisy if r["auc_diff"]["low"] <= 0]
    if not kept or not lost:
        return {}

    def flags(r):
        return r["predictors"]["flags_right"]

    basis = [f"{r['id']} {flags(r):.2f}, AUC {r['auc_diff']['mean']:+.3f}" for r in kept + lost]
    if max(map(flags, lost)) >= min(map(flags, kept)):
        return {"flags_right_overlap": basis}
    return {
        "min_flags_right": math.floor(min(map(flags, kept)) * 100) / 100,
        "flags_right_basis": basis,
    }


#: What each piece of advice expects the comparison to have measured.
EXPECTED = {
    "bot": ("ahead",),
    "grpo or dapo (bot ties)": ("level",),
    "fix the verifier first": ("behind", "level"),
    "bot (a smaller gain likely)": ("ahead", "level"),
    "bot at w_s 0.5": ("level", "behind"),  # the setting as it is (another w_s) will not lead
}


def measured_outcome(row: dict) -> str:
    """ahead: BoT's speedup or AUC difference has its interval above no difference; behind:
    one below it; level otherwise."""
    sp, auc = row["speedup"], row["auc_diff"]
    if sp["low"] > 1.0 or auc["low"] > 0.0:
        return "ahead"
    if sp["high"] < 1.0 or auc["high"] < 0.0:
        return "behind"
    return "level"


def advice_check(data: dict, records: Path) -> list[dict]:
    """diagnose's advice on each setting's own step-0 figures against what its comparison
    measured."""
    import sys

    sys.path.insert(0, str(ROOT / "src"))
    from botgrpo.harness.advice import advise

    out = []
    for row in data["settings"]:
        diagnosis = load_record(records / f"{row['id']}.json")
        diagnosis["verdicts"] = {
            **diagnosis["verdicts"],
            "verdict_accuracy": row["predictors"]["verdict_accuracy"],
            "false_alarm": row["predictors"]["false_alarm"],
            "flags_right": row["predictors"].get("flags_right"),
        }
        advice = advise(diagnosis, data)["try"]
        outcome = measured_outcome(row)
        out.append(
            {
                "id": row["id"],
                "advice": advice,
                "measured": outcome,
                "agrees": outcome in EXPECTED.get(advice, ()),
            }
        )
    return out


def build(args) -> dict:
    rows = []
    for setting in stored_settings():
        if args.report_only and not (args.records / f"{setting.id}.json").is_file():
            print(f"where_bot_pays: {setting.id} not diagnosed yet: left out")
            continue
        diagnosis = measure(setting, args.records, args.prompts)
        rows.append(
            {
                "recorded_first_step": recorded_first_step(setting.id),
                "id": setting.id,
                "label": setting.label,
                "page": setting.page,
                "task": setting.task,
                "w_s": setting.w_s,
                "verdict_noise": setting.verdict_noise,
                **setting.result,
                "predictors": predictors(setting, diagnosis),
            }
        )
    data = {"settings": rows, "rule": derive_rule(rows)}
    data["advice_check"] = advice_check(data, args.records)
    return data


def _iv(entry, fmt=".2f", suffix="") -> str:
    if entry is None:
        return "n/a"
    value = entry.get("value", entry.get("ratio", entry.get("mean")))
    if value is None:
        return "n/a"
    text = f"{value:{fmt}}{suffix}"
    if entry.get("low") is not None:
        text += f" ({entry['low']:{fmt}}-{entry['high']:{fmt}})"
    return text


def render_map(data: dict) -> str:
    """The map's table (the page's prose is written around it in docs/results)."""
    lines = [
        "| setting | BoT vs GRPO, steps to half-way | AUC difference | GRPO groups without "
        "signal at step 0 | local share of BoT's reward | solved at step 0 | tokens | "
        "verdicts right | flagged steps wrong | page |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(data["settings"], key=lambda r: -r["predictors"]["grpo_no_signal"]["value"]):
        p = r["predictors"]
        speed = _iv(r["speedup"], ".2f", "x")
        if r["speedup"].get("censoring"):
            speed += " *"
        acc = "n/a" if p["verdict_accuracy"] is None else f"{p['verdict_accuracy']:.2f}"
        flags = "n/a" if p.get("flags_right") is None else f"{p['flags_right']:.2f}"
        lines.append(
            f"| {r['label']} | {speed} | {_iv(r['auc_diff'], '+.3f')} | "
            f"{_iv(p['grpo_no_signal'])} | {_iv(p['local_share'], '.3f')} | "
            f"{_iv(p['solved'])} | {p['mean_tokens']:.0f} | {acc} | {flags} | [{r['page']}]({r['page']}) |"
        )
    lines.append("")
    lines.append("\\* censored: some runs never reached the level (see the page).")
    lines.append("")
    lines += render_rule(data["rule"])
    lines += [
        "",
        "Diagnose at step 0 against the first training step of the kept runs:",
        "",
        "| setting | GRPO groups without signal: diagnose / recorded | local share: "
        "diagnose / recorded | runs |",
        "|---|---|---|---|",
    ]
    for r in data["settings"]:
        rec = r.get("recorded_first_step")
        if not rec:
            continue
        p = r["predictors"]
        z = "n/a" if rec["grpo_no_signal"] is None else f"{rec['grpo_no_signal']:.3f}"
        sh = "n/a" if rec["local_share"] is None else f"{rec['local_share']:.3f}"
        lines.append(
            f"| {r['label']} | {_iv(p['grpo_no_signal'], '.3f')} / {z} | "
            f"{_iv(p['local_share'], '.3f')} / {sh} | {rec['runs']} |"
        )
    checks = data.get("advice_check", [])
    if checks:
        agree = sum(c["agrees"] for c in checks)
        lines += [
            "",
            f"diagnose's advice on each setting's own step-0 figures against what its "
            f"comparison measured (ahead / level / behind: an interval of the speedup or "
            f"the AUC difference above, around or below no difference): {agree} of "
            f"{len(checks)} agree (a consistency check, not a test on new settings: the rule's "
            "thresholds are read from these same settings).",
            "",
            "| setting | advice | measured | agrees |",
            "|---|---|---|---|",
        ]
        for c in checks:
            lines.append(
                f"| {c['id']} | {c['advice']} | {c['measured']} | {'yes' if c['agrees'] else '**no**'} |"
            )
    return "\n".join(lines) + "\n"


#: Each threshold of the rule: what it says, how it is read from the table.
RULE_ROWS = (
    (
        "pays_from_no_signal",
        "BoT paid from this share of silent GRPO groups up",
        "pays_basis",
        "the lowest silent share among the exact-verdict settings whose speedup interval lies "
        "above 1",
    ),
    (
        "ties_below_no_signal",
        "BoT tied up to this share of silent groups",
        "ties_basis",
        "the highest silent share among the exact-verdict settings whose interval includes 1",
    ),
    (
        "pays_up_to_solved",
        "BoT paid up to this starting solve rate",
        "pays_basis",
        "the highest solve rate among those that paid",
    ),
    (
        "ties_from_solved",
        "BoT tied from this starting solve rate up",
        "ties_basis",
        "the lowest solve rate among those that tied",
    ),
    (
        "pays_from_local_share",
        "the quietest local signal that still paid",
        "local_share_basis",
        "the lowest local share among all settings (any verdicts) whose interval lies above 1",
    ),
    (
        "min_accuracy",
        "verdicts right at least this often kept BoT's lead over the run",
        "accuracy_basis",
        "the lowest accuracy among the flipped-verdict settings whose AUC "
        "difference stayed above 0",
    ),
    (
        "max_false_alarm",
        "right steps judged wrong, at most this share, kept the lead",
        "accuracy_basis",
        "the most false alarms among those settings",
    ),
    (
        "min_flags_right",
        "of the steps judged wrong, at least this share wrong kept the lead",
        "flags_right_basis",
        "the lowest flags' precision among the settings with noisy verdicts (w_s 0.5) whose AUC "
        "difference stayed above 0; every setting that lost it lies below",
    ),
    (
        "noisy_w_s",
        "with verdicts as noisy as this (right this often), the only weight that kept the lead",
        "noisy_w_s_basis",
        "w_s 0.1, 0.5 and 1 at 20% flipped verdicts",
    ),
)


#: The step-0 figure each pays/ties threshold reads (the advice uses it only while separating).
FIGURE_OF = {
    "pays_from_no_signal": "grpo_no_signal",
    "ties_below_no_signal": "grpo_no_signal",
    "pays_up_to_solved": "solved",
    "ties_from_solved": "solved",
}


def render_rule(rule: dict) -> list[str]:
    """The rule's thresholds as a table: the value, what it says, how it is read, the basis."""
    lines = [
        "",
        "The rule's thresholds, read from the table above:",
        "",
        "| threshold | value | what it says | how it is read | settings |",
        "|---|---|---|---|---|",
    ]
    for key, says, basis, how in RULE_ROWS:
        if key not in rule:
            continue
        value = f"{rule[key]:g}"
        figure = FIGURE_OF.get(key)
        if figure and "separating" in rule and figure not in rule["separating"]:
            value += " (left out: overlaps)"
        if key == "noisy_w_s" and "noisy_w_s_up_to" in rule:
            value += f" (right {rule['noisy_w_s_up_to']:.0%})"
        lines.append(f"| `{key}` | {value} | {says} | {how} | {', '.join(rule.get(basis, []))} |")
    if "separating" in rule:
        names = {"grpo_no_signal": "silent share", "solved": "solve rate"}
        used = ", ".join(names.get(n, n) for n in rule["separating"]) or "none"
        lines.append("")
        lines.append(
            f"Figures that separate the settings that paid from those that tied (the advice "
            f"reads these): {used}."
        )
        for name, basis in rule.get("overlap_basis", {}).items():
            lines.append(
                f"Left out, its ranges overlap: {names.get(name, name)} ({', '.join(basis)})."
            )
    if "flags_right_overlap" in rule:
        lines.append("")
        lines.append(
            "Not read, its ranges overlap: the flags' precision (settings with noisy verdicts: "
            + ", ".join(rule["flags_right_overlap"])
            + ")."
        )
    return lines


def _exact(row: dict) -> bool:
    """Exact step or line verdicts (the learned PRM is 99.7% right, not exact)."""
    return row["predictors"]["verdict_accuracy"] == 1.0


def _place_labels(ax, points: list[tuple[float, float, str]]) -> None:
    """Label each point beside it: right of it, else left, inside the axes, nudged up or down
    past the labels already placed that it would overprint (boxes in axes fractions, after the
    limits are set).
    A label moved off its point's height gets a thin leader line."""
    to_axes = ax.transAxes.inverted().transform
    char_w, line_h = 0.0135, 0.032  # of a 6.5 pt label on these panels
    placed: list[tuple[float, float, float, float]] = []

    def free(x0: float, y0: float, w: float) -> bool:
        return all(x0 + w < a or b < x0 or y0 + line_h < c or d < y0 for a, c, b, d in placed)

    for x, y, text in sorted(points, key=lambda p: (-p[1], p[0])):
        fx, fy = to_axes(ax.transData.transform((x, y)))
        w = char_w * len(text)
        spots = [
            (fx + sx, fy - line_h / 2 + k * dy)
            for k in range(12)
            for dy in ((0.0,) if k == 0 else (line_h, -line_h))
            for sx in (0.02, -0.02 - w)
        ]
        inside = [(a, b) for a, b in spots if a >= 0 and a + w <= 1 and 0 <= b <= 1 - line_h]
        lx, ly = next(((a, b) for a, b in inside if free(a, b, w)), (inside or spots)[0])
        placed.append((lx, ly, lx + w, ly + line_h))
        ax.annotate(
            text,
            (x, y),
            xytext=(lx, ly),
            textcoords="axes fraction",
            fontsize=6.5,
            arrowprops=(
                {"arrowstyle": "-", "color": "0.6", "lw": 0.5}
                if abs(ly + line_h / 2 - fy) > line_h
                else None
            ),
        )


def plot_map(data: dict, path: Path) -> None:
    """BoT's speedup and AUC difference (with intervals) against each step-0 figure: the first
    four columns hold the settings with exact verdicts, the last the noisy and learned ones.
    A hollow marker is a bound (a run never reached the level)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    panels = (
        ("grpo_no_signal", "GRPO's groups with no signal at step 0"),
        ("local_share", "local signal's share of BoT's reward"),
        ("solved", "solved at step 0"),
        ("mean_tokens", "tokens per completion (log scale)"),
        ("verdict_accuracy", "share of step verdicts right (noisy and learned verdicts)"),
    )
    colors = {"chain": "C0", "code": "C3", "noisy": "C1"}
    fig, axes = plt.subplots(2, len(panels), figsize=(22, 8.6), sharey="row")
    rows = [r for r in data["settings"] if r["w_s"] == 0.5]
    labels: dict = {}  # axes -> its points, labelled once every panel's limits are set
    for col, (key, label) in enumerate(panels):
        for row_i, (metric, ylabel, ref) in enumerate(
            (
                ("speedup", "BoT vs GRPO, steps to half-way (x)", 1.0),
                ("auc_diff", "AUC difference BoT - GRPO", 0.0),
            )
        ):
            ax = axes[row_i, col]
            points = []
            for r in rows:
                if (key == "verdict_accuracy") == _exact(r):
                    continue
                x = r["predictors"][key]
                x = x["value"] if isinstance(x, dict) else x
                if x is None:
                    continue
                m = r[metric]
                y = m.get("ratio", m.get("mean"))
                code = r["task"].split(":")[0] in ("react", "python")
                color = colors["noisy" if not _exact(r) else "code" if code else "chain"]
                bound = bool(m.get("censoring"))
                ax.errorbar(
                    x,
                    y,
                    yerr=[[y - m["low"]], [m["high"] - y]],
                    fmt="o",
                    color=color,
                    mfc="white" if bound else color,
                    capsize=3,
                    alpha=0.85,
                )
                points.append((x, y, r["id"]))
            ax.axhline(ref, color="grey", ls=":")
            ax.set_xlabel(label)
            if key == "mean_tokens":
                ax.set_xscale("log")
                ax.minorticks_off()
                ticks = [50, 100, 200, 400, 800]
                ax.set_xticks(ticks, [str(t) for t in ticks])
            if col == 0:
                ax.set_ylabel(ylabel)
            ax.margins(x=0.12)
            labels[ax] = points
    legend = (
        (colors["chain"], colors["chain"], "chain, exact step verdicts"),
        (colors["code"], colors["code"], "code tasks, exact line verdicts"),
        (colors["noisy"], colors["noisy"], "noisy or learned verdicts"),
        ("grey", "white", "a bound: a run never reached the level"),
    )
    handles = [Line2D([], [], marker="o", ls="", color=c, mfc=f, label=t) for c, f, t in legend]
    for ax, points in labels.items():
        ax.autoscale_view()
        _place_labels(ax, points)
    fig.legend(
        handles=handles, loc="upper center", ncol=4, frameon=False, bbox_to_anchor=(0.5, 0.955)
    )
    fig.suptitle(
        "Where BoT pays: every stored BoT-vs-GRPO comparison at w_s 0.5 against figures measured "
        "at step 0; bars are 95% intervals over 5 seeds"
    )
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=110)
    plt.close(fig)


BEGIN, END = "<!-- map: written by benchmarks/where_bot_pays.py -->", "<!-- end of map -->"


def write_between_markers(path: Path, table: str) -> None:
    """Put ``table`` between the page's markers, keeping the prose around it (the whole page
    when it has none yet)."""
    text = path.read_text() if path.is_file() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = f"{head}{BEGIN}\n{table}{END}{tail}"
    else:
        text = f"{BEGIN}\n{table}{END}\n"
    path.write_text(text)


def _path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path: give a folder or file name")
    return Path(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=_path, default=RECORDS / "where-bot-pays")
    parser.add_argument("--prompts", type=int, default=64, help="prompts per diagnosis")
    parser.add_argument("--out", type=_path, default=RESULTS)
    parser.add_argument(
        "--package-map", type=_path, default=PACKAGE_MAP, help="the copy diagnose reads"
    )
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder: pass an existing one (docs/results)")
    if not args.package_map.parent.is_dir():
        parser.error(f"--package-map {args.package_map}: its folder does not exist")
    if args.package_map.is_dir():
        parser.error(f"--package-map {args.package_map} is a folder: name the JSON file to write")
    if args.records.exists() and not args.records.is_dir():
        parser.error(f"--records {args.records} is a file: give a folder for the diagnoses")
    if args.report_only and not args.records.is_dir():
        parser.error(f"--records {args.records} is not a folder: run without --report-only first")
    if args.prompts < 1:
        parser.error(f"--prompts must be at least 1, got {args.prompts}")
    try:
        data = build(args)
    except RecordError as err:
        parser.error(str(err))
    if not data["settings"]:
        parser.error(f"no stored comparison is diagnosed in {args.records}: nothing to map")
    (args.out / "where-bot-pays.json").write_text(json.dumps(data, indent=2))
    args.package_map.write_text(json.dumps(data, indent=2))
    write_between_markers(args.out / "where-bot-pays.md", render_map(data))
    plot_map(data, args.out / "where-bot-pays.png")
    print(render_map(data))


if __name__ == "__main__":
    main()
