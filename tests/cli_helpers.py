"""Running ``botgrpo`` in the test process and reading its one-line errors."""

from __future__ import annotations

import warnings

from botgrpo.cli import main


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    """(exit status, stderr) of ``botgrpo ARGV`` run in this process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    return code, capsys.readouterr().err


def assert_one_line(err: str, command: str, *parts: str) -> str:
    """The one non-empty line of ``err``: ``botgrpo COMMAND: error: ...`` holding every part."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"botgrpo {command}: error: "), err
    for part in parts:
        assert part in lines[0], (part, err)
    return lines[0]
