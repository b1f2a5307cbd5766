"""`botgrpo compare` and `botgrpo demo` (flags generated from CompareConfig)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from botgrpo.folders import check_outside_owned
from botgrpo.harness.config import (
    CompareConfig,
    add_dataclass_arguments,
    config_from_args,
    resolve_task_defaults,
)
from botgrpo.usage import (
    UsageError,
    check_package_name,
    check_task_spec,
    check_writable_folder,
    one_line_parser_errors,
    remove_owned_folder,
)

#: The demo: the default task from its shipped warm start, grpo vs bot, evaluated often enough
#: to see the first 20-30 steps where the learning happens, in 5-12 minutes on two cores.
DEMO_DEFAULTS = {
    "name": "demo",
    "methods": ("grpo", "bot"),
    "seeds": 1,
    "steps": 40,
    "eval_every": 5,
    "eval_problems": 500,
    "pass_samples": 1,
    "pass_problems": 500,
}


def _task_defaults(argv: Sequence[str], attribute: str) -> dict:
    """The defaults a built-in task suggests for a command (its ``compare_defaults`` or
    ``demo_defaults``: the code tasks lead with the compile rate and evaluate fewer problems),
    read from ``--task`` before the full parse; flags given still win."""
    from botgrpo.tasks import BUILTIN_TASKS

    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--task", default=CompareConfig.task)
    spec = early.parse_known_args(list(argv))[0].task
    cls = BUILTIN_TASKS.get(str(spec).partition(":")[0])
    return dict(getattr(cls, attribute, {})) if cls is not None else {}


def _parse(
    argv: Sequence[str], prog: str, description: str, defaults: dict | None
) -> tuple[CompareConfig, object]:
    """(the comparison's config from flags, its task), with every input checked (the task,
    its problems, the output folder, init_model) before anything is created;
    :class:`UsageError` otherwise."""
    from botgrpo.harness.compare import check_inputs

    parser = one_line_parser_errors(argparse.ArgumentParser(prog=prog, description=description))
    attribute = "demo_defaults" if prog.endswith("demo") else "compare_defaults"
    defaults = {**(defaults or {}), **_task_defaults(argv, attribute)}
    add_dataclass_arguments(parser, CompareConfig, defaults)
    try:
        cfg = config_from_args(CompareConfig, parser.parse_args(list(argv)))
    except ValueError as err:
        raise UsageError(str(err)) from err
    check_task_spec(cfg.task)  # before the warm start: a bad task fails in a second
    try:
        return cfg, check_inputs(cfg)
    except ValueError as err:
        raise UsageError(f"{err}") from err


def _run_comparison(cfg: CompareConfig, task) -> Path:
    """``compare(cfg, task)``, with a finished run of other settings reported as a usage
    error."""
    from botgrpo.harness.compare import compare
    from botgrpo.harness.runner import SettingsChanged

    try:
        return compare(cfg, task)
    except SettingsChanged as err:
        raise UsageError(str(err)) from err


def compare_main(argv: Sequence[str]) -> int:
    """``botgrpo compare [--flags]``: run a comparison, print the summary."""
    cfg, task = _parse(
        argv,
        "botgrpo compare",
        "Methods x seeds on one task from one warm start; writes metrics.jsonl, "
        "curves.png and summary.md under OUT_DIR/NAME.",
        None,
    )
    summary = _run_comparison(cfg, task)
    print(f"summary: {summary}\nplot:    {summary.parent / 'curves.png'}")
    _print_sweep_edges(summary)
    return 0


def _print_sweep_edges(summary: Path) -> None:
    """A note per method whose swept rate lies at the edge of its grid (from summary.json)."""
    import json

    from botgrpo.harness.summary import sweep_edges

    try:
        sweep = json.loads(summary.with_suffix(".json").read_text()).get("lr_sweep")
    except (OSError, ValueError):
        return
    for line in sweep_edges(sweep) if sweep else []:
        print(f"note:    {line}")


def demo_main(argv: Sequence[str]) -> int:
    """``botgrpo demo``: `compare` with grpo and bot on the default task at a small budget."""
    cfg, task = _parse(
        argv,
        "botgrpo demo",
        "GRPO vs BoT-GRPO on a built-in task (chain arithmetic by default; --task react or "
        "python) with a tiny offline model: the task's shipped warm start (which imitates a "
        "flawed teacher: on chain, one that forgets carries), RL, held-out evaluation, plot and "
        "summary, 5-12 minutes on two CPU cores. Any compare option can be changed.",
        DEMO_DEFAULTS,
    )
    print(
        f"botgrpo demo: {', '.join(cfg.methods)} on {cfg.task}, {cfg.seeds} "
        f"seed{'s' * (cfg.seeds != 1)} x {cfg.steps} steps (shows learning; which method is "
        "faster needs 3+ seeds: `botgrpo compare --seeds 5`, results in docs/results/)"
    )
    summary = _run_comparison(cfg, task)
    print(f"summary: {summary}\nplot:    {summary.parent / 'curves.png'}")
    return 0


def _evaluate_checkpoint(path, task, cfg: CompareConfig) -> dict[str, float]:
    """The held-out metrics of a checkpoint, as a comparison's step-0 evaluation measures them."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo.harness.evaluate import evaluate, held_out_examples
    from botgrpo.loading import from_pretrained

    torch.manual_seed(0)
    result = evaluate(
        from_pretrained(AutoModelForCausalLM, path),
        AutoTokenizer.from_pretrained(path),
        task,
        held_out_examples(task, cfg.eval_problems),
        max_new_tokens=cfg.max_completion_length,
        n_samples=cfg.pass_samples,
        sample_problems=cfg.pass_problems,
        ks=(1,),
        temperature=cfg.temperature,
        cache_implementation=cfg.generation_cache,
    )
    return {k: round(v, 4) for k, v in result.record().items()}


