"""Training-state memory from model shapes (botgrpo.trl.memory) against real models."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen2ForTokenClassification,
)

from botgrpo.trl.memory import (
    QWEN25,
    DecoderShape,
    trained_bytes_per_parameter,
    training_state_bytes,
)

SMALL = {
    "vocab_size": 300,
    "hidden_size": 48,
    "intermediate_size": 80,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize(
    ("config_cls", "model_cls"), [(Qwen2Config, Qwen2ForCausalLM), (LlamaConfig, LlamaForCausalLM)]
)
def test_parameter_counts_equal_the_real_models(tied, config_cls, model_cls):
    config = config_cls(**SMALL, tie_word_embeddings=tied)
    assert DecoderShape.from_config(config).causal_lm_parameters() == _count(model_cls(config))


def test_the_value_model_is_the_backbone_and_a_scalar_head():
    config = Qwen2Config(**SMALL, num_labels=1)
    assert DecoderShape.from_config(config).value_model_parameters() == _count(
        Qwen2ForTokenClassification(config)
    )


def test_the_qwen25_shapes_have_their_published_sizes():
    sizes = {name: shape.causal_lm_parameters() for name, shape in QWEN25.items()}
    assert sizes == {
        "Qwen2.5-0.5B": 494_032_768,
        "Qwen2.5-1.5B": 1_543_714_304,
        "Qwen2.5-7B": 7_615_616_512,
    }


def test_state_bytes_equal_the_tensors_after_an_adamw_step():
    config = Qwen2Config(**SMALL, num_labels=1, tie_word_embeddings=True)
    torch.manual_seed(0)
    policy, reference = Qwen2ForCausalLM(config), Qwen2ForCausalLM(config).requires_grad_(False)
    critic = Qwen2ForTokenClassification(config)
    total = 0
    for model in (policy, critic):
        opt = torch.optim.AdamW(model.parameters())
        model(input_ids=torch.tensor([[1, 2, 3]])).logits.sum().backward()
        opt.step()
        states = [v for s in opt.state.values() for v in s.values() if v.dim()]
        tensors = [*model.parameters(), *(p.grad for p in model.parameters()), *states]
        total += sum(t.numel() * t.element_size() for t in tensors)
    total += sum(p.numel() * p.element_size() for p in reference.parameters())
    shape = DecoderShape.from_config(config)
    assert training_state_bytes(shape, critic=True, param_bytes=4, grad_bytes=4).total == total


def test_mixed_precision_bytes_per_trained_parameter():
    assert trained_bytes_per_parameter(2, 2) == 16  # bf16 copy + grad, fp32 master + 2 moments
    assert trained_bytes_per_parameter(4, 4) == 16  # fp32: no separate master copy
    bot = training_state_bytes(QWEN25["Qwen2.5-1.5B"], critic=False)
    ppo = training_state_bytes(QWEN25["Qwen2.5-1.5B"], critic=True)
    assert bot.critic == 0 and ppo.policy == bot.policy and ppo.reference == bot.reference
    assert bot.total / ppo.total == pytest.approx(18 / 34, abs=1e-4)  # tied head: 18P vs 34P


def test_doctest():
    import doctest

    import botgrpo.trl.critic
    import botgrpo.trl.memory

    assert doctest.testmod(botgrpo.trl.memory).failed == 0
    assert doctest.testmod(botgrpo.trl.critic).failed == 0
