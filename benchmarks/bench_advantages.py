"""Speed of the vectorised BoT advantage against the honest floor (one read of the batch), and
against loops.

B = 512 rollouts (64 prompts x 8), T in {1024, 4096, 8192}, right-padded masks with random
lengths, at 1 and 2 threads. For each case it times, interleaved on the same tensors (medians
of --repeats runs, so a busy machine slows both sides alike):

  - bot:    get_advantage_estimator("bot")(rewards_BT, mask_BT, group_B)
  - floor:  the cheapest single read of the batch as a masked sum: min over
            ``(rewards_BT * m).sum(1)`` and ``torch.linalg.vecdot(rewards_BT, m)`` with m the
            mask as numbers in the rewards' dtype (no conversion pass inside the floor);
  - reads:  ``rewards_BT.sum(1)`` and the mask's row sums: each input read once, nothing
            written, a stricter floor still (no estimator can read less, and every estimator
            must also write its [B, T] result).

Cases (rewards dtype, mask dtype): float32 + float 0/1 mask (a user's tensors), float32 + bool,
and float64 + bool, which is what BoTGRPOTrainer passes (botgrpo.trl.token_batch builds float64
token rewards and a bool mask); each is compared with the floor in its own rewards dtype.

At a small T (default 128, where a loop finishes in seconds) it also times
  - loop:  the token-by-token loop reference the tests check the core against
           (tests/core_reference.py), i.e. the estimator written straight from the formula
  - group-loop: a per-group, per-rollout Python loop of torch ops (a middle ground).
Targets: bot/floor <= 5 (CPU), loop/bot >= 50; on a GPU, bot < 1 ms at T = 8192. Results:
docs/results/estimator-speed.md.
Run: make bench, or python benchmarks/bench_advantages.py [--device cuda] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from botgrpo.core import get_advantage_estimator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.core_reference import bag_loop

PROMPTS, K = 64, 8
CASES = [
    ("float32", "float"),
    ("float32", "bool"),
    ("float64", "bool"),
]


def make_batch(length: int, device: str, dtype=torch.float32, mask_dtype=torch.bool, seed=0):
    gen = torch.Generator().manual_seed(seed)
    batch = PROMPTS * K
    lengths = torch.randint(length // 4, length + 1, (batch,), generator=gen)
    mask_BT = (torch.arange(length)[None, :] < lengths[:, None]).to(device, mask_dtype)
    rewards_BT = torch.randn(batch, length, generator=gen).to(device, dtype)
    group_B = torch.arange(PROMPTS).repeat_interleave(K).to(device)
    return rewards_BT, mask_BT, group_B


def loop_bot(rewards_BT, mask_BT, group_B, eps=1e-6):
    """The estimator written as loops over groups and rollouts (what the core replaces)."""
    adv_BT = torch.zeros_like(rewards_BT)
    for g in group_B.unique().tolist():
        rows = (group_B == g).nonzero().flatten().tolist()
        kept = [rewards_BT[b][mask_BT[b]].double() for b in rows]
        kept_rows = [(b, r) for b, r in zip(rows, kept, strict=True) if len(r)]
        mu = sum(r.mean() for _, r in kept_rows) / len(kept_rows)
        var = sum(((r - mu) ** 2).mean() for _, r in kept_rows) / len(kept_rows)
        sigma = var.sqrt()
        for b, r in kept_rows:
            adv_BT[b, : len(r)] = ((r - mu) / (sigma + eps)).float()
    return adv_BT


def _once(fn: Callable[[], object], device: str) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def timeit_interleaved(fns: dict[str, Callable[[], object]], repeats: int, device: str):
    """Median wall time in seconds of each function, run in turn ``repeats`` times after a
    warm-up, so slow phases of a shared machine hit every function alike."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(_once(fn, device))
    return {name: statistics.median(ts) for name, ts in times.items()}


