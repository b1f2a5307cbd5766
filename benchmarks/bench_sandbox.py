"""Throughput of the sandbox on HumanEval-style test runs.

Runs N (default 64) candidate solutions, each a small function checked by a HumanEval-style
``check(candidate)`` with 3 asserts, through the batch runner ``run_python_tests_many`` with
``max_workers`` (default 2) sandboxes at a time, and prints the total seconds, runs per second
and the mean seconds per run (every run is its own supervisor, namespaces and interpreter).
Half of the candidates are wrong in one case, so the failure path is timed too.
Run: .venv/bin/python benchmarks/bench_sandbox.py [--runs 64] [--workers 2]
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    sandbox.set_max_concurrency(args.workers)
    codes, tests = make_jobs(args.runs)
    sandbox.run_python_tests(codes[0], tests[0], "scale")  # warm caches (interpreter query)
    start = time.perf_counter()
    results = sandbox.run_python_tests_many(
        codes, tests, ["scale"] * args.runs, max_workers=args.workers
    )
    seconds = time.perf_counter() - start
    passed = sum(r.passed for r in results)
    expected = sum(3 if i % 2 == 0 else 2 for i in range(args.runs))
    assert passed == expected, f"{passed} cases passed, expected {expected}"
    isolation = results[0].run.isolation
    protections = ",".join(results[0].run.protections)
    print(f"sandbox: {args.runs} HumanEval-style runs (3 asserts), max_workers={args.workers}")
    print(f"isolation={isolation} protections={protections}")
    print(f"total {seconds:.2f} s  ->  {args.runs / seconds:.1f} runs/s")
    print(f"per run (wall, mean): {sum(r.run.wall_s for r in results) / args.runs * 1000:.0f} ms")


if __name__ == "__main__":
    main()
