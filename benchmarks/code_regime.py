"""The paper's code regime in miniature: React pages of 25-40 lines (``react:sections=3``) where
one slip among dozens of lines decides whether the page compiles, at three starting compile
rates, from converged warm starts of the flawed teacher.

The points differ only in the teacher's slip rate, chosen by the warm start's sampled compile
rate alone, before any RL run (about 5%, 12% and 30%; docs/results/code-regime.md says how).
Each point is one `botgrpo compare` from its own warm start (shipped as
``warm:react-pages-<point>``; ``--point P --warm-start-only`` rebuilds one, ``--candidates``
builds others to choose among, ``--device cuda`` on a GPU):

1. the hardest point: grpo and bot each at the rate a validation sweep chose (``--rates``,
   ``--sweep-seeds`` seeds of the validation stream, never the reported problems), then
   ``--seeds`` test seeds;
2. otb at the hardest point (``--otb``): a comparison of its own (``regime-hard-otb``) with its
   own rate grid (``--otb-rates``; on chain otb chose a lower rate than BoT), the same seeds
   and problems, so it pairs with the grpo and bot runs by seed;
3. the other points: grpo and bot at the rates the hardest point's sweep chose;
4. the recipe ablation at the hardest point (``--ablation``): bot at w_s = 0;
5. the random-verdict control at the hardest point (``--control``): bot with every line
   penalty moved to a line drawn at random (``--verdict-noise 1:random``): the same amount of
   line signal, on lines that say nothing about where the flaw is.

Then BoT is held against GRPO (and OTB, the ablation and the control), paired by seed: steps
to the half-way level and to the paper's 80% compile rate (or the highest level every run
holds), AUC, final compile / clean / solved rates, seconds per step and to the level, GRPO's
groups with signal and BoT's local share per step. Writes ``regime-<point>-report.{md,json,png}``
under ``--out``.

    python benchmarks/code_regime.py --point hard [--methods grpo bot] [--report-only]

Finished runs are reused, so the command resumes on any clone (benchmarks/records); a run
stopped part-way goes on from its last evaluation (each run checkpoints there: commit its
folder, ``trainer/`` included, to resume it elsewhere). A point's
warm start trains for hours: while this command builds one, its latest resume point (every 100
steps) is mirrored into ``OUT/regime-warm/<point>/state.pt`` (committed), and a later command on
any clone goes on from there; ``--keep-resume`` mirrors it once (after a warm start run by
``botgrpo warm-start`` was stopped). A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import code_tasks

#: The points: the long setting, the teacher's slip rate, what the warm start compiled.
SHAPE = "react:sections=3,max_parts=3"
POINTS = {
    "hard": f"{SHAPE},slip_rate=0.3",
    "middle": f"{SHAPE},slip_rate=0.2",
    "easy": f"{SHAPE},slip_rate=0.1",
}
METRIC = "sampled_compiled"


def point_config(args, point: str, methods, name: str = "", task: str = "", **kw):
    from botgrpo.harness.config import CompareConfig

    return CompareConfig(
        name=name or f"regime-{point}",
        out_dir=args.out,
        task=task or POINTS[point],
        methods=tuple(methods),
        seeds=args.seeds,
        steps=args.steps,
        eval_every=args.eval_every,
        eval_problems=args.problems,
        pass_samples=1,
        pass_problems=args.problems,
        greedy=False,
        metric=METRIC,
        workers=args.workers,
        progress=False,
        # a run of an hour goes on from its last evaluation on any clone (records committed)
        checkpoint_every=args.eval_every,
        **kw,
    )


def chosen_rates(args) -> dict[str, float]:
    sweep = Path(args.out) / "regime-hard" / "lr_sweep.json"
    if not sweep.is_file():
        return {}
    return {m: float(lr) for m, lr in json.loads(sweep.read_text())["best"].items()}


def config_for(args, point: str):
    """The point's comparison: a sweep at the hardest point, its rates elsewhere."""
    if point == "hard":
        return point_config(
            args, point, args.methods, lr_sweep=tuple(args.rates), sweep_seeds=args.sweep_seeds
        )
    rates = chosen_rates(args)
    missing = [m for m in args.methods if m not in rates]
    if missing:
        raise ValueError(
            f"the hardest point's sweep has not chosen a rate for {', '.join(missing)}: run "
            "--point hard with those methods first"
        )
    return point_config(
        args, point, args.methods, method_lrs=tuple(f"{m}={rates[m]:g}" for m in args.methods)
    )


