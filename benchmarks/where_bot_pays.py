"""One map of where BoT pays: every stored BoT-vs-GRPO comparison against what a user can measure
before training.

For each measured setting it reads the comparison's result (steps to the half-way level, GRPO /
BoT, and the AUC difference, 5 seeds, paired 95% intervals) from the file the comparison left
(docs/results/*.json, benchmarks/records/*) and measures the setting's step-0 figures with
``botgrpo diagnose``'s own function (:mod:`botgrpo.harness.diagnose`) on the setting's starting
model and task: the share of GRPO's groups with no signal, the local signal's share of BoT's
token reward, the starting solve rate, the share of rollouts earning outcome credit (scoring
above a typical failed attempt), completion length, and the verdicts' accuracy and
their flags' precision (the share of the steps judged wrong that are wrong) against the exact
ones. Those measurements are kept in ``--records`` (one JSON per setting), so the
command resumes, and ``--report-only`` rewrites the page from what is there.

Writes docs/results/where-bot-pays.md, .json and .png, and the copy of the map that
``botgrpo diagnose`` reads (src/botgrpo/harness/where_bot_pays.json; with another ``--out``,
only a ``--package-map`` named).

    python benchmarks/where_bot_pays.py [--records benchmarks/records/where-bot-pays]
        [--prompts 64] [--report-only]

A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paymap.diagnoses import RecordError, measure, predictors, recorded_first_step
from paymap.plot import plot_map
from paymap.render import render_map, write_between_markers
from paymap.rule import advice_check, derive_rule
from paymap.settings import RECORDS, RESULTS, ROOT, stored_settings

PACKAGE_MAP = ROOT / "src" / "botgrpo" / "harness" / "where_bot_pays.json"


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


def _path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path: give a folder or file name")
    return Path(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--records",
        type=_path,
        default=RECORDS / "where-bot-pays",
        help="folder of the diagnoses, one JSON per setting, kept so the command resumes "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--prompts", type=int, default=64, help="prompts per diagnosis (default: %(default)s)"
    )
    parser.add_argument(
        "--out",
        type=_path,
        default=RESULTS,
        help="existing folder for where-bot-pays.md, .json and .png (default: %(default)s)",
    )
    parser.add_argument(
        "--package-map",
        type=_path,
        default=None,
        help="where to write the copy of the map that `botgrpo diagnose` reads (default: the "
        "package's own, src/botgrpo/harness/where_bot_pays.json, only when --out is "
        "docs/results; with another --out, none unless named)",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="diagnose nothing: rewrite the map from the diagnoses already in --records",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder: pass an existing one (docs/results)")
    if args.package_map is None and args.out.resolve() == RESULTS.resolve():
        args.package_map = PACKAGE_MAP
    if args.package_map is not None and not args.package_map.parent.is_dir():
        parser.error(f"--package-map {args.package_map}: its folder does not exist")
    if args.package_map is not None and args.package_map.is_dir():
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
    # everything is rendered before anything is written: a failure leaves the old files whole
    text = json.dumps(data, indent=2, allow_nan=False)
    page = render_map(data)
    plot = args.out / ".where-bot-pays.tmp.png"
    plot_map(data, plot)
    (args.out / "where-bot-pays.json").write_text(text)
    if args.package_map is not None:
        args.package_map.write_text(text)
    write_between_markers(args.out / "where-bot-pays.md", page)
    plot.replace(args.out / "where-bot-pays.png")
    print(page)


if __name__ == "__main__":
    main()