def _weights_match(a: Path, b: Path) -> str:
    """Whether two checkpoints hold the same weights, in words."""
    from safetensors.torch import load_file

    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    if wa.keys() != wb.keys():
        return "different parameter names"
    diff = max(float((wa[k].double() - wb[k].double()).abs().max()) for k in wa)
    if diff == 0.0:
        return "identical weights"
    return f"weights differ (largest difference {diff:.2e}; another torch build or thread count)"


def warm_start_main(argv: Sequence[str]) -> int:
    """``botgrpo warm-start``: train (or rebuild) the warm start of a comparison and report its
    held-out metrics; ``--package`` writes it where the package ships its warm starts."""
    import json
    import os
    import shutil

    from botgrpo.folders import atomic_write_text
    from botgrpo.harness.compare import starting_checkpoint
    from botgrpo.shipped import PACKAGED_DIR
    from botgrpo.tasks.vocabulary import check_tiny_vocabulary

    parser = argparse.ArgumentParser(
        prog="botgrpo warm-start",
        description="Train the supervised warm start a comparison on TASK starts from (cached "
        "under OUT_DIR/.cache; never on held-out problems) and print its held-out metrics. "
        "`botgrpo warm-start --retrain --package chain` rebuilds the checkpoint shipped for the "
        "default task.",
    )
    keep = ("task", "out_dir", "warm_start_steps", "warm_start_lr", "warm_start_schedule_steps")
    keep += ("warm_start_stop", "warm_start_anneal", "warm_start_watch_accuracy")
    keep += ("warm_start_packed", "warm_start_batch_size", "warm_start_patience")
    keep += ("eval_problems", "pass_samples", "pass_problems", "max_completion_length")
    suggested = _task_defaults(argv, "compare_defaults")  # what a comparison would start from
    add_dataclass_arguments(
        parser, CompareConfig, {k: v for k, v in suggested.items() if k in keep}, only=keep
    )
    parser.add_argument("--retrain", action="store_true", help="train even if shipped or cached")
    parser.add_argument(
        "--device",
        default="cpu",
        help="where a warm start that must be trained trains: cpu (default), cuda or cuda:N "
        "(the demonstrations are made on the CPU; not part of the cache key)",
    )
    parser.add_argument(
        "--package",
        metavar="NAME",
        help="copy it to the package's warm starts as checkpoints/NAME (a plain name; an "
        "existing NAME is replaced only if it is a warm start botgrpo wrote)",
    )
    one_line_parser_errors(parser)
    ns = parser.parse_args(list(argv))
    try:
        cfg = CompareConfig(**{k: getattr(ns, k) for k in keep}, metric="greedy_solved")
        if ns.package is not None:
            check_package_name(ns.package)
            _check_package_target(PACKAGED_DIR / ns.package)
        check_writable_folder(cfg.out_dir, "out_dir")
        check_outside_owned(cfg.out_dir, "out_dir")
        check_device(ns.device)
    except ValueError as err:
        raise UsageError(str(err)) from err
    task = check_task_spec(cfg.task)
    try:
        resolve_task_defaults(cfg, task)
        check_tiny_vocabulary(task)
    except ValueError as err:
        raise UsageError(str(err)) from err
    shipped = None
    if ns.retrain:
        from botgrpo.harness.compare import warm_start_config
        from botgrpo.harness.evaluate import held_out_prompts
        from botgrpo.harness.warmstart import packaged_warm_start

        held = held_out_prompts(task, cfg.eval_problems)
        key = warm_start_config(cfg, task).cache_key(task, held)
        shipped = packaged_warm_start(key)
    path = starting_checkpoint(
        cfg, task, use_packaged=not ns.retrain, rebuild=ns.retrain, device=ns.device
    )
    if shipped is not None:
        print(f"against the shipped checkpoint {shipped}: {_weights_match(path, shipped)}")
    meta_path = path / "warm_start.json"
    meta = json.loads(meta_path.read_text())
    meta["metrics"] = _evaluate_checkpoint(path, task, cfg)
    atomic_write_text(meta_path, json.dumps(meta, indent=2))
    print(f"warm start: {path}")
    print("held-out metrics: " + ", ".join(f"{k} {v:.3f}" for k, v in meta["metrics"].items()))
    if ns.package is not None:
        target = PACKAGED_DIR / ns.package
        staged = PACKAGED_DIR / f".{ns.package}.tmp-{os.getpid()}"
        shutil.copytree(path, staged, ignore=shutil.ignore_patterns(".botgrpo*"))
        try:
            remove_owned_folder(target, PACKAGED_DIR, "warm_start.json")
            staged.rename(target)
        finally:
            shutil.rmtree(staged, ignore_errors=True)
        print(f"packaged: {target}")
    return 0


