"""The ``botgrpo`` command line.

    botgrpo train --config recipes/arithmetic_smoke_cpu.yaml [--any_config_field VALUE ...]
    botgrpo compare --task chain --methods grpo bot --seeds 5 [--steps N ...]
    botgrpo demo [--steps N ...]
    botgrpo warm-start [--task chain] [--retrain] [--package NAME]
    botgrpo summarize runs/NAME [runs/OTHER ...] [--methods grpo bot@2e-4] [--out DIR]
    botgrpo diagnose --task chain [--model warm:chain] [--prompts 64] [--json true]
    botgrpo check-flags runs/diagnose [--json]
    botgrpo real-model [smollm2-135m-instruct] [--force] [--list]

Each subcommand owns its parser (``train`` uses TRL's ``TrlParser``); new subcommands register
in :data:`COMMANDS`. A user's mistake ends in one line, ``botgrpo <command>: error: ...``, and
exit status 2 (see :mod:`botgrpo.usage`). For several processes launch the module, e.g.
``accelerate launch -m botgrpo.cli train --config recipe.yaml``.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from botgrpo.usage import run_reporting_usage_errors


def _train(argv: Sequence[str]) -> int:
    from botgrpo.trl.script import train

    train(list(argv))
    return 0


def _compare(argv: Sequence[str]) -> int:
    from botgrpo.harness.cli import compare_main

    return compare_main(argv)


def _demo(argv: Sequence[str]) -> int:
    from botgrpo.harness.cli import demo_main

    return demo_main(argv)


def _summarize(argv: Sequence[str]) -> int:
    from botgrpo.harness.cli import summarize_main

    return summarize_main(argv)


def _warm_start(argv: Sequence[str]) -> int:
    from botgrpo.harness.cli import warm_start_main

    return warm_start_main(argv)


def _diagnose(argv: Sequence[str]) -> int:
    from botgrpo.harness.cli import diagnose_main

    return diagnose_main(argv)


def _check_flags(argv: Sequence[str]) -> int:
    from botgrpo.harness.cli import check_flags_main

    return check_flags_main(argv)


def _real_model(argv: Sequence[str]) -> int:
    from botgrpo.models.real import real_model_main

    return real_model_main(argv)


#: Subcommand name -> (one-line help, runner taking the remaining arguments).
COMMANDS: dict[str, tuple[str, Callable[[Sequence[str]], int]]] = {
    "train": ("train with BoTGRPOTrainer from a YAML recipe and/or flags", _train),
    "compare": ("methods x seeds from one warm start: curves, speedups with intervals", _compare),
    "demo": ("GRPO vs BoT-GRPO on the built-in task with a tiny offline model", _demo),
    "warm-start": (
        "train or rebuild a task's warm start and print its held-out metrics",
        _warm_start,
    ),
    "summarize": ("recompute a comparison's summary and plot from its finished runs", _summarize),
    "diagnose": (
        "before a long run: will BoT pay on this task and model? figures and advice",
        _diagnose,
    ),
    "check-flags": (
        "a hand check of diagnose's flagged steps: is your verifier precise enough?",
        _check_flags,
    ),
    "real-model": ("fetch and convert a real pretrained model (real:NAME), no hub", _real_model),
}


def _usage() -> str:
    lines = ["usage: botgrpo <command> [options]", "", "commands:"]
    lines += [f"  {name:<11} {help_}" for name, (help_, _) in COMMANDS.items()]
    lines += ["", "botgrpo <command> --help shows a command's options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``botgrpo`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if args[0] not in COMMANDS:
        print(
            f"botgrpo: error: unknown command {args[0]!r}; commands: {', '.join(COMMANDS)} "
            "(`botgrpo --help` says what each does)",
            file=sys.stderr,
        )
        return 2
    command, run = args[0], COMMANDS[args[0]][1]
    with _one_line_warnings(command):
        return run_reporting_usage_errors(command, lambda: run(args[1:]))


@contextlib.contextmanager
def _one_line_warnings(command: str) -> Iterator[None]:
    """botgrpo's own warnings as one line, ``botgrpo COMMAND: warning: ...``, like its errors
    (other libraries' warnings keep Python's form)."""
    package = str(Path(__file__).resolve().parent)
    default = warnings.formatwarning

    def format_(message, category, filename, lineno, line=None):
        if str(Path(filename).resolve()).startswith(package):
            return f"botgrpo {command}: warning: {' '.join(str(message).split())}\n"
        return default(message, category, filename, lineno, line)

    warnings.formatwarning = format_
    try:
        yield
    finally:
        warnings.formatwarning = default


if __name__ == "__main__":
    raise SystemExit(main())
