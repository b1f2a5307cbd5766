"""The paper's code regime in miniature: long completions where one slip among dozens of lines
decides whether the program compiles, at three starting compile rates, from converged warm
starts of the flawed teacher: React pages of 25-40 lines (``--task react``,
``react:sections=3``) and python functions of three helpers, 24-26 lines (``--task python``,
``python:helpers=3``).

The points differ only in the teacher's slip rate, chosen by the warm start's sampled compile
rate alone, before any RL run (about 5%, 12% and 30%; docs/results/code-regime.md says how).
Each point is one `botgrpo compare` from its own warm start (shipped as
``warm:react-pages-<point>`` and ``warm:python-helpers-<point>``; ``--point P
--warm-start-only`` rebuilds one, ``--candidates`` builds the warm starts the points are chosen
among, ``--device cuda`` on a GPU):

1. the hardest React point: grpo and bot each at the rate a validation sweep chose
   (``--rates``, ``--sweep-seeds`` seeds of the validation stream, never the reported
   problems), then ``--seeds`` test seeds;
2. otb at the hardest React point (``--otb``): a comparison of its own (``regime-hard-otb``)
   with its own rate grid (``--otb-rates``; on chain otb chose a lower rate than BoT), the same
   seeds and problems, so it pairs with the grpo and bot runs by seed;
3. the other points, the python ones included: grpo and bot at the rates the hardest React
   point's sweep chose, or, with ``--sweep``, at the rates a sweep at the point itself chooses
   (its own validation seeds; once started, the point's folder keeps it and later commands go
   on with it);
4. the recipe ablation at the hardest React point (``--ablation``): bot at w_s = 0;
5. the random-verdict control at the hardest React point (``--control``): bot with every line
   penalty moved to a line drawn at random (``--verdict-noise 1:random``): the same amount of
   line signal, on lines that say nothing about where the flaw is.

Then BoT is held against GRPO (and OTB, the ablation and the control), paired by seed: steps
to the half-way level and to the paper's 80% compile rate (or the highest level every run
holds), AUC, final compile / clean / solved rates, seconds per step and to the level, GRPO's
groups with signal and BoT's local share per step. Writes ``regime-<point>-report.{md,json,png}``
(``regime-python-<point>-report`` for python) under ``--out``.

    python benchmarks/code_regime.py --point hard [--task react] [--methods grpo bot] [--report-only]

Finished runs are reused, so the command resumes on any clone (benchmarks/records); a run
stopped part-way goes on from its last evaluation (each run checkpoints there: commit its
folder, ``trainer/`` included, to resume it elsewhere). A warm start trains for hours on a CPU:
while this command builds one, its latest resume point (every 100 steps) is mirrored into
``OUT/regime-warm/<task spec>/state.pt`` (committed), and a later command on any clone goes on
from there; ``--keep-resume`` mirrors it once (after a warm start run by ``botgrpo warm-start``
was stopped). A benchmark: it asserts nothing.
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import code_tasks


@dataclass(frozen=True)
class Family:
    """A task's long setting and its points."""

    #: The long setting's task spec, without the teacher's slip rate.
    shape: str
    #: point -> the teacher's slip rate, chosen by the warm start's sampled compile rate alone,
    #: before any RL run (docs/results/code-regime.md); empty until its candidates are built.
    points: dict[str, float]
    #: The settings' id prefix, also the shipped warm starts' (``warm:react-pages-hard``).
    name: str
    #: What a setting is, in the report and the map.
    label: str
    #: The teacher's slip rates whose warm starts the points are chosen among.
    candidates: tuple[float, ...] = (0.3, 0.2, 0.1)


FAMILIES = {
    "react": Family(
        "react:sections=3,max_parts=3",
        {"hard": 0.3, "middle": 0.2, "easy": 0.1},
        "react-pages",
        "react pages of 3 sections",
        candidates=(0.3, 0.2, 0.15, 0.1),
    ),
    "python": Family(
        "python:helpers=3",
        # by the warm starts' sampled compile rates (docs/results/code-regime.md): hard 0.2
        # (7.4%; 0.3 gave 1.4%, and every lower slip rate compiles more), middle 0.15 (16.3%),
        # easy 0.1 (29.8%)
        {"hard": 0.2, "middle": 0.15, "easy": 0.1},
        "python-helpers",
        "python functions of 3 helpers",
        # 0.15 added for the middle point once 0.2 and 0.1 gave 7.4% and 29.8%; 0.05, added when
        # the 0.3 candidate kept a third of its teacher's rate, was not needed once 0.1 gave 30%
        candidates=(0.3, 0.2, 0.15, 0.1),
    ),
}
POINT_NAMES = ("hard", "middle", "easy")
METRIC = "sampled_compiled"


def family(args) -> Family:
    return FAMILIES[args.task]


