"""Speed of the vectorised BoT advantage against the memory-bound floor and a loop.

B = 512 rollouts (64 prompts x 8), T in {1024, 4096, 8192}, float32 rewards, right-padded masks
with random lengths. For each T it times, on the same tensors:
  - bot:   get_advantage_estimator("bot")(rewards_BT, mask_BT, group_B)
  - floor: (rewards_BT * mask_BT).sum(1), one read of the batch (no estimator can be faster)
and, at a small T (default 128, where a loop finishes in seconds), two loop implementations:
  - loop:  the token-by-token loop reference the tests check the core against
           (tests/core_reference.py), i.e. the estimator written straight from the formula
  - group-loop: a per-group, per-rollout Python loop of torch ops (a middle ground)
It prints bot/floor (target <= 5) and loop/bot (target >= 50). Run: make bench
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from botgrpo.core import get_advantage_estimator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.core_reference import bag_loop

PROMPTS, K = 64, 8


def make_batch(length: int, device: str, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    batch = PROMPTS * K
    lengths = torch.randint(length // 4, length + 1, (batch,), generator=gen)
    mask_BT = (torch.arange(length)[None, :] < lengths[:, None]).to(device)
    rewards_BT = torch.randn(batch, length, generator=gen).to(device)
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


def timeit(fn, repeats: int, device: str) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs after one warm-up, in seconds."""
    fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    parser.add_argument("--loop-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    bot = get_advantage_estimator("bot")
    print(f"device={args.device} threads={torch.get_num_threads()} B={PROMPTS * K}")
    print(f"{'T':>6} {'bot ms':>9} {'floor ms':>9} {'bot/floor':>10}")
    for length in args.lengths:
        r, m, g = make_batch(length, args.device)
        t_bot = timeit(lambda r=r, m=m, g=g: bot(r, m, g), args.repeats, args.device)
        t_floor = timeit(lambda r=r, m=m: (r * m).sum(1), args.repeats, args.device)
        print(f"{length:>6} {t_bot * 1e3:9.2f} {t_floor * 1e3:9.2f} {t_bot / t_floor:10.2f}")
    loop_row(bot, args.loop_length, args.repeats)
    print("targets: bot/floor <= 5, loop/bot >= 50 (GPU: bot < 1 ms at T = 8192)")


if __name__ == "__main__":
    main()
