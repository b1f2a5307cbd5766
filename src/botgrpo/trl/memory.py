"""Training-state memory of critic-free and critic-based RL, computed from model shapes.

What a value network costs in memory, before activations: every trained model holds its
parameters, their gradients and the optimizer's state; a frozen reference model holds its
parameters only. BoT (like GRPO) trains the policy against a reference; PPO with a learned
critic trains a second model as large as the policy (a value head on a copy of the backbone).

Per trained parameter (mixed precision, AdamW, as DeepSpeed ZeRO-0 and FSDP keep it unsharded):
param_bytes (the working copy) + grad_bytes + 4 (fp32 master copy, when the working dtype is
narrower than fp32) + 8 (Adam's two fp32 moments); per frozen parameter: param_bytes.

>>> from botgrpo.trl.memory import QWEN25, training_state_bytes
>>> bot = training_state_bytes(QWEN25["Qwen2.5-7B"], critic=False)
>>> ppo = training_state_bytes(QWEN25["Qwen2.5-7B"], critic=True)
>>> round(bot.total / ppo.total, 2)  # the untied LM head is the policy's alone
0.55
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DecoderShape:
    """The shape of a decoder-only transformer (Llama / Qwen2 layout: grouped-query attention,
    gated MLP, RMSNorm).

    Attributes:
        vocab: vocabulary size.
        hidden: hidden size.
        intermediate: MLP inner size.
        layers: decoder layers.
        heads: attention heads.
        kv_heads: key/value heads.
        tied: input embedding and LM head share weights.
        qkv_bias: q, k and v projections carry a bias (Qwen2).
    """

    vocab: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    tied: bool
    qkv_bias: bool = True

    @classmethod
    def from_config(cls, config) -> DecoderShape:
        """From a transformers ``LlamaConfig`` / ``Qwen2Config`` (or any with the same fields)."""
        heads = config.num_attention_heads
        return cls(
            vocab=config.vocab_size,
            hidden=config.hidden_size,
            intermediate=config.intermediate_size,
            layers=config.num_hidden_layers,
            heads=heads,
            kv_heads=getattr(config, "num_key_value_heads", None) or heads,
            tied=bool(getattr(config, "tie_word_embeddings", False)),
            qkv_bias=config.model_type == "qwen2" or bool(getattr(config, "attention_bias", False)),
        )

    def backbone_parameters(self) -> int:
        """Embedding, decoder layers and final norm (no LM head)."""
        h, kv = self.hidden, self.hidden // self.heads * self.kv_heads
        attention = h * h + 2 * h * kv + h * h + ((h + 2 * kv) if self.qkv_bias else 0)
        mlp = 3 * h * self.intermediate
        per_layer = attention + mlp + 2 * h  # two RMSNorm weights
        return self.vocab * h + self.layers * per_layer + h

    def causal_lm_parameters(self) -> int:
        """The policy: backbone plus LM head (shared with the embedding when tied)."""
        return self.backbone_parameters() + (0 if self.tied else self.vocab * self.hidden)

    def value_model_parameters(self) -> int:
        """A critic: the backbone plus a scalar value head (hidden -> 1, with bias)."""
        return self.backbone_parameters() + self.hidden + 1


#: Shapes of the Qwen2.5 models the recipes name (from their config.json files).
QWEN25 = {
    "Qwen2.5-0.5B": DecoderShape(151936, 896, 4864, 24, 14, 2, tied=True),
    "Qwen2.5-1.5B": DecoderShape(151936, 1536, 8960, 28, 12, 2, tied=True),
    "Qwen2.5-7B": DecoderShape(152064, 3584, 18944, 28, 28, 4, tied=False),
}


@dataclass(frozen=True)
class StateBytes:
    """Training-state bytes by holder (activations and buffers excluded).

    Attributes:
        policy: parameters, gradients and optimizer state of the policy.
        reference: parameters of the frozen reference model.
        critic: parameters, gradients and optimizer state of the value model (0 without one).
    """

    policy: int
    reference: int
    critic: int

    @property
    def total(self) -> int:
        return self.policy + self.reference + self.critic


def trained_bytes_per_parameter(param_bytes: int = 2, grad_bytes: int = 2) -> int:
    """Working copy + gradient + fp32 master (when narrower than fp32) + Adam's two moments."""
    master = 4 if param_bytes < 4 else 0
    return param_bytes + grad_bytes + master + 8


def training_state_bytes(
    shape: DecoderShape,
    *,
    critic: bool,
    reference: bool = True,
    param_bytes: int = 2,
    grad_bytes: int = 2,
) -> StateBytes:
    """Bytes of the training state of policy (+ reference) (+ critic) at ``shape``; bf16
    working copies and gradients by default (``param_bytes=4, grad_bytes=4`` for fp32)."""
    per_trained = trained_bytes_per_parameter(param_bytes, grad_bytes)
    policy = shape.causal_lm_parameters()
    return StateBytes(
        policy=policy * per_trained,
        reference=policy * param_bytes if reference else 0,
        critic=shape.value_model_parameters() * per_trained if critic else 0,
    )
