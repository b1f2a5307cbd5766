"""One RL step of BoTGRPOTrainer against a minimal hand-written loop doing the same work.

Both sides run the bot preset's algorithm on the same model, prompts and batch (8 prompts x 8
rollouts of the chain task, sampled at temperature 1 up to the same length): generate, score
with the task's token reward, the bot advantage (botgrpo.core), reference log-probs (beta
0.04), one clipped policy-gradient step with the k3 KL term, AdamW. The loop is what a
researcher would write by hand for a tiny model on a CPU (about 60 lines below); the trainer is
the harness's configuration (``harness.runner._trainer_config``), so the ratio is the cost of
running inside TRL. Each side runs in a fresh single-threaded process; rounds alternate the order.

    python benchmarks/bench_rl_step.py [--model DIR] [--steps 8] [--rounds 2]

``--model``: a checkpoint to start from, e.g. the demo's warm start (runs/.cache/warm-*), so
completion lengths are realistic; default: a randomly initialised tiny model (completions run
to the length limit). Prints the median step time of each side (the first 2 steps of each run
are warm-up) and the trainer / loop ratio (target <= 1.5). A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

WARMUP = 2
PROMPTS, K, MAX_LEN, BETA, W_G, W_S = 8, 8, 192, 0.04, 3.0, 0.5


def _examples(task, n: int):
    from botgrpo.tasks.data import sample_examples

    return sample_examples(task, n, "bench-rl-step")


def _completion_logps(model, seq_BL, attn_BL, n_prompt: int):
    """log p of every completion token ([B, T]) under ``model``."""
    logits = model(input_ids=seq_BL, attention_mask=attn_BL).logits[:, n_prompt - 1 : -1]
    return logits.log_softmax(-1).gather(-1, seq_BL[:, n_prompt:, None]).squeeze(-1)


def loop_worker(model_dir: str, steps: int) -> list[float]:
    """The hand-written sample-score-update loop; returns its step times."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo.core import get_advantage_estimator, get_policy_loss
    from botgrpo.core.kl import kl_penalty
    from botgrpo.tasks import load_task
    from botgrpo.tasks.reward import make_task_reward

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    ref = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    task = load_task("chain")
    reward = make_task_reward(task, tok)
    estimator, policy_loss = get_advantage_estimator("bot"), get_policy_loss("ppo_clip")
    examples = _examples(task, steps * PROMPTS)
    times = []
    for step in range(steps):
        start = time.perf_counter()
        batch = [ex for ex in examples[step * PROMPTS : (step + 1) * PROMPTS] for _ in range(K)]
        enc = tok([ex.prompt for ex in batch], return_tensors="pt", padding=True)
        model.eval()
        with torch.no_grad():
            seq = model.generate(
                **enc, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                max_new_tokens=MAX_LEN, pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
            )  # fmt: skip
        n_prompt = enc.input_ids.shape[1]
        comp_BT = seq[:, n_prompt:]
        is_eos = comp_BT == tok.eos_token_id
        first = torch.where(is_eos.any(1), is_eos.int().argmax(1), comp_BT.shape[1] - 1)
        mask_BT = (torch.arange(comp_BT.shape[1])[None] <= first[:, None]).float()
        ids = [row[: int(n) + 1].tolist() for row, n in zip(comp_BT, first, strict=True)]
        texts = tok.batch_decode(ids, skip_special_tokens=True)
        rows = [ex.to_row() for ex in batch]
        scored = reward(
            prompts=[r["prompt"] for r in rows], completions=texts, completion_ids=ids,
            answer=[r["answer"] for r in rows], meta=[r["meta"] for r in rows],
        )  # fmt: skip
        rewards_BT = torch.zeros_like(mask_BT)
        for i, tr in enumerate(scored):
            rewards_BT[i, : len(ids[i])] = torch.as_tensor(tr.token_rewards(W_G, W_S))
        group_B = torch.arange(len(batch)) // K
        adv_BT = estimator(rewards_BT, mask_BT, group_B)
        attn = torch.cat([enc.attention_mask, mask_BT.long()], 1)
        with torch.no_grad():
            ref_BT = _completion_logps(ref, seq, attn, n_prompt)
        model.train()
        logp_BT = _completion_logps(model, seq, attn, n_prompt)
        loss, _ = policy_loss(logp_BT, logp_BT.detach(), adv_BT, mask_BT)
        kl = (kl_penalty(logp_BT, ref_BT) * mask_BT).sum(1) / mask_BT.sum(1)
        (loss + BETA * kl.mean()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    return times


def trainer_worker(model_dir: str, steps: int, out_dir: str) -> list[float]:
    """BoTGRPOTrainer as the harness configures it; returns its step times."""
    from transformers import AutoTokenizer, TrainerCallback

    from botgrpo.harness.config import CompareConfig
    from botgrpo.harness.runner import RunSpec, _quiet_worker, _trainer_config
    from botgrpo.tasks import load_task
    from botgrpo.tasks.data import task_dataset
    from botgrpo.tasks.reward import make_task_reward
    from botgrpo.trl import BoTGRPOTrainer

    _quiet_worker()
    cfg = CompareConfig(
        steps=steps, warmup_steps=0, prompts_per_step=PROMPTS, num_generations=K,
        max_completion_length=MAX_LEN, w_g=W_G, w_s=W_S, learning_rate=1e-5,
    )  # fmt: skip
    spec = RunSpec("bot", 0, cfg.learning_rate, model_dir, out_dir, cfg)
    task = load_task("chain")
    tok = AutoTokenizer.from_pretrained(model_dir)
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.start)

    trainer = BoTGRPOTrainer(
        model=model_dir,
        reward_funcs=[make_task_reward(task, tok)],
        args=_trainer_config(spec, Path(out_dir)),
        train_dataset=task_dataset(_examples(task, steps * PROMPTS)),
        processing_class=tok,
        callbacks=[Timer()],
    )
    trainer.train()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="", help="checkpoint folder (default: random tiny)")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", choices=("loop", "trainer"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        warnings.simplefilter("ignore")
        import torch

        torch.set_num_threads(1)
        if args.worker == "loop":
            times = loop_worker(args.model, args.steps)
        else:
            times = trainer_worker(args.model, args.steps, args.out + ".run")
        Path(args.out).write_text(json.dumps(times))
        return
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if not model:
            from botgrpo.harness.warmstart import WarmStartConfig
            from botgrpo.tiny import build_tiny_model

            model = str(build_tiny_model(Path(tmp) / "tiny", spec=WarmStartConfig().model))
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        results: dict[str, list[float]] = {"loop": [], "trainer": []}
        for r in range(args.rounds):
            for kind in ("loop", "trainer") if r % 2 == 0 else ("trainer", "loop"):
                out = str(Path(tmp) / f"{kind}-{r}.json")
                cmd = [sys.executable, __file__, "--worker", kind, "--model", model]
                cmd += ["--steps", str(args.steps), "--out", out]
                subprocess.run(cmd, check=True, env=env, capture_output=True)
                results[kind] += json.loads(Path(out).read_text())[WARMUP:]
    loop, trainer = statistics.median(results["loop"]), statistics.median(results["trainer"])
    print(f"model: {args.model or 'random tiny (completions run to the limit)'}")
    print(f"batch: {PROMPTS} prompts x {K} rollouts, up to {MAX_LEN} tokens, 1 thread")
    print(f"median step: hand-written loop {loop:.3f} s, BoTGRPOTrainer {trainer:.3f} s")
    print(f"trainer / loop = {trainer / loop:.2f}x (target <= 1.5)")


if __name__ == "__main__":
    main()