def point_task(args, point: str) -> str:
    """The point's task spec: the family's shape at the point's slip rate."""
    fam = family(args)
    if point not in fam.points:
        rates = " ".join(f"{r:g}" for r in fam.candidates)
        raise ValueError(
            f"the {args.task} {point} point is not chosen yet: build the candidates' warm starts "
            f"(--task {args.task} --point {point} --warm-start-only --candidates {rates}), then "
            "choose each point by its sampled compile rate (docs/results/code-regime.md)"
        )
    return f"{fam.shape},slip_rate={fam.points[point]:g}"


def comparison_name(args, point: str) -> str:
    """The point's folder under --out: regime-hard for React (as first recorded),
    regime-python-hard for the others."""
    return f"regime-{point}" if args.task == "react" else f"regime-{args.task}-{point}"


def is_hardest_react(args, point: str) -> bool:
    """The point whose sweep chooses every point's rates, and where the extra arms run."""
    return args.task == "react" and point == "hard"


def point_config(args, point: str, methods, name: str = "", task: str = "", **kw):
    from botgrpo.harness.config import CompareConfig

    return CompareConfig(
        name=name or comparison_name(args, point),
        out_dir=args.out,
        task=task or point_task(args, point),
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
    """The rates the hardest React point's sweep chose, per method ({} before it has)."""
    from botgrpo.harness.resummarize import read_sweep

    sweep = Path(args.out) / "regime-hard" / "lr_sweep.json"
    if not sweep.is_file():
        return {}
    return {m: float(lr) for m, lr in read_sweep(sweep)["best"].items()}


def sweeps_here(args, point: str) -> bool:
    """Whether the point chooses its rates by a sweep of its own: the hardest React point
    always; another one with ``--sweep``, or once its folder holds a sweep begun by an earlier
    command (its config.json names the rates), so that a resumed command goes on with it."""
    if is_hardest_react(args, point) or getattr(args, "sweep", False):
        return True
    config = Path(args.out) / comparison_name(args, point) / "config.json"
    try:
        return bool(json.loads(config.read_text()).get("lr_sweep"))
    except (OSError, ValueError, AttributeError):
        return False


def config_for(args, point: str):
    """The point's comparison: a sweep at the hardest React point (or at any point that sweeps
    its own, :func:`sweeps_here`), the hardest React point's rates elsewhere."""
    if sweeps_here(args, point):
        return point_config(
            args, point, args.methods, lr_sweep=tuple(args.rates), sweep_seeds=args.sweep_seeds
        )
    rates = chosen_rates(args)
    missing = [m for m in args.methods if m not in rates]
    if missing:
        raise ValueError(
            f"the hardest React point's sweep has not chosen a rate for {', '.join(missing)}: "
            "run --task react --point hard with those methods first"
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


def warm_tasks(args) -> list[str]:
    """The tasks whose warm starts this command builds: the candidates' with --candidates, else
    the point's."""
    if args.candidates:
        return [f"{family(args).shape},slip_rate={r:g}" for r in args.candidates]
    return [point_task(args, args.point)]


def _warm_entry(args, task: str) -> Path:
    """The cache entry of the task's warm start (the one ``botgrpo warm-start`` builds with the
    same held-out problems)."""
    from botgrpo.harness.compare import planned_checkpoint
    from botgrpo.harness.config import resolve_task_defaults
    from botgrpo.tasks import load_task

    cfg = point_config(args, args.point, ("grpo",), task=task)
    task = load_task(cfg.task)
    resolve_task_defaults(cfg, task)  # not check_inputs: the comparison may be running
    return planned_checkpoint(cfg, task)


def _resume_points(args, task: str) -> tuple[Path, Path]:
    """(the cache's resume point, its committed mirror) of the task's warm start: the mirror is
    ``OUT/regime-warm/<the task spec>/state.pt``."""
    entry = _warm_entry(args, task)
    cached = entry.with_name(f".{entry.name}.resume") / "state.pt"
    folder = task.replace(":", "_").replace(",", "_").replace("=", "-")
    return cached, Path(args.out) / "regime-warm" / folder / "state.pt"


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


def restore_resume(args, task: str) -> None:
    """A committed resume point further along than the cache's goes into the cache."""
    cached, kept = _resume_points(args, task)
    if _warm_entry(args, task).is_dir():
        return  # finished: nothing to resume
    if _copy_if_further(kept, cached):
        print(f"code regime: the warm start of {task} resumes from step {_step_of(cached)}")


def keep_resume(args, task: str, quiet: bool = False) -> None:
    """The cache's resume point, when further along, into the committed mirror; said in one
    line either way unless ``quiet`` (the mirroring thread)."""
    cached, kept = _resume_points(args, task)
    if _copy_if_further(cached, kept):
        print(f"code regime: kept the warm start's resume point, step {_step_of(kept)}, in {kept}")
    elif quiet:
        return
    elif _warm_entry(args, task).is_dir():
        print(f"code regime: the warm start of {task} has finished: no resume point to keep")
    elif not cached.is_file():
        raise ValueError(
            f"no resume point of the warm start of {task} in the cache ({cached}): nothing to "
            "keep; --keep-resume mirrors one after a `botgrpo warm-start` run was stopped"
        )
    else:
        print(f"code regime: {kept} is already at step {_step_of(kept)}: nothing to keep")


def mirror_resume(args, tasks: list[str], every_s: float = 120.0) -> None:
    """Keep the committed mirrors up to date while this process builds the tasks' warm
    starts."""
    import threading

    def loop() -> None:
        while True:
            time.sleep(every_s)
            for task in tasks:
                with contextlib.suppress(OSError, ValueError):  # the next round tries again
                    keep_resume(args, task, quiet=True)

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

    root = Path(args.out) / comparison_name(args, point)
    summary_path = root / "summary.json"
    if not summary_path.is_file():
        started = any((root / "runs").glob("*/done.json"))
        raise ValueError(
            f"no finished comparison in {root}: run --task {args.task} --point {point} first"
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
        if is_hardest_react(args, point) and arm not in arms and (extra / "summary.json").is_file():
            arms[arm] = extra
    for folder in dict.fromkeys(arms.values()):
        code_tasks.check_all_runs_finished(
            folder, f"run --task {args.task} --point {point} to finish them"
        )
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
    fam = family(args)
    result = {
        "id": f"{fam.name}-{point}",
        "label": f"{fam.label}, {fam.points[point]:g} slips",
        "task": point_task(args, point),
        "model": f"warm:{fam.name}-{point}",
        "start": start,
        "levels": levels,
        "budget": budget,
        "rows": [code_tasks._arm_row(a, r, curves, levels, rates[a]) for a, r in arms.items()],
        "pairs": [code_tasks._compare_pair(curves, a, b, levels, start, budget) for a, b in pairs],
        "costs": costs,
    }
    stem = Path(args.out) / f"{comparison_name(args, point)}-report"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2))
    stem.with_suffix(".md").write_text(code_tasks.render(result) + render_costs(costs))
    code_tasks.plot(curves, arms, result, stem.with_suffix(".png"))
    if is_hardest_react(args, point):
        plot_sweeps(args, Path(args.out) / "regime-hard-sweeps.png")
    elif (root / "sweep").is_dir():  # a point that swept its own rates (--sweep)
        plot_sweeps(args, stem.with_name(f"{root.name}-sweeps.png"), folders=(root.name,))
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


def plot_sweeps(args, path: Path, folders: tuple[str, ...] = ()) -> bool:
    """The validation sweeps of the comparisons in ``folders`` under --out (by default the
    hardest React point's and its extra arms'), every method and rate: compile rate and
    completion length (mean over the sweep seeds); False when no sweep is recorded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs: dict[tuple[str, float], list[list[dict]]] = {}
    for folder in folders or ("regime-hard", *EXTRA_ARMS.values()):
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
    hard = point_task(args, "hard")
    fig.suptitle(f"{hard}: validation sweeps (mean over the sweep's seeds)")
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

    for task in warm_tasks(args):
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
    if args.candidates and not (args.warm_start_only or args.keep_resume):
        raise ValueError(
            "--candidates names warm starts to build or keep: add --warm-start-only or "
            "--keep-resume"
        )
    arms = [f"--{a}" for a in ("otb", "ablation", "control", "sweep") if getattr(args, a)]
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
        choices=POINT_NAMES,
        help="the starting compile rate: hard (about 5%%), middle (12%%), easy (30%%)",
    )
    parser.add_argument(
        "--task",
        choices=list(FAMILIES),
        default="react",
        help="the long setting: react pages (react:sections=3) or python functions of helpers "
        "(python:helpers=3)",
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
        default=[1e-4, 2e-4, 4e-4, 8e-4],
        help="learning rates a validation sweep tries per method (the hardest React point's, "
        "or a point's own with --sweep; the highest mean compile rate over the run wins)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="choose this point's rates by its own validation sweep over --rates instead of "
        "reusing the hardest React point's (once started, later commands go on with it)",
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
    parser.add_argument(
        "--device", default="cpu", help="where warm starts train: cpu, cuda or cuda:N"
    )
    parser.add_argument(
        "--keep-resume",
        action="store_true",
        help="copy the point's warm-start resume point into OUT/regime-warm and stop",
    )
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        _check_modes(args)
        if args.sweep and is_hardest_react(args, args.point):
            raise ValueError(
                "--sweep: the hardest React point always sweeps its rates (--rates); leave it out"
            )
        if not is_hardest_react(args, args.point) and (args.otb or args.ablation or args.control):
            raise ValueError(
                "--otb, --ablation and --control run at the hardest React point: --task react "
                "--point hard"
            )
        from botgrpo.harness.cli import check_device

        check_device(args.device)
        if args.keep_resume:
            for task in warm_tasks(args):
                keep_resume(args, task)
            return
        if not args.report_only:
            building = [task for task in warm_tasks(args) if not _warm_entry(args, task).is_dir()]
            for task in building:
                restore_resume(args, task)
            if building:
                mirror_resume(args, building)
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
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback
        print(
            "code_regime.py: interrupted; finished runs, the runs' last checkpoints and the warm "
            "starts' last resume points are kept: run the same command again to resume",
            file=sys.stderr,
        )
        sys.exit(130)