def check_device(device: str) -> None:
    """ValueError unless ``device`` names a torch device this machine has."""
    import torch

    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(
            f"--device {device!r}: not a device name; use cpu, cuda or cuda:N"
        ) from err
    if dev.type == "cpu":
        return
    if dev.type != "cuda":
        raise ValueError(f"--device {device!r}: only cpu and cuda are supported")
    if not torch.cuda.is_available():
        raise ValueError(f"--device {device!r}: this machine has no CUDA device; use cpu")
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(
            f"--device {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)"
        )


def _check_package_target(target: Path) -> None:
    """ValueError unless ``target`` is free or a warm start botgrpo wrote (it is replaced)."""
    if target.is_symlink() or (target.exists() and not (target / "warm_start.json").is_file()):
        raise ValueError(
            f"--package: {target} exists and is not a warm start (no warm_start.json); pick "
            "another name"
        )


def summarize_main(argv: Sequence[str]) -> int:
    """``botgrpo summarize DIR [DIR ...]``: recompute summaries and plots from finished runs."""
    from botgrpo.harness.resummarize import resummarize

    parser = argparse.ArgumentParser(
        prog="botgrpo summarize",
        description="Recompute summary.md, summary.json and curves.png of finished comparisons "
        "from their runs (nothing is rerun): with another --metric or --thresholds, a subset of "
        "--methods (METHOD or METHOD@LR), or merged from several comparisons of the same task, "
        "starting checkpoint and budget (e.g. each method at its best learning rate).",
    )
    parser.add_argument("dirs", nargs="+", type=Path, help="`botgrpo compare` output folders")
    parser.add_argument("--out", type=Path, help="output folder (default: the one DIR given)")
    parser.add_argument("--methods", nargs="+", default=(), help="METHOD or METHOD@LR each")
    parser.add_argument("--metric", help="lead metric (default: the comparison's)")
    parser.add_argument(
        "--thresholds", nargs="+", type=float, default=(), help="given levels, each in (0, 1)"
    )
    one_line_parser_errors(parser)
    ns = parser.parse_args(list(argv))
    ns.dirs = [d.expanduser() for d in ns.dirs]
    ns.out = ns.out.expanduser() if ns.out is not None else None
    if ns.out is None and len(ns.dirs) > 1:
        raise UsageError("several folders are merged into a new one: pass --out")
    try:
        for folder in ns.dirs:
            if not folder.is_dir():
                what = "is not a folder" if folder.exists() else "does not exist"
                raise ValueError(f"{folder} {what}: pass `botgrpo compare` output folders")
        check_writable_folder(ns.out or ns.dirs[0], "--out")
        bad = [t for t in ns.thresholds if not 0 < t < 1]
        if bad:
            raise ValueError(f"--thresholds must lie strictly between 0 and 1, got {bad}")
        summary = resummarize(
            ns.dirs,
            ns.out or ns.dirs[0],
            methods=tuple(ns.methods),
            metric=ns.metric,
            thresholds=tuple(ns.thresholds),
        )
    except ValueError as err:
        raise UsageError(str(err)) from err
    print(f"summary: {summary}\nplot:    {summary.parent / 'curves.png'}")
    _print_sweep_edges(summary)
    return 0