def timeit(fn, repeats: int, device: str) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs after one warm-up, in seconds."""
    return timeit_interleaved({"fn": fn}, repeats, device)["fn"]


def floor_fns(rewards_BT: torch.Tensor, mask_BT: torch.Tensor) -> dict[str, Callable]:
    """The masked sums the floor is the cheapest of, and the plain reads of both inputs."""
    numbers_BT = mask_BT.to(rewards_BT.dtype)
    if mask_BT.dtype == torch.bool:  # read as bytes: bool.sum() widens every element to int64
        bytes_BT = mask_BT.view(torch.uint8)

        def read_mask():
            return bytes_BT.sum(1, dtype=torch.int32)
    else:

        def read_mask():
            return mask_BT.sum(1)

    return {
        "floor_mul_sum": lambda: (rewards_BT * numbers_BT).sum(1),
        "floor_vecdot": lambda: torch.linalg.vecdot(rewards_BT, numbers_BT),
        "reads": lambda: (rewards_BT.sum(1), read_mask()),
    }


def case_row(bot, length: int, dtype: str, mask: str, args) -> dict[str, float]:
    mask_dtype = torch.bool if mask == "bool" else getattr(torch, dtype)
    r, m, g = make_batch(length, args.device, getattr(torch, dtype), mask_dtype)
    fns = {"bot": lambda: bot(r, m, g), **floor_fns(r, m)}
    t = timeit_interleaved(fns, args.repeats, args.device)
    t["floor"] = min(t["floor_mul_sum"], t["floor_vecdot"])
    return t


def loop_row(bot, length: int, repeats: int) -> None:
    """Time both loops against bot at a small T and print their ratios."""
    r, m, g = make_batch(length, "cpu")
    expected = bot(r, m, g)
    torch.testing.assert_close(bag_loop(r, m, g).float(), expected, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(loop_bot(r, m, g), expected, rtol=1e-4, atol=1e-4)
    t_bot = timeit(lambda: bot(r, m, g), repeats, "cpu")
    t_loop = timeit(lambda: bag_loop(r, m, g), 1, "cpu")
    t_group = timeit(lambda: loop_bot(r, m, g), 3, "cpu")
    print(
        f"T={length}: bot {t_bot * 1e3:.2f} ms | loop {t_loop * 1e3:.0f} ms, loop/bot "
        f"{t_loop / t_bot:.0f} | group-loop {t_group * 1e3:.1f} ms, group-loop/bot "
        f"{t_group / t_bot:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096, 8192])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--loop-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-loop", action="store_true", help="skip the loop comparison")
    args = parser.parse_args()
    bot = get_advantage_estimator("bot")
    threads = args.threads if args.device == "cpu" else [torch.get_num_threads()]
    print(f"device={args.device} B={PROMPTS * K}; medians of {args.repeats} interleaved runs")
    print(
        f"{'thr':>3} {'T':>5} {'rewards':>8} {'mask':>6} {'bot ms':>8} {'floor ms':>9} "
        f"{'reads ms':>8} {'bot/floor':>9} {'bot/reads':>9}"
    )
    for n in threads:
        torch.set_num_threads(n)
        for length in args.lengths:
            for dtype, mask in CASES:
                t = case_row(bot, length, dtype, mask, args)
                print(
                    f"{n:>3} {length:>5} {dtype:>8} {mask:>6} {t['bot'] * 1e3:8.2f} "
                    f"{t['floor'] * 1e3:9.2f} {t['reads'] * 1e3:8.2f} "
                    f"{t['bot'] / t['floor']:9.2f} {t['bot'] / t['reads']:9.1f}"
                )
    if not args.no_loop:
        torch.set_num_threads(threads[0])
        loop_row(bot, args.loop_length, args.repeats)
    print("targets: bot/floor <= 5 (CPU), loop/bot >= 50; GPU: bot < 1 ms at T = 8192")


if __name__ == "__main__":
    main()
