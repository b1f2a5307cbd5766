"""Every stored BoT-vs-GRPO comparison and its result (steps to the half-way level, GRPO / BoT,
and the AUC difference, 5 seeds, paired 95% intervals), read from the file the comparison left
(docs/results/*.json, benchmarks/records/*)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
RECORDS = ROOT / "benchmarks" / "records"


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


def stored_settings(results: Path = RESULTS, records: Path = RECORDS) -> list[Setting]:
    """Every stored BoT-vs-GRPO comparison with its result (those whose files are present):
    chain at three difficulties, the noise map, the learned PRM, the code tasks at their
    default settings and the long code settings."""
    return [
        *difficulty_settings(results),
        *noise_settings(results),
        *prm_settings(records),
        *code_task_settings(results),
        *code_regime_settings(records),
    ]


#: The difficulty sweep's tasks: task -> (id, label).
DIFFICULTIES = {
    "chain:min_steps=4,max_steps=7": ("chain-4-7", "chain, 4-7 steps"),
    "chain": ("chain-4-16", "chain, 4-16 steps (default)"),
    "chain:min_steps=12,max_steps=16": ("chain-12-16", "chain, 12-16 steps"),
}


def difficulty_settings(results: Path = RESULTS) -> list[Setting]:
    """Chain at three difficulties (docs/results/difficulty.json)."""
    path = results / "difficulty.json"
    if not path.is_file():
        return []
    out = []
    for row in json.loads(path.read_text()):
        sid, label = DIFFICULTIES[row["task"]]
        sp, auc = row["speedup"], row["auc_difference"]
        result = {
            "speedup": _speedup(sp["ratio"], sp["low"], sp["high"], sp["censoring"]),
            "auc_diff": _auc(auc["mean"], auc["low"], auc["high"]),
            "final": row["final"],
            "start": row["start"],
        }
        out.append(Setting(sid, label, "difficulty.md", row["task"], "warm:chain", result))
    return out


def noise_settings(results: Path = RESULTS) -> list[Setting]:
    """Chain with noise put into its step verdicts (docs/results/verdict-noise.json); columns'
    converged warm start is not kept, so its rows are left out."""
    path = results / "verdict-noise.json"
    if not path.is_file():
        return []
    out = []
    for row in json.loads(path.read_text())["settings"]:
        if row["task"] == "columns":
            continue
        if row["setting"] == "clean":
            sid, label = "chain-noise-clean", "chain, exact verdicts (noise map's replicate)"
        else:
            sid, label = f"chain-{row['setting']}", f"chain, verdicts {row['verdict_noise']}"
            if row["w_s"] != 0.5:
                label += f", w_s {row['w_s']:g}"
        result = {
            "speedup": _speedup(*row["speedup"], row["censoring"]),
            "auc_diff": _auc(*row["auc_diff"]),
            "final": {"grpo": row["grpo_final"], "bot": row["bot_final"]},
        }
        out.append(
            Setting(
                sid,
                label,
                "verdict-noise.md",
                "chain",
                "warm:chain",
                result,
                verdict_noise=row["verdict_noise"],
                w_s=row["w_s"],
                exact_verdicts=not row["verdict_noise"],
            )
        )
    return out


def _prm_result(row: dict, grpo_final) -> dict:
    return {
        "speedup": _speedup(
            row["speedup"], row["speedup_low"], row["speedup_high"], row["censoring"]
        ),
        "auc_diff": _auc(row["auc_diff"], row["auc_low"], row["auc_high"]),
        "final": {"grpo": grpo_final, "bot": row["bot_final"]},
    }


def prm_settings(records: Path = RECORDS) -> list[Setting]:
    """Chain with a learned PRM's step verdicts, and the exact-verdict replicate run beside them
    (benchmarks/records/prm-chain-map.json)."""
    path = records / "prm-chain-map.json"
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    out = [
        Setting(
            f"chain-{row['setting']}",
            f"chain, verdicts of a learned PRM, w_s {row['w_s']:g}",
            "prm.md",
            "chain",
            "warm:chain",
            _prm_result(row, data["grpo_final"]),
            step_verifier=row["step_verifier"],
            w_s=row["w_s"],
            exact_verdicts=False,
        )
        for row in data["rows"]
        if row["setting"] != "clean"
    ]
    clean = next((row for row in data["rows"] if row["setting"] == "clean"), None)
    if clean is not None:  # the same task with exact verdicts
        out.append(
            Setting(
                "chain-prm-clean",
                "chain, exact verdicts (PRM page's replicate)",
                "prm.md",
                "chain",
                "warm:chain",
                _prm_result(clean, data["grpo_final"]),
            )
        )
    return out


def code_task_settings(results: Path = RESULTS) -> list[Setting]:
    """The code tasks at their default settings, bot and bot at w_s = 0 against grpo
    (docs/results/{python,react}-5seed.report.json)."""
    out = []
    for task, page in (("python", "python-tiny.md"), ("react", "react-tiny.md")):
        report = results / f"{task}-5seed.report.json"
        if not report.is_file():
            continue
        for pair in json.loads(report.read_text())["pairs"]:
            if pair["baseline"] != "grpo" or pair["arm"] not in ("bot", "bot w_s=0"):
                continue
            sp = pair["speedup"]["half-way"]
            ws0 = pair["arm"] == "bot w_s=0"
            out.append(
                Setting(
                    task + ("-ws0" if ws0 else ""),
                    f"{task} (code, line verdicts)" + (", w_s 0" if ws0 else ""),
                    page,
                    task,
                    f"warm:{task}",
                    {
                        "speedup": _speedup(sp["ratio"], sp["low"], sp["high"], sp["censoring"]),
                        "auc_diff": _auc(*pair["auc_diff"]),
                    },
                    w_s=0.0 if ws0 else 0.5,
                )
            )
    return out


#: The BoT arms of a code regime report that the map holds against GRPO: arm -> (id suffix,
#: label suffix, the verdict noise diagnose measures it with, w_s).
CODE_REGIME_ARMS = {
    "bot": ("", "", "", 0.5),
    "bot random lines": ("-random", ", line verdicts 1:random", "1:random", 0.5),
    "bot w_s=0": ("-ws0", ", w_s 0", "", 0.0),
}


def code_regime_settings(records: Path = RECORDS) -> list[Setting]:
    """The long code settings' comparisons (benchmarks/code_regime.py), where finished and
    where the arm's speedup over GRPO to the half-way level was measured (both learned): BoT,
    and at the hardest point its random-line control and its w_s = 0 ablation."""
    out = []
    for report in sorted(records.glob("regime-*-report.json")):
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