def diagnose_main(argv: Sequence[str]) -> int:
    """``botgrpo diagnose``: step-0 figures of a task or recipe on a model, and advice."""
    import json

    from botgrpo.folders import (
        atomic_write_text,
        check_empty_unless_ours,
        check_folder_kind,
        command_line,
        own_folder,
    )
    from botgrpo.harness.advice import advise, plot_diagnosis, render_diagnosis
    from botgrpo.harness.diagnose import (
        DiagnoseConfig,
        ModelUnavailable,
        RewardFailed,
        diagnose,
        plan,
    )
    from botgrpo.harness.flags import FLAGS_FILE, check_no_marks, write_flags

    parser = one_line_parser_errors(
        argparse.ArgumentParser(
            prog="botgrpo diagnose",
            description="Before a long run: sample K rollouts of N prompts from your model, "
            "score them with your reward functions (a task's, or a `botgrpo train` recipe's), "
            "and measure what GRPO and BoT would get at step 0 (groups without signal, the "
            "local signal's share, the verdicts against the outcome), with 95% intervals; "
            "then where those figures sit among the settings measured in docs/results, and "
            "what to try. Writes OUT_DIR/NAME/diagnosis.json, .md and .png, and flags.jsonl (a "
            "sample of the flagged steps to check by hand with `botgrpo check-flags`).",
        )
    )
    add_dataclass_arguments(parser, DiagnoseConfig)
    try:
        cfg = config_from_args(DiagnoseConfig, parser.parse_args(list(argv)))
        if cfg.task:
            check_task_spec(cfg.task)
        folder = Path(cfg.out_dir) / cfg.name
        check_package_name(cfg.name, "--name")
        check_outside_owned(cfg.out_dir, "--out-dir")  # before anything is written there
        check_folder_kind(folder, "diagnosis", what="the diagnosis folder")
        check_no_marks(folder / FLAGS_FILE)
        check_empty_unless_ours(folder, "the diagnosis folder")
        check_writable_folder(folder, "the diagnosis folder")
        planned = plan(cfg)
    except (ValueError, OSError) as err:
        raise UsageError(" ".join(str(err).split())) from err
    # the folder is held from sampling to writing: a second diagnosis into it is refused
    with own_folder(folder, "diagnosis", command_line(), what="the diagnosis folder"):
        try:
            result = diagnose(cfg, planned)
        except RewardFailed as err:
            raise UsageError(f"a reward function failed on the sampled rollouts: {err}") from err
        except ModelUnavailable as err:
            raise UsageError(" ".join(str(err).split())) from err
        result["advice"] = advise(result)
        flags = result.pop("flags")
        try:  # marked by check-flags while this diagnosis sampled
            check_no_marks(folder / FLAGS_FILE)
        except ValueError as err:
            raise UsageError(" ".join(str(err).split())) from err
        if flags:
            write_flags(folder / FLAGS_FILE, flags)
        else:  # an unmarked sample of an earlier diagnosis would not belong to this one
            (folder / FLAGS_FILE).unlink(missing_ok=True)
        atomic_write_text(folder / "diagnosis.json", json.dumps(result, indent=2, default=str))
        report = render_diagnosis(result)
        atomic_write_text(folder / "diagnosis.md", report)
        plot_diagnosis(result, folder / "diagnosis.png")
    if cfg.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print(report)
        print(f"\nfigures: {folder / 'diagnosis.json'}\nplot:    {folder / 'diagnosis.png'}")
        if flags:
            print(f"flags:   {folder / FLAGS_FILE} (a hand check: botgrpo check-flags)")
    return 0