def otb_config(args):
    """otb at the hardest point, its rate chosen on its own grid (the same validation seeds)."""
    return point_config(
        args,
        "hard",
        ("otb",),
        name="regime-hard-otb",
        lr_sweep=tuple(args.otb_rates),
        sweep_seeds=args.sweep_seeds,
    )


#: Arms kept in comparisons of their own at the hardest point: arm -> folder under --out (an
#: arm's first word is its method).
EXTRA_ARMS = {
    "otb": "regime-hard-otb",
    "bot w_s=0": "regime-hard-ws0",
    "bot random lines": "regime-hard-random",
}


def _bot_at_its_rate(args, name: str, what: str, **kw):
    """bot at the hardest point, at the rate its sweep chose, with ``kw`` changed."""
    rates = chosen_rates(args)
    if "bot" not in rates:
        raise ValueError(f"{what} runs bot at the hardest point's rate: sweep it first")
    return point_config(args, "hard", ("bot",), name=name, learning_rate=rates["bot"], **kw)


def ablation_config(args):
    """The recipe ablation: bot at w_s = 0 (GRPO's advantage exactly)."""
    return _bot_at_its_rate(args, "regime-hard-ws0", "the ablation", w_s=0.0)


def control_config(args):
    """The random-verdict control: bot with every line penalty on a line drawn at random."""
    return _bot_at_its_rate(args, "regime-hard-random", "the control", verdict_noise="1:random")


def _warm_entry(args, point: str) -> Path:
    """The cache entry of the point's warm start (the one ``botgrpo warm-start`` builds with the
    same held-out problems)."""
    from botgrpo.harness.compare import planned_checkpoint
    from botgrpo.harness.config import resolve_task_defaults
    from botgrpo.tasks import load_task

    cfg = point_config(args, point, ("grpo",))
    task = load_task(cfg.task)
    resolve_task_defaults(cfg, task)  # not check_inputs: the comparison may be running
    return planned_checkpoint(cfg, task)


def _resume_points(args, point: str) -> tuple[Path, Path]:
    """(the cache's resume point, its committed mirror) of the point's warm start."""
    entry = _warm_entry(args, point)
    cached = entry.with_name(f".{entry.name}.resume") / "state.pt"
    return cached, Path(args.out) / "regime-warm" / point / "state.pt"


def _step_of(path: Path) -> int:
    import torch

    try:
        return int(torch.load(path, weights_only=False, map_location="cpu")["step"])
    except (OSError, RuntimeError, KeyError, ValueError, EOFError, pickle.UnpicklingError):
        return -1


def _copy_if_further(src: Path, dst: Path) -> bool:
    """Copy resume point ``src`` over ``dst`` (written beside it, then renamed) when it is
    further along; True when copied."""
    import shutil

    if not src.is_file() or (dst.is_file() and _step_of(dst) >= _step_of(src)):
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.copyfile(src, tmp)
    tmp.replace(dst)
    return True


def restore_resume(args, point: str) -> None:
    """A committed resume point further along than the cache's goes into the cache."""
    cached, kept = _resume_points(args, point)
    if _warm_entry(args, point).is_dir():
        return  # finished: nothing to resume
    if _copy_if_further(kept, cached):
        print(f"code regime: the warm start of {point} resumes from step {_step_of(cached)}")


def keep_resume(args, point: str, quiet: bool = False) -> None:
    """The cache's resume point, when further along, into the committed mirror; said in one
    line either way unless ``quiet`` (the mirroring thread)."""
    cached, kept = _resume_points(args, point)
    if _copy_if_further(cached, kept):
        print(f"code regime: kept the warm start's resume point, step {_step_of(kept)}, in {kept}")
    elif quiet:
        return
    elif _warm_entry(args, point).is_dir():
        print(f"code regime: the {point} warm start has finished: no resume point to keep")
    elif not cached.is_file():
        raise ValueError(
            f"no resume point of the {point} warm start in the cache ({cached}): nothing to "
            "keep; --keep-resume mirrors one after a `botgrpo warm-start` run was stopped"
        )
    else:
        print(f"code regime: {kept} is already at step {_step_of(kept)}: nothing to keep")


def mirror_resume(args, point: str, every_s: float = 120.0) -> None:
    """Keep the committed mirror up to date while this process builds the warm start."""
    import threading

    def loop() -> None:
        while True:
            time.sleep(every_s)
            with contextlib.suppress(OSError, ValueError):  # the next round tries again
                keep_resume(args, point, quiet=True)

    threading.Thread(target=loop, daemon=True).start()


def _train_records(root: Path, method: str, key: str, step: int | None = None) -> list[float]:
    return [
        r[key]
        for r in code_tasks.records(root)
        if r.get("kind") == "train"
        and r["method"] == method
        and key in r
        and (step is None or r["step"] == step)
    ]


