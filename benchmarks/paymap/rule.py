"""The rule a user can apply, read from the measured settings (each threshold with the settings
it rests on), and diagnose's advice on each setting held against what its comparison
measured."""

from __future__ import annotations

import math
from pathlib import Path

from paymap.diagnoses import load_record
from paymap.settings import ROOT

#: The step-0 figures a threshold can be read from: figure -> (the side where BoT paid, +1
#: higher or -1 lower; the thresholds' key suffix).
SEPARATORS = {
    "grpo_no_signal": (1, "no_signal"),
    "solved": (-1, "solved"),
    "outcome_credit": (-1, "credit"),
}


def _separation(pays: list[dict], ties: list[dict]) -> dict:
    """The starting solve rate's and outcome credit's thresholds (BoT paid at or below
    ``pays_up_to_<figure>``, tied at or above ``ties_from_<figure>``) and which step-0 figures
    separate the settings where BoT paid from those where it tied (``separating``): a figure
    whose ranges overlap cannot tell them apart, and the settings that overlap are named
    (``overlap_basis``)."""

    def value(r, name):
        return r["predictors"][name]["value"]

    out: dict = {"separating": [], "overlap_basis": {}}
    for name, (pay_side, suffix) in SEPARATORS.items():
        if any(r["predictors"].get(name) is None for r in pays + ties):
            continue  # a map whose diagnoses predate the figure
        if pay_side < 0:
            out[f"pays_up_to_{suffix}"] = math.ceil(max(value(r, name) for r in pays) * 100) / 100
            out[f"ties_from_{suffix}"] = math.floor(min(value(r, name) for r in ties) * 100) / 100
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


def _tie(row: dict) -> str:
    """A tie as a basis names it: its speedup, and its AUC difference where that interval lies
    above no difference (tied on speed, ahead over the run)."""
    auc = row["auc_diff"]
    over_run = f", ahead over the run (AUC {auc['mean']:+.3f})" if auc["low"] > 0 else ""
    return f"{row['id']} {row['speedup']['ratio']:.2f}x{over_run}"


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
        rule["ties_basis"] = [_tie(r) for r in ties]
        # tied on speed, but not always level over the run: the largest mean gain any tie kept
        gains = [r["auc_diff"]["mean"] for r in ties]
        rule["ties_gain_up_to"] = math.ceil(max(gains) * 1000) / 1000
        rule["ties_gain_basis"] = [f"{r['id']} AUC {r['auc_diff']['mean']:+.3f}" for r in ties]
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