def check_flags_main(argv: Sequence[str]) -> int:
    """``botgrpo check-flags``: the flags' precision from a hand check of diagnose's sample."""
    import json

    from botgrpo.harness.advice import load_map
    from botgrpo.harness.flags import (
        FLAGS_FILE,
        check_flags,
        mark_flags,
        read_checked,
        render_check,
    )

    parser = one_line_parser_errors(
        argparse.ArgumentParser(
            prog="botgrpo check-flags",
            description="Read your hand marks in the flagged steps that `botgrpo diagnose` "
            f'sampled ({FLAGS_FILE}: --mark asks about each flag in turn, or set "wrong" to '
            "true or false on each line you checked) and print the share that are really "
            "wrong, the flags' precision, with a 95% Wilson interval, against the lowest share "
            "at which BoT kept its lead on the map of where BoT pays (docs/diagnose.md). Writes "
            "nothing, except the marks --mark asks for, into the file itself.",
        )
    )
    parser.add_argument("path", help=f"a diagnosis folder or its {FLAGS_FILE}")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--mark",
        action="store_true",
        help="first show each unmarked flag and ask whether it is wrong (y/n/s/q); the file "
        "is saved after every answer",
    )
    args = parser.parse_args(list(argv))
    path = Path(args.path).expanduser()
    # with --json, stdout holds the JSON alone: the marking dialogue goes to stderr
    talk = sys.stderr if args.json else sys.stdout

    def ask(question: str) -> str:
        talk.write(question)
        talk.flush()
        return input()

    try:
        if args.mark:
            made, left = mark_flags(path, ask, lambda text: print(text, file=talk))
            print(f"\n{made} flags marked; {left} left unmarked.\n", file=talk)
        marks, unmarked = read_checked(path)
    except (ValueError, OSError) as err:
        raise UsageError(" ".join(str(err).split())) from err
    result = check_flags(marks, unmarked, load_map()["rule"])
    result.update(_beside(path))
    print(json.dumps(result, indent=2) if args.json else render_check(result))
    return 0


def _beside(path: Path) -> dict:
    """What the diagnosis.json beside a flags file says of it: whether it judged with a task's
    exact verdicts (``exact_verdicts``) and whether the file is the sample it wrote
    (``same_diagnosis``); None for each where it cannot tell."""
    import json

    from botgrpo.harness.flags import flags_digest, read_entries

    folder = path if path.is_dir() else path.parent
    try:
        diagnosis = json.loads((folder / "diagnosis.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        diagnosis = None
    if not isinstance(diagnosis, dict):
        return {"exact_verdicts": None, "same_diagnosis": None}
    sample = diagnosis.get("flag_sample")
    digest = sample.get("digest") if isinstance(sample, dict) else None
    same = None if not isinstance(digest, str) else flags_digest(read_entries(path)) == digest
    exact = diagnosis.get("exact_verdicts")
    # what the diagnosis says of its verdicts holds for its own flags only
    exact = exact if isinstance(exact, bool) and same is not False else None
    return {"exact_verdicts": exact, "same_diagnosis": same}
