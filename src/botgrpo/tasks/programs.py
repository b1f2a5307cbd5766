"""Longer Python functions: one built from several helpers (``python:helpers=N``).

A prompt names a function, the helpers whose results it returns, and example calls; a
completion is one fenced ``python`` block of about 8 lines a helper (16-48 lines; 3 helpers:
24-26) defining every helper, each with its loop and branch, then the function that calls
them::

    prompt:      def summary(nums, t):
                     returns [count_above(nums, t), sum_evens(nums)]
                 summary([3, 8, 1], 2) == [2, 8]
                 summary([5], 9) == [0, 0]
    completion:  ```python
                 def count_above(nums, t):
                     n = 0
                     for x in nums:
                         if x > t:
                             n += 1
                     return n

                 def sum_evens(nums):
                     total = 0
                     for x in nums:
                         if x % 2 == 0:
                             total += x
                     return total

                 def summary(nums, t):
                     r1 = count_above(nums, t)
                     r2 = sum_evens(nums)
                     return [r1, r2]
                 ```

The helpers are distinct families of the flat task that take the list, the number or both
(:data:`COMPOSABLE`), written by the same teacher with the same slips at every opportunity
(``colon`` at every ``def``/``for``/``if``, ``name`` at every helper's return,
``off_by_one`` at every helper's comparison), so a function of N helpers has about 4 N places
to slip and one of them decides whether it runs. Tests: the examples, two more calls, and each
helper called alone on the boundary of its comparison.
"""

from __future__ import annotations

import random

from botgrpo.tasks.teacher import Teacher

#: Families of the flat task that a function of helpers can call with its list and number.
COMPOSABLE = ("count_above", "count_equal", "first_at_least", "max_item", "sum_evens", "sum_to")
MAIN_NAMES = ("summary", "report", "profile", "digest", "overview")
#: The most helpers a function may have (each family once).
MAX_HELPERS = len(COMPOSABLE)


def _args(params: str, names: dict[str, str]) -> str:
    return params.format(**names)


def sample_program(rng: random.Random, helpers: int, examples: int, families, boundary_args):
    """A function of ``helpers`` helpers: its prompt, tests and meta. ``families``: the flat
    task's FAMILIES; ``boundary_args(family, rng)``: a call on the family's boundary."""
    chosen = sorted(rng.sample(COMPOSABLE, helpers))
    names = {"a": rng.choice(("nums", "xs", "items", "values", "data")),
             "b": rng.choice(("t", "k", "limit", "v", "m"))}  # fmt: skip
    main = rng.choice(MAIN_NAMES)
    signature = f"def {main}({names['a']}, {names['b']}):"
    calls = ", ".join(f"{f}({_args(families[f][0], names)})" for f in chosen)

    def result(a, b):
        out = []
        for family in chosen:
            params = families[family][0]
            args = (a, b) if params == "{a}, {b}" else (a,) if params == "{a}" else (b,)
            out.append(families[family][2](*args))
        return out

    cases = []
    for _ in range(examples + 2):
        a = [rng.randint(0, 9) for _ in range(rng.randint(1, 6))]  # max_item needs one item
        b = rng.randint(0, 9)
        cases.append((a, b, result(a, b)))
    shown = [f"{main}({a!r}, {b!r}) == {r!r}" for a, b, r in cases[:examples]]
    prompt = "\n".join([signature, f"    returns [{calls}]", *shown]) + "\n"
    tests = [f"assert {main}({a!r}, {b!r}) == {r!r}" for a, b, r in cases]
    for family in chosen:
        args = boundary_args(family, rng)
        expected = families[family][2](*args)
        tests.append(f"assert {family}({', '.join(map(repr, args))}) == {expected!r}")
    helper_metas = [
        {"family": f, "names": names, "signature": f"def {f}({_args(families[f][0], names)}):"}
        for f in chosen
    ]
    meta = {
        "family": main,
        "names": names,
        "signature": signature,
        "helpers": helper_metas,
        "test": "\n".join(tests),
    }
    return prompt, "\n".join(tests), meta


def program_lines(meta, teacher: Teacher, rng: random.Random, function_lines) -> list[str]:
    """The teacher's helpers and function, one string per line, slipping at each
    opportunity (``function_lines``: the flat task's writer of one family's function)."""
    lines: list[str] = []
    results = []
    for k, helper in enumerate(meta["helpers"], start=1):
        lines += function_lines(helper, teacher, rng)
        lines.append("")
        results.append(f"r{k}")
    signature = meta["signature"]
    lines.append(signature[:-1] if teacher.slips("colon", rng) else signature)
    for k, helper in enumerate(meta["helpers"], start=1):
        call = helper["signature"][len("def ") : -1]
        lines.append(f"    r{k} = {call}")
    lines.append(f"    return [{', '.join(results)}]")
    return lines
