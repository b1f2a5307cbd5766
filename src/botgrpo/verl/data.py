"""Write prompts and reference answers as verl's RL parquet files.

verl's ``RLHFDataset`` reads rows with ``prompt`` (chat messages), ``data_source``,
``reward_model`` (``{"style": "rule", "ground_truth": answer}``) and ``extra_info``. The reward
hook passes ``ground_truth`` and the keys of ``extra_info`` to the token reward functions as
columns; the answer is stored in both, so recipes reading the default ``answer`` column work.

Command line (``python -m botgrpo.verl.data``)::

    python -m botgrpo.verl.data arithmetic OUT_DIR --size 256          # CPU/GPU smoke data
    python -m botgrpo.verl.data hf OUT_DIR --dataset di-zhang-fdu/AIME_1983_2024 \\
        --question-column Question --answer-column Answer --template "...{Question}" \\
        --eval-fraction 0.2 --seed 0                                   # the paper's AIME split
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def verl_rows(
    prompts: Sequence[str], answers: Sequence[Any], data_source: str, split: str
) -> list[dict[str, Any]]:
    """One verl row per (prompt, answer): a single user message and a rule-style ground truth."""
    if len(prompts) != len(answers):
        raise ValueError(f"got {len(prompts)} prompts for {len(answers)} answers")
    return [
        {
            "data_source": data_source,
            "prompt": [{"role": "user", "content": prompt}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(answer)},
            "extra_info": {"split": split, "index": i, "answer": str(answer)},
        }
        for i, (prompt, answer) in enumerate(zip(prompts, answers, strict=True))
    ]


def write_parquet(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write ``rows`` as a parquet file (verl's ``data.train_files`` format)."""
    import pandas as pd

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(out)
    return out


def split_rows(n: int, eval_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Seeded (train, eval) index split; eval gets round(n * eval_fraction) rows, at least one."""
    if not 0 < eval_fraction < 1:
        raise ValueError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    n_eval = max(1, round(n * eval_fraction))
    return sorted(order[n_eval:]), sorted(order[:n_eval])


def _arithmetic(args: argparse.Namespace) -> None:
    from botgrpo.tasks.arithmetic import make_arithmetic_dataset

    for split, seed, size in (("train", args.seed, args.size), ("test", args.seed + 1, 32)):
        ds = make_arithmetic_dataset(size, seed=seed)
        rows = verl_rows(ds["prompt"], ds["answer"], "botgrpo/arithmetic", split)
        print(write_parquet(rows, Path(args.out) / f"{split}.parquet"))


def _hf(args: argparse.Namespace) -> None:
    from datasets import load_dataset

    ds = load_dataset(args.dataset, split=args.split)
    missing = {args.question_column, args.answer_column} - set(ds.column_names)
    if missing:
        raise SystemExit(f"error: {args.dataset} has no column(s) {sorted(missing)}")
    prompts = [
        args.template.format(**row) if args.template else row[args.question_column] for row in ds
    ]
    answers = ds[args.answer_column]
    train, test = split_rows(len(prompts), args.eval_fraction, args.seed)
    for split, idx in (("train", train), ("test", test)):
        rows = verl_rows([prompts[i] for i in idx], [answers[i] for i in idx], args.dataset, split)
        print(write_parquet(rows, Path(args.out) / f"{split}.parquet"))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m botgrpo.verl.data``."""
    parser = argparse.ArgumentParser(prog="python -m botgrpo.verl.data", description=__doc__)
    sub = parser.add_subparsers(dest="source", required=True)
    arith = sub.add_parser("arithmetic", help="procedural 'a+b=' prompts (no download)")
    arith.add_argument("out")
    arith.add_argument("--size", type=int, default=256)
    arith.add_argument("--seed", type=int, default=0)
    hf = sub.add_parser("hf", help="a Hugging Face dataset with question and answer columns")
    hf.add_argument("out")
    hf.add_argument("--dataset", required=True)
    hf.add_argument("--split", default="train")
    hf.add_argument("--question-column", required=True)
    hf.add_argument("--answer-column", required=True)
    hf.add_argument("--template", default=None, help="format string over the row's columns")
    hf.add_argument("--eval-fraction", type=float, default=0.2)
    hf.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        (_arithmetic if args.source == "arithmetic" else _hf)(args)
    except (ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
