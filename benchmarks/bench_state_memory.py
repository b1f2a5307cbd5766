"""Training-state memory with and without a learned critic, at real shapes and measured.

1. At the Qwen2.5 shapes the recipes name (0.5B, 1.5B, 7B): parameter, gradient and
   optimizer-state bytes of policy + reference (BoT, GRPO) vs policy + reference + critic (PPO
   with a value model the size of the policy), computed from the shapes
   (:mod:`botgrpo.trl.memory`; bf16 working copies and gradients, fp32 master weights and Adam
   moments; activations excluded), and the ratio.
2. The same accounting checked on a mid-size model built here (Qwen2 layout, fp32 on the CPU,
   AdamW after one step): the bytes of every parameter, gradient and optimizer-state tensor,
   and the growth of the process's resident memory, against the prediction.

    python benchmarks/bench_state_memory.py [--hidden 512 --layers 8 --vocab 32000]

A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import resource

import torch

from botgrpo.trl.memory import QWEN25, DecoderShape, training_state_bytes

GIB = 2**30


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize()


def real_shapes() -> None:
    print("| model | parameters | policy + reference | + critic (PPO) | ratio |")
    print("|---|---|---|---|---|")
    for name, shape in QWEN25.items():
        bot = training_state_bytes(shape, critic=False)
        ppo = training_state_bytes(shape, critic=True)
        print(
            f"| {name} | {shape.causal_lm_parameters() / 1e9:.2f} B | {bot.total / GIB:.1f} GiB | "
            f"{ppo.total / GIB:.1f} GiB | {bot.total / ppo.total:.2f} |"
        )


def _tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _config(hidden: int, layers: int, vocab: int):
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=hidden * 11 // 4,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=2,
        tie_word_embeddings=True,
        num_labels=1,
    )


def _one_setting(hidden: int, layers: int, vocab: int, critic: bool) -> tuple[int, int]:
    """In a fresh process: (bytes of every state tensor, growth of resident memory)."""
    from transformers import Qwen2ForCausalLM, Qwen2ForTokenClassification

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = _config(hidden, layers, vocab)
    before = _rss_bytes()
    models = [Qwen2ForCausalLM(config)]
    reference = Qwen2ForCausalLM(config).requires_grad_(False)
    if critic:
        models.append(Qwen2ForTokenClassification(config))
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-5) for m in models]
    ids = torch.randint(0, vocab, (1, 8))
    for model, opt in zip(models, optimizers, strict=True):
        model(input_ids=ids).logits.float().mean().backward()
        opt.step()
    gc.collect()
    tensors = _tensor_bytes(p for m in [*models, reference] for p in m.parameters())
    tensors += _tensor_bytes(p.grad for m in models for p in m.parameters() if p.grad is not None)
    tensors += _tensor_bytes(
        v for opt in optimizers for s in opt.state.values() for v in s.values() if v.dim()
    )
    return tensors, _rss_bytes() - before


def measured(hidden: int, layers: int, vocab: int) -> None:
    import multiprocessing

    shape = DecoderShape.from_config(_config(hidden, layers, vocab))
    rows = []
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        for critic in (False, True):
            tensors, grown = pool.apply(_one_setting, (hidden, layers, vocab, critic))
            predicted = training_state_bytes(shape, critic=critic, param_bytes=4, grad_bytes=4)
            rows.append((critic, tensors, grown, predicted.total))
    print(
        f"\nmeasured: Qwen2 layout, hidden {hidden}, {layers} layers, vocab {vocab}, "
        f"{shape.causal_lm_parameters() / 1e6:.1f} M parameters, fp32, AdamW after one step, "
        "each setting in a fresh process"
    )
    print(
        "| setting | tensors (params + grads + Adam) | RSS growth | predicted | RSS / predicted |"
    )
    print("|---|---|---|---|---|")
    for critic, tensors, grown, predicted in rows:
        label = "policy + reference + critic" if critic else "policy + reference"
        print(
            f"| {label} | {tensors / 2**20:.1f} MiB | {grown / 2**20:.1f} MiB | "
            f"{predicted / 2**20:.1f} MiB | {grown / predicted:.3f} |"
        )
    print(
        f"ratio without / with critic: tensors {rows[0][1] / rows[1][1]:.3f}, "
        f"RSS {rows[0][2] / rows[1][2]:.3f}, predicted {rows[0][3] / rows[1][3]:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    real_shapes()
    measured(args.hidden, args.layers, args.vocab)


if __name__ == "__main__":
    main()