def held_level(values) -> float:
    """The highest level a curve holds: at two evaluations in a row (the crossing rule of
    :func:`botgrpo.harness.stats.held_crossing`), so every run crosses the lowest of these.

    >>> held_level([0.1, 0.5, 0.3, 0.6, 0.9])
    0.6
    """
    return max(min(a, b) for a, b in itertools.pairwise(values))


def report(args, point: str) -> dict:
    """The point's report: every arm, the paired comparisons, per-step signal figures."""
    from botgrpo.harness import stats

    root = Path(args.out) / f"regime-{point}"
    summary_path = root / "summary.json"
    if not summary_path.is_file():
        started = any((root / "runs").glob("*/done.json"))
        raise ValueError(
            f"no finished comparison in {root}: run --point {point} first"
            + (
                f" (`botgrpo summarize {root} --out DIR` shows the runs finished so far)"
                if started
                else ""
            )
        )
    summary = json.loads(summary_path.read_text())
    arms = {m: root for m in summary["methods"]}
    for arm, folder in EXTRA_ARMS.items():
        extra = Path(args.out) / folder
        if point == "hard" and arm not in arms and (extra / "summary.json").is_file():
            arms[arm] = extra
    for folder in dict.fromkeys(arms.values()):
        code_tasks.check_all_runs_finished(folder, f"run --point {point} to finish them")
    budget = code_tasks.comparison_budget(dict.fromkeys(arms.values()))  # not --steps: the runs'
    curves = {a: code_tasks._curves(r, a.split()[0], METRIC) for a, r in arms.items()}
    start = stats.start_value(curves)
    levels = {"80%": code_tasks.PAPER_LEVEL}
    if summary["thresholds"]:
        levels["half-way"] = summary["thresholds"][len(summary["thresholds"]) // 2]
    # the comparison's own methods set it: an extra arm that breaks down does not pull it to the
    # floor (its runs then count as never reaching it)
    held = min(held_level(v) for m in summary["methods"] for _, v in curves[m].values())
    if held < code_tasks.PAPER_LEVEL:
        levels["highest every run holds"] = round(held, 3)
    rates = {
        arm: json.loads((r / "summary.json").read_text())["methods"][arm.split()[0]]["lr"]
        for arm, r in arms.items()
    }
    pairs = [
        ("bot", "grpo"),
        ("otb", "grpo"),
        ("bot", "otb"),
        ("bot w_s=0", "grpo"),
        ("bot w_s=0", "bot"),
        ("bot random lines", "grpo"),
        ("bot", "bot random lines"),
    ]
    pairs = [(a, b) for a, b in pairs if a in arms and b in arms]
    costs = {}
    for arm, r in arms.items():
        method = arm.split()[0]
        recs = [x for x in code_tasks.records(r) if x.get("kind") == "cost"]
        per_step = [x["seconds_per_step"] for x in recs if x["method"] == method]
        zero = _train_records(r, method, "bot/frac_zero_signal_groups")
        share = _train_records(r, method, "bot/local_share")
        costs[arm] = {
            "seconds_per_step": float(np.mean(per_step)) if per_step else None,
            "groups_with_signal": 1 - float(np.mean(zero)) if zero else None,
            "groups_with_signal_step1": 1
            - float(
                np.mean(_train_records(r, method, "bot/frac_zero_signal_groups", 1) or [np.nan])
            ),
            "local_share": float(np.mean(share)) if share else None,
            "tokens_per_completion": float(
                np.mean(_train_records(r, method, "completions/mean_length") or [np.nan])
            ),
        }
    result = {
        "id": f"react-pages-{point}",
        "label": f"react pages of 3 sections, {POINTS[point].rsplit('=', 1)[1]} slips",
        "task": POINTS[point],
        "model": f"warm:react-pages-{point}",
        "start": start,
        "levels": levels,
        "budget": budget,
        "rows": [code_tasks._arm_row(a, r, curves, levels, rates[a]) for a, r in arms.items()],
        "pairs": [code_tasks._compare_pair(curves, a, b, levels, start, budget) for a, b in pairs],
        "costs": costs,
    }
    stem = Path(args.out) / f"regime-{point}-report"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2))
    stem.with_suffix(".md").write_text(code_tasks.render(result) + render_costs(costs))
    code_tasks.plot(curves, arms, result, stem.with_suffix(".png"))
    if point == "hard":
        plot_sweeps(args, Path(args.out) / "regime-hard-sweeps.png")
    print(code_tasks.render(result) + render_costs(costs))
    return result


