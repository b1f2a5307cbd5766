"""Each setting's step-0 figures, measured with ``botgrpo diagnose``'s own function
(:mod:`botgrpo.harness.diagnose`) on its starting model and task and kept one JSON per setting,
and the first training step's figures of its kept runs, which check them."""

from __future__ import annotations

import json
import math
from pathlib import Path

from paymap.settings import RECORDS, Setting

#: What the map reads of a stored diagnosis (:func:`predictors`, :func:`advice_check`).
RECORD_KEYS = (
    ("figures", "grpo_no_signal"),
    ("figures", "bot_no_signal"),
    ("figures", "local_share"),
    ("figures", "solved"),
    ("figures", "outcome_credit"),
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
    for section, key in (k for k in RECORD_KEYS if len(k) > 1):
        entry = record[section][key]
        values = (
            [entry.get(k) for k in ("value", "low", "high")] if isinstance(entry, dict) else [entry]
        )
        share = section == "figures"
        for value in values:
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not (0 <= value <= 1 if share else 0 < value < math.inf):
                raise RecordError(
                    f"{path}: {section}.{key} holds {value!r}, not "
                    + ("a share in [0, 1]" if share else "a positive number")
                    + ": delete it to diagnose again"
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
        flag_sample=0,
    )
    print(f"where_bot_pays: diagnosing {setting.id}", flush=True)
    result = diagnose(cfg)
    result.pop("examples", None)
    result.pop("flags", None)
    result.pop("flag_sample", None)
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
        "outcome_credit": f["outcome_credit"],
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


#: A code regime setting's id prefix -> its comparison folders' (benchmarks/code_regime.py):
#: react-pages-hard in regime-hard, its control react-pages-hard-random in regime-hard-random,
#: python-helpers-hard in regime-python-hard.
REGIME_FOLDERS = {"react-pages-": "regime-", "python-helpers-": "regime-python-"}


def regime_folder(setting_id: str) -> str:
    """The folder under the records of a code regime setting's comparison ("" if none)."""
    for prefix, folder in REGIME_FOLDERS.items():
        if setting_id.startswith(prefix):
            return folder + setting_id.removeprefix(prefix)
    return ""


def recorded_first_step(setting_id: str, records: Path = RECORDS) -> dict | None:
    """GRPO's groups without signal and BoT's local share at the first training step of the
    setting's stored runs (the test seeds), where its records are kept."""
    name = RECORDED.get(setting_id, regime_folder(setting_id))
    folder = records / name
    runs = sorted((folder / "runs").glob("*/metrics.jsonl")) if name and folder.is_dir() else []
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
