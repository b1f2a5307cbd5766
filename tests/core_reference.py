"""Straightforward loop implementations of every estimator, written from the formulas.

They are slow on purpose (Python loops over groups, rollouts and tokens) and share no code with
botgrpo.core, so agreement between the two is evidence that the vectorised code is right.
"""

from __future__ import annotations

import math

import torch

RTOL = 1e-6  # the same zero-signal rule as botgrpo.core.groups.ZERO_STD_RTOL


def _rows(rewards, mask):
    """List of per-rollout lists of kept rewards (floats)."""
    out = []
    for b in range(rewards.shape[0]):
        out.append([float(rewards[b, t]) for t in range(rewards.shape[1]) if mask[b, t]])
    return out


def _groups(group):
    ids = {}
    for b, g in enumerate(group.tolist()):
        ids.setdefault(g, []).append(b)
    return ids


def _no_signal(values, weights, sigma, mu, n_rollouts):
    total = sum(weights)
    rms = math.sqrt(sum(w * v * v for v, w in zip(values, weights, strict=True)) / total)
    return n_rollouts < 2 or sigma <= RTOL * rms


def bag_loop(rewards, mask, group, eps=1e-6, uniform=False):
    rows = _rows(rewards, mask)
    adv = torch.zeros(rewards.shape, dtype=torch.float64)
    for members in _groups(group).values():
        members = [b for b in members if rows[b]]
        values, weights = [], []
        for b in members:
            for r in rows[b]:
                values.append(r)
                weights.append(1.0 if uniform else 1.0 / len(rows[b]))
        if not members:
            continue
        total = sum(weights)
        mu = sum(v * w for v, w in zip(values, weights, strict=True)) / total
        var = sum(w * (v - mu) ** 2 for v, w in zip(values, weights, strict=True)) / total
        sigma = math.sqrt(var)
        if _no_signal(values, weights, sigma, mu, len(members)):
            continue
        for b in members:
            for t in range(rewards.shape[1]):
                if mask[b, t]:
                    adv[b, t] = (float(rewards[b, t]) - mu) / (sigma + eps)
    return adv


def outcome_loop(rewards, mask, group, kind, eps=1e-6, scale="group"):
    rows = _rows(rewards, mask)
    outcome = {b: sum(r) / len(r) for b, r in enumerate(rows) if r}
    all_r = list(outcome.values())
    batch_mu = sum(all_r) / len(all_r) if all_r else 0.0
    batch_std = math.sqrt(sum((r - batch_mu) ** 2 for r in all_r) / max(len(all_r), 1))
    adv = torch.zeros(rewards.shape, dtype=torch.float64)
    for members in _groups(group).values():
        members = [b for b in members if rows[b]]
        if not members:
            continue
        vals = [outcome[b] for b in members]
        k = len(vals)
        mu = sum(vals) / k
        sigma = math.sqrt(sum((v - mu) ** 2 for v in vals) / k)
        if _no_signal(vals, [1.0] * k, sigma, mu, k):
            continue
        for b in members:
            if kind == "grpo":
                denom = {"group": sigma + eps, "batch": batch_std + eps, "none": 1.0}[scale]
                a = (outcome[b] - mu) / denom
            elif kind == "dr_grpo":
                a = outcome[b] - mu
            else:  # rloo
                a = outcome[b] - (sum(vals) - outcome[b]) / (k - 1)
            for t in range(rewards.shape[1]):
                if mask[b, t]:
                    adv[b, t] = a
    return adv


def _steps_of(rewards, mask, steps, b):
    """Ordered list of (end position, mean reward) of rollout b's steps."""
    found = {}
    for t in range(rewards.shape[1]):
        s = int(steps[b, t])
        if mask[b, t] and s >= 0:
            found.setdefault(s, []).append(t)
    out = [(max(ts), sum(float(rewards[b, t]) for t in ts) / len(ts)) for ts in found.values()]
    return sorted(out)


def grpo_process_loop(rewards, mask, group, steps, eps=1e-6):
    adv = torch.zeros(rewards.shape, dtype=torch.float64)
    for members in _groups(group).values():
        per = {b: _steps_of(rewards, mask, steps, b) for b in members}
        vals = [r for b in members for _, r in per[b]]
        n_rollouts = sum(1 for b in members if per[b])
        if not vals:
            continue
        mu = sum(vals) / len(vals)
        sigma = math.sqrt(sum((v - mu) ** 2 for v in vals) / len(vals))
        if _no_signal(vals, [1.0] * len(vals), sigma, mu, n_rollouts):
            continue
        for b in members:
            for t in range(rewards.shape[1]):
                if mask[b, t]:
                    adv[b, t] = sum((r - mu) / (sigma + eps) for e, r in per[b] if e >= t)
    return adv


def _pure_return(step_list, t, form, temperature):
    later = [r for e, r in step_list if e >= t]
    if form == "strict":
        return min(later) if later else 0.0
    z = [math.exp(-r / temperature) for _, r in step_list]
    total = sum(z)
    return sum(zi / total * r for zi, (e, r) in zip(z, step_list, strict=True) if e >= t)


def pure_loop(rewards, mask, group, steps, outcome=None, form="soft", temperature=0.1):
    batch = rewards.shape[0]
    outcome = [0.0] * batch if outcome is None else [float(o) for o in outcome]
    adv = torch.zeros(rewards.shape, dtype=torch.float64)
    for members in _groups(group).values():
        members = [b for b in members if bool(mask[b].any())]
        if len(members) < 2:
            continue
        per = {b: _steps_of(rewards, mask, steps, b) for b in members}
        first = {}
        for b in members:
            t0 = next(t for t in range(rewards.shape[1]) if mask[b, t])
            first[b] = _pure_return(per[b], t0, form, temperature) + outcome[b]
        for b in members:
            base = sum(first[j] for j in members if j != b) / (len(members) - 1)
            for t in range(rewards.shape[1]):
                if mask[b, t]:
                    g = _pure_return(per[b], t, form, temperature) + outcome[b]
                    adv[b, t] = g - base
    return adv


