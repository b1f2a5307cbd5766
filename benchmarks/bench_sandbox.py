"""Throughput of the sandbox on HumanEval-style test runs.

Runs N (default 64) candidate solutions, each a small function checked by a HumanEval-style
``check(candidate)`` with 3 asserts, through the batch runner ``run_python_tests_many`` with
``max_workers`` (default 2) sandboxes at a time, and prints the total seconds, runs per second
and the mean seconds per run (every run is its own supervisor, namespaces and interpreter).
Half of the candidates are wrong in one case, so the failure path is timed too.

The system-call filter's cost: rounds with the filter and without it alternate (``--rounds``,
default 5, so machine load drifts into both alike); each round's runs/s without / with is one
paired ratio, and the median of those ratios with its range is the filter's cost
(target: < 5%, i.e. a ratio below 1.05).
Run: .venv/bin/python benchmarks/bench_sandbox.py [--runs 64] [--workers 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from botgrpo.rewards import sandbox

TESTS = """
def check(candidate):
    assert candidate(1) == {one}
    assert candidate(2) == {two}
    assert candidate(10) == {ten}
"""


def make_jobs(n: int) -> tuple[list[str], list[str]]:
    """n candidates ``f(x) = k * x`` (odd ones off by one at x == 10) and their tests."""
    codes, tests = [], []
    for i in range(n):
        k = i % 7 + 1
        bug = " + (x == 10)" if i % 2 else ""
        codes.append(f"def scale(x):\n    return {k} * x{bug}\n")
        tests.append(TESTS.format(one=k, two=2 * k, ten=10 * k))
    return codes, tests


def one_round(codes: list[str], tests: list[str], workers: int, seccomp: bool) -> tuple:
    """(seconds, results) of every job once."""
    start = time.perf_counter()
    results = sandbox.run_python_tests_many(
        codes, tests, ["scale"] * len(codes), max_workers=workers, seccomp=seccomp
    )
    seconds = time.perf_counter() - start
    passed = sum(r.passed for r in results)
    expected = sum(3 if i % 2 == 0 else 2 for i in range(len(codes)))
    assert passed == expected, f"{passed} cases passed, expected {expected}"
    filtered = "seccomp" in results[0].run.protections
    assert filtered == seccomp, f"seccomp={seccomp} but protections {results[0].run.protections}"
    return seconds, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sandbox.set_max_concurrency(args.workers)
    codes, tests = make_jobs(args.runs)
    sandbox.run_python_tests(codes[0], tests[0], "scale")  # warm caches (interpreter query)
    rates: dict[bool, list[float]] = {True: [], False: []}
    for i in range(args.rounds):
        for seccomp in (True, False) if i % 2 == 0 else (False, True):
            seconds, results = one_round(codes, tests, args.workers, seccomp)
            rates[seccomp].append(args.runs / seconds)
    print(f"sandbox: {args.runs} HumanEval-style runs (3 asserts), max_workers={args.workers}")
    print(
        f"isolation={results[0].run.isolation} protections={','.join(results[0].run.protections)}"
    )
    for seccomp in (True, False):
        label = "with filter   " if seccomp else "without filter"
        print(f"{label}: {statistics.median(rates[seccomp]):.1f} runs/s (median of {args.rounds})")
    ratios = [off / on for off, on in zip(rates[False], rates[True], strict=True)]
    print(
        f"filter cost: runs/s without / with = {statistics.median(ratios):.3f} (median of "
        f"{args.rounds} paired rounds; range {min(ratios):.3f}-{max(ratios):.3f}; target < 1.05)"
    )


if __name__ == "__main__":
    main()
