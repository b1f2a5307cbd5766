"""Gradient quality of each advantage estimator on the same rollouts (the mechanism behind "faster").

At the harness's default warm start on the chain task, draw ``--batches`` independent batches of
8 prompts x 8 rollouts (temperature 1), score them once with the task's token reward, and form
the policy gradient of the seq-mean-token-mean loss -mean_k mean_t A_t log pi(y_t) under each
estimator: grpo (per-rollout outcome w_g G + format, group std), bot and bot_uniform (token
rewards r_t = w_g G + w_s S_t + format). Only the advantage differs between the columns.

Printed per estimator:
- consistency: mean cosine between the gradients of two independent batches. For g = mu + noise
  it estimates |mu|^2 / (|mu|^2 + E|noise|^2): how much of one step's direction is signal.
- toward demos: mean cosine between a batch gradient and the gradient that raises the
  log-likelihood of correct demonstrations of the same prompts (the supervised direction, a
  proxy for "the direction that makes the model right").
- groups with signal: share of prompt groups whose advantages are not all zero.
and the ratios bot / grpo of the first two.

    python benchmarks/bench_gradient_snr.py [--batches 12] [--model PATH]

A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import random

import numpy as np
import torch

from botgrpo.core import get_advantage_estimator
from botgrpo.harness.evaluate import held_out_prompts
from botgrpo.harness.warmstart import WarmStartConfig, warm_start
from botgrpo.tasks import load_task
from botgrpo.tasks.reward import make_task_reward

ESTIMATORS = ("grpo", "bot", "bot_uniform")
W_G, W_S = 3.0, 0.5


def rollouts(model, tok, task, rng: random.Random, prompts: int, k: int, max_new: int):
    """(examples, prompt ids, completion ids per rollout) for one batch, sampled at T = 1."""
    exs = [task.sample(rng) for _ in range(prompts)]
    tok.padding_side = "left"
    enc = tok([e.prompt for e in exs], return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(
            **enc,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            num_return_sequences=k,
            max_new_tokens=max_new,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    comp = []
    for row in out[:, enc.input_ids.shape[1] :].tolist():
        cut = row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
        comp.append(row[:cut])
    p_ids = [tok(e.prompt, add_special_tokens=False).input_ids for e in exs]
    return exs, p_ids, comp


def token_rewards(task, tok, exs, comp, k: int):
    """Token rewards [B, T] for bot, per-rollout outcome + format [B, T] for grpo, mask, groups."""
    reward = make_task_reward(task, tok)
    rows = [ex.to_row() for ex in exs for _ in range(k)]
    texts = tok.batch_decode(comp, skip_special_tokens=True)
    trs = reward(
        prompts=[r["prompt"] for r in rows],
        completions=texts,
        completion_ids=comp,
        **{c: [r[c] for r in rows] for c in rows[0] if c != "prompt"},
    )
    width = max(len(c) for c in comp)
    tok_BT, out_BT = torch.zeros(len(comp), width), torch.zeros(len(comp), width)
    mask_BT = torch.zeros(len(comp), width, dtype=torch.bool)
    for b, (tr, c) in enumerate(zip(trs, comp, strict=True)):
        tok_BT[b, : len(c)] = torch.as_tensor(tr.token_rewards(W_G, W_S), dtype=torch.float32)
        out_BT[b, : len(c)] = float(tr.outcome_reward(W_G))
        mask_BT[b, : len(c)] = True
    group_B = torch.arange(len(exs)).repeat_interleave(k)
    return tok_BT, out_BT, mask_BT, group_B


def flat_grad(model, loss) -> torch.Tensor:
    grads = torch.autograd.grad(
        loss, list(model.parameters()), retain_graph=True, allow_unused=True
    )
    return torch.cat(
        [
            g.reshape(-1) if g is not None else torch.zeros(p.numel())
            for g, p in zip(grads, model.parameters(), strict=True)
        ]
    )


def logprobs(model, p_ids, comp, k: int):
    """log pi(y_t) [B, T] of each completion token given its prompt (right-padded)."""
    rows = [p_ids[b // k] + c for b, c in enumerate(comp)]
    width = max(map(len, rows))
    ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    attn = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    logp_all = torch.log_softmax(model(input_ids=ids, attention_mask=attn).logits[:, :-1], -1)
    tok_lp = logp_all.gather(-1, ids[:, 1:, None])[..., 0]
    out = torch.zeros(len(comp), max(map(len, comp)))
    for b, c in enumerate(comp):
        start = len(p_ids[b // k]) - 1
        out[b, : len(c)] = tok_lp[b, start : start + len(c)]
    return out


def batch_gradients(model, tok, task, rng, args):
    exs, p_ids, comp = rollouts(model, tok, task, rng, 8, 8, args.max_new_tokens)
    tok_BT, out_BT, mask_BT, group_B = token_rewards(task, tok, exs, comp, 8)
    lp_BT = logprobs(model, p_ids, comp, 8)
    grads, signal = {}, {}
    for name in ESTIMATORS:
        rewards = out_BT if name == "grpo" else tok_BT
        adv_BT = get_advantage_estimator(name)(rewards.clone(), mask_BT, group_B)
        per_seq = (adv_BT * lp_BT * mask_BT).sum(1) / mask_BT.sum(1).clamp(min=1)
        grads[name] = flat_grad(model, -per_seq.mean())
        nonzero = (adv_BT.abs() > 0).any(1).float()
        signal[name] = float(torch.stack([nonzero[group_B == g].max() for g in range(8)]).mean())
    demo = [
        [*tok(task.demonstration(e), add_special_tokens=False).input_ids, tok.eos_token_id]
        for e in exs
    ]
    demo_lp = logprobs(model, p_ids, [d for d in demo for _ in range(8)], 8)
    demo_mask = torch.tensor(
        [[t < len(d) for t in range(demo_lp.shape[1])] for d in demo for _ in range(8)]
    )
    grads["demos"] = flat_grad(model, -(demo_lp * demo_mask).sum() / demo_mask.sum())
    return grads, signal


def cos(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a, b, dim=0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--model", default="", help="checkpoint (default: the harness warm start)")
    ap.add_argument("--cache", default="runs/.cache", help="warm-start cache folder")
    ap.add_argument("--max-new-tokens", type=int, default=160)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    task = load_task("chain")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = args.model or warm_start(
        task,
        WarmStartConfig(steps=425, schedule_steps=700),
        args.cache,
        exclude=held_out_prompts(task, 500),
    )
    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    rng = random.Random("gradient-snr")
    runs = [batch_gradients(model, tok, task, rng, args) for _ in range(args.batches)]
    print(f"model {path}; {args.batches} batches of 8 prompts x 8 rollouts; w_g {W_G}, w_s {W_S}")
    print(
        "| estimator | consistency (cos between batches) | toward demos (cos) | groups with signal |"
    )
    print("|---|---|---|---|")
    table = {}
    for name in ESTIMATORS:
        gs = [g[name] for g, _ in runs]
        pair = np.mean([cos(a, b) for a, b in itertools.combinations(gs, 2)])
        demo = np.mean([cos(g[name], g["demos"]) for g, _ in runs])
        sig = np.mean([s[name] for _, s in runs])
        table[name] = (pair, demo)
        print(f"| {name} | {pair:.4f} | {demo:.4f} | {sig:.0%} |")
    for name in ("bot", "bot_uniform"):
        cells = [
            f"{what} {ratio(table[name][i], table['grpo'][i])}"
            for i, what in enumerate(("consistency", "toward demos"))
        ]
        print(f"{name} / grpo: " + ", ".join(cells))


def ratio(x: float, base: float) -> str:
    """x / base, or why not: a ratio to a baseline at or below zero means nothing."""
    return f"{x / base:.2f}x" if base > 0 else f"n/a (grpo {base:.4f} <= 0 vs {x:.4f})"


if __name__ == "__main__":
    main()