def _return_loop(rewards, mask, b, gamma=1.0):
    """G_t of rollout b: r_t + gamma G_{t+1} over kept tokens, carried through masked ones."""
    out, running = [0.0] * rewards.shape[1], 0.0
    for t in reversed(range(rewards.shape[1])):
        if mask[b, t]:
            running = float(rewards[b, t]) + gamma * running
            out[t] = running
    return out


def otb_loop(
    rewards,
    mask,
    group,
    logp_BT,
    sum_pi_sq_BT,
    is_weights_BT=None,
    handle_zero_tail=True,
    epsilon=1e-8,
):
    """arXiv 2602.07078: B_t = sum_g G_t W_t / (sum_g W_t + epsilon), A_t = G_t - B_t, with
    W_t = sum_{j <= t} (1 - 2 pi_j + sum pi^2) [x rho_j^2] over kept tokens."""
    B, T = rewards.shape
    adv = torch.zeros(rewards.shape, dtype=torch.float64)
    returns = [_return_loop(rewards, mask, b) for b in range(B)]
    paths = []
    for b in range(B):
        total, path = 0.0, []
        for t in range(T):
            if mask[b, t]:
                w = 1 - 2 * math.exp(float(logp_BT[b, t])) + float(sum_pi_sq_BT[b, t])
                if is_weights_BT is not None:
                    w *= float(is_weights_BT[b, t]) ** 2
                total += w
            path.append(total)
        paths.append(path)
    for members in _groups(group).values():
        lengths = {b: int(mask[b].sum()) for b in members}
        tail = None
        if handle_zero_tail and len(members) > 1:
            ordered = sorted(lengths.values())
            longest = [b for b in members if lengths[b] == ordered[-1]]
            if len(longest) == 1 and ordered[-1] > ordered[-2]:
                tail = (longest[0], ordered[-2])
        for t in range(T):
            num = sum(returns[b][t] * paths[b][t] for b in members if mask[b, t])
            den = sum(paths[b][t] for b in members if mask[b, t])
            for b in members:
                if not mask[b, t]:
                    continue
                base = num / (den + epsilon) if len(members) > 1 else 0.0
                if tail is not None and b == tail[0] and t >= tail[1]:
                    base = 0.0
                adv[b, t] = returns[b][t] - base
    return adv


def reinforce_pp_loop(rewards, mask, group, gamma=1.0, epsilon=1e-8):
    """arXiv 2501.03262: returns whitened over every kept token of the batch (unbiased var)."""
    B, T = rewards.shape
    returns = [_return_loop(rewards, mask, b, gamma) for b in range(B)]
    kept = [returns[b][t] for b in range(B) for t in range(T) if mask[b, t]]
    adv = torch.zeros(rewards.shape, dtype=torch.float64)
    if len(kept) < 2:
        return adv
    mean = sum(kept) / len(kept)
    var = sum((g - mean) ** 2 for g in kept) / (len(kept) - 1)
    for b in range(B):
        for t in range(T):
            if mask[b, t]:
                adv[b, t] = (returns[b][t] - mean) / math.sqrt(var + epsilon)
    return adv


def gae_loop(rewards, mask, group, values_BT, gamma=1.0, lam=0.95, whiten=True, epsilon=1e-8):
    """arXiv 1506.02438: delta_t = r_t + gamma V_next - V_t over kept tokens (masked ones
    skipped), A_t = delta_t + gamma lam A_next; then whitened over the batch's kept tokens."""
    B, T = rewards.shape
    adv = torch.zeros(rewards.shape, dtype=torch.float64)
    for b in range(B):
        kept = [t for t in range(T) if mask[b, t]]
        running, next_value = 0.0, 0.0
        for t in reversed(kept):
            v = float(values_BT[b, t])
            running = float(rewards[b, t]) + gamma * next_value - v + gamma * lam * running
            next_value = v
            adv[b, t] = running
    if not whiten:
        return adv
    kept = [float(adv[b, t]) for b in range(B) for t in range(T) if mask[b, t]]
    if len(kept) < 2:
        return torch.zeros_like(adv)
    mean = sum(kept) / len(kept)
    var = sum((a - mean) ** 2 for a in kept) / (len(kept) - 1)
    for b in range(B):
        for t in range(T):
            if mask[b, t]:
                adv[b, t] = (adv[b, t] - mean) / math.sqrt(var + epsilon)
    return adv


def loop_reference(name, rewards, mask, group, **options):
    """Dispatch to the loop reference of the estimator called ``name``."""
    eps = options.pop("eps", 1e-6)
    if name in ("bot", "bot_uniform"):
        return bag_loop(rewards, mask, group, eps, uniform=name == "bot_uniform")
    if name in ("grpo", "dr_grpo", "rloo"):
        return outcome_loop(rewards, mask, group, name, eps, options.get("scale", "group"))
    if name == "grpo_process":
        return grpo_process_loop(rewards, mask, group, options["steps_BT"], eps)
    if name == "pure":
        return pure_loop(
            rewards,
            mask,
            group,
            options["steps_BT"],
            options.get("outcome_B"),
            options.get("form", "soft"),
            options.get("temperature", 0.1),
        )
    if name == "otb":
        return otb_loop(rewards, mask, group, **options)
    if name == "reinforce_pp":
        return reinforce_pp_loop(rewards, mask, group, **options)
    if name == "gae":
        return gae_loop(rewards, mask, group, **options)
    raise KeyError(name)