def _sweep_runs(folder: Path) -> dict[tuple[str, float], list[list[dict]]]:
    """(method, rate) -> each sweep run's records (finished or not), from ``folder/sweep``."""
    from botgrpo.harness.results import load_records

    out: dict[tuple[str, float], list[list[dict]]] = {}
    for metrics in sorted(folder.glob("sweep/*/metrics.jsonl")):
        records = load_records(metrics)
        if records:
            out.setdefault((records[0]["method"], float(records[0]["lr"])), []).append(records)
    return out


def _mean_curve(runs: list[list[dict]], kind: str, key: str) -> tuple[list[int], np.ndarray]:
    """Steps every run recorded ``key`` at, and the runs' mean there."""
    by_run = [
        {r["step"]: r[key] for r in run if r.get("kind") == kind and key in r} for run in runs
    ]
    steps = sorted(set.intersection(*(set(d) for d in by_run)))
    return steps, np.array([[d[s] for s in steps] for d in by_run]).mean(0)


def plot_sweeps(args, path: Path) -> bool:
    """The hardest point's validation sweeps, every method and rate: compile rate and
    completion length (mean over the sweep seeds); False when no sweep is recorded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs: dict[tuple[str, float], list[list[dict]]] = {}
    for folder in ("regime-hard", *EXTRA_ARMS.values()):
        runs.update(_sweep_runs(Path(args.out) / folder))
    if not runs:
        return False
    fig, (rate_ax, len_ax) = plt.subplots(1, 2, figsize=(12, 4.2))
    colors = {"grpo": "tab:green", "bot": "tab:blue", "otb": "tab:red"}
    styles = ("-", "--", ":", "-.")
    for (method, lr), seeds in sorted(runs.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        rank = sorted((r for m, r in runs if m == method), reverse=True).index(lr)
        look = {"color": colors.get(method), "ls": styles[rank % len(styles)]}
        label = f"{method} {lr:g} ({len(seeds)} seeds)"
        steps, values = _mean_curve(seeds, "eval", METRIC)
        rate_ax.plot(steps, values, marker=".", label=label, **look)
        steps, values = _mean_curve(seeds, "train", "completions/mean_length")
        len_ax.plot(steps, values, label=label, **look)
    rate_ax.set_ylabel(f"{METRIC.replace('_', ' ')} (validation problems)")
    len_ax.set_ylabel("completion length, tokens (training batches)")
    for ax in (rate_ax, len_ax):
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    rate_ax.set_ylim(-0.02, 1.0)
    len_ax.set_ylim(bottom=0)
    rate_ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"{POINTS['hard']}: validation sweeps (mean over the sweep's seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def render_costs(costs: dict) -> str:
    lines = [
        "",
        "| arm | s / step | groups with signal (run; step 1) | local share | tokens |",
        "|---|---|---|---|---|",
    ]
    for arm, c in costs.items():

        def f(x, fmt):
            return "n/a" if x is None or x != x else f"{x:{fmt}}"

        lines.append(
            f"| {arm} | {f(c['seconds_per_step'], '.1f')} | {f(c['groups_with_signal'], '.2f')}; "
            f"{f(c['groups_with_signal_step1'], '.2f')} | {f(c['local_share'], '.3f')} | "
            f"{f(c['tokens_per_completion'], '.0f')} |"
        )
    return "\n".join(lines) + "\n"


def warm_start_only(args, point: str) -> None:
    """Build (or reuse) the point's warm start, as the comparison would; with ``--candidates``,
    the warm starts of those slip rates instead (the points are chosen among them by their
    sampled compile rate: ``botgrpo warm-start --task ...`` then reports it from the cache)."""
    from botgrpo.harness.compare import check_inputs, starting_checkpoint

    tasks = [f"{SHAPE},slip_rate={r:g}" for r in args.candidates] or [POINTS[point]]

    for task in tasks:
        cfg = point_config(args, point, ("grpo",), task=task)
        path = starting_checkpoint(cfg, check_inputs(cfg), device=args.device)
        print(f"code regime: warm start of {task}: {path}", flush=True)


def _check_modes(args) -> None:
    """The options that pick what the command does must not contradict each other, and the
    folder and sizes every mode uses must make sense."""
    modes = [m for m in ("report_only", "warm_start_only", "keep_resume") if getattr(args, m)]
    if len(modes) > 1:
        named = " and ".join("--" + m.replace("_", "-") for m in modes)
        raise ValueError(f"{named} each pick what the command does: give one of them")
    if args.candidates and not args.warm_start_only:
        raise ValueError("--candidates builds warm starts: add --warm-start-only")
    arms = [f"--{a}" for a in ("otb", "ablation", "control") if getattr(args, a)]
    if arms and (args.warm_start_only or args.keep_resume):
        mode = "--warm-start-only" if args.warm_start_only else "--keep-resume"
        raise ValueError(f"{mode} trains no comparison: leave out {' and '.join(arms)}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file: give a folder")
    from botgrpo.harness.config import CompareConfig

    warmup = CompareConfig.warmup_steps
    if args.steps <= warmup and not args.report_only:
        raise ValueError(
            f"--steps {args.steps}: a run warms its rate up over {warmup} steps; give more"
        )
    if args.problems < 1:
        raise ValueError(f"--problems {args.problems}: give 1 or more held-out problems")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--point",
        required=True,
        choices=list(POINTS),
        help="the starting compile rate: hard (about 5%%), middle (12%%), easy (30%%)",
    )
    parser.add_argument(
        "--out",
        default="benchmarks/records",
        help="where the runs, the sweep and the report live (finished runs there are reused)",
    )
    parser.add_argument(
        "--methods", nargs="+", default=["grpo", "bot"], help="the methods compared (preset names)"
    )
    parser.add_argument("--seeds", type=int, default=5, help="test seeds per method")
    parser.add_argument("--steps", type=int, default=50, help="RL steps per run")
    parser.add_argument(
        "--eval-every", type=int, default=5, help="steps between evaluations (and checkpoints)"
    )
    parser.add_argument(
        "--problems", type=int, default=200, help="held-out problems per evaluation"
    )
    parser.add_argument(
        "--rates",
        type=float,
        nargs="+",
        default=[4e-4, 8e-4],
        help="learning rates the hardest point's validation sweep tries per method",
    )
    parser.add_argument(
        "--sweep-seeds", type=int, default=2, help="validation seeds per rate in the sweep"
    )
    parser.add_argument(
        "--ablation",
        action="store_true",
        help="also run bot at w_s = 0 at the hardest point (the recipe ablation)",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="also run bot with its line penalties moved to random lines at the hardest point "
        "(the random-verdict control)",
    )
    parser.add_argument(
        "--otb",
        action="store_true",
        help="also run otb at the hardest point, its rate swept over --otb-rates",
    )
    parser.add_argument(
        "--otb-rates",
        type=float,
        nargs="+",
        default=[2.5e-5, 5e-5, 1e-4, 4e-4],
        help="otb's rate grid (here it broke down at 4e-4 by step 10 and at 1e-4 by step 30; on "
        "chain it chose 2e-4)",
    )
    parser.add_argument("--workers", type=int, default=2, help="runs at a time")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="write the report from the finished runs; train nothing",
    )
    parser.add_argument(
        "--warm-start-only", action="store_true", help="build the point's warm start and stop"
    )
    parser.add_argument(
        "--candidates",
        type=float,
        nargs="+",
        default=[],
        metavar="RATE",
        help="with --warm-start-only: build the warm starts of these teacher slip rates",
    )
    parser.add_argument("--device", default="cpu", help="where warm starts train: cpu or cuda")
    parser.add_argument(
        "--keep-resume",
        action="store_true",
        help="copy the point's warm-start resume point into OUT/regime-warm and stop",
    )
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        _check_modes(args)
        if args.point != "hard" and (args.otb or args.ablation or args.control):
            raise ValueError(
                "--otb, --ablation and --control run at the hardest point: --point hard"
            )
        from botgrpo.harness.cli import check_device

        check_device(args.device)
        if args.keep_resume:
            keep_resume(args, args.point)
            return
        if not args.report_only and not _warm_entry(args, args.point).is_dir():
            restore_resume(args, args.point)
            mirror_resume(args, args.point)
        if args.warm_start_only:
            warm_start_only(args, args.point)
            return
    except ValueError as err:
        code_tasks._usage(err)
    if not args.report_only:
        try:
            builds = [lambda: config_for(args, args.point)]
            if args.otb:
                builds.append(lambda: otb_config(args))
            # bot's rate comes from the sweep above: checked first only once it has chosen one
            later = [ablation_config] * args.ablation + [control_config] * args.control
            known = "bot" in chosen_rates(args)
            now = builds + ([lambda b=b: b(args) for b in later] if known else [])
            from botgrpo.harness.compare import check_inputs

            for build in now:  # a bad setting of a later comparison ends before any run
                check_inputs(build())
            for build in builds + [lambda b=b: b(args) for b in later]:
                code_tasks._compare(build)
        except ValueError as err:
            code_tasks._usage(err)
    try:
        report(args, args.point)
    except ValueError as err:
        code_tasks._usage(err)


if __name__ == "__main__":
    main()
