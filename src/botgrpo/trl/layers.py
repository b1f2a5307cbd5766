"""Training only the top decoder layers: what makes a real model's RL step fit a CPU.

Freezing the bottom layers stops backpropagation at the lowest trained layer: the forward pass
still runs through every layer, the backward pass only through the top ``n``. On
SmolLM2-135M (30 layers) with the top 8 trained, a forward and backward of 16 sequences of 100
tokens takes about 12 s on one CPU thread against about 26 s for every layer.
"""

from __future__ import annotations

import re
from typing import Any


def layer_count(config: Any) -> int:
    """The decoder's number of layers (``num_hidden_layers`` or ``n_layer``)."""
    for name in ("num_hidden_layers", "n_layer", "num_layers"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ValueError(f"{type(config).__name__} names no layer count (num_hidden_layers)")


def top_layer_indices(config: Any, n: int) -> list[int]:
    """Indices of the top ``n`` decoder layers; ValueError when the model has fewer.

    >>> from types import SimpleNamespace
    >>> top_layer_indices(SimpleNamespace(num_hidden_layers=30), 4)
    [26, 27, 28, 29]
    """
    total = layer_count(config)
    if not 1 <= n <= total:
        raise ValueError(f"top_layers must be from 1 to the model's {total} layers, got {n}")
    return list(range(total - n, total))


_LAYER = re.compile(r"(?:^|\.)(?:layers?|h|blocks?)\.(\d+)\.")
_FINAL = ("norm.", "final_layernorm.", "ln_f.")


def freeze_below_top_layers(model: Any, n: int) -> int:
    """Freeze every parameter but those of the top ``n`` decoder layers and the final norm
    (embeddings and the output head frozen too); returns the number left trainable. A model
    whose layers it cannot find by index (``layers.N``, ``h.N``, ``blocks.N``) is an error.

    With a peft model (LoRA), only adapter parameters of those layers stay trainable."""
    keep = set(top_layer_indices(model.config, n))
    peft = any("lora_" in name for name, _ in model.named_parameters())
    trainable = 0
    for name, param in model.named_parameters():
        found = _LAYER.search(name)
        in_top = found is not None and int(found[1]) in keep
        final = found is None and any(f".{f}" in f".{name}" for f in _FINAL) and not peft
        param.requires_grad = (in_top and ("lora_" in name or not peft)) or final
        trainable += param.numel() if param.requires_grad else 0
    if not any(_LAYER.search(name) and p.requires_grad for name, p in model.named_parameters()):
        raise ValueError(
            "top_layers found no parameter of a numbered decoder layer (layers.N, h.N, "
            "blocks.N) in this model; train it without top_layers"
        )
    return trainable


def linear_module_names(model_path: str) -> list[str]:
    """The names (last part) of the linear layers inside the decoder layers of the model at
    ``model_path``, read from a weightless copy of its architecture: what peft's "all-linear"
    means, as the explicit list it needs with ``layers_to_transform``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_path))
    names = {
        name.rsplit(".", 1)[-1]
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and _LAYER.search(name + ".")
    }
    if not names:
        raise ValueError(f"the model at {model_path} has no linear layers inside numbered layers")
    return sorted(names)


def lora_on_top_layers(peft_config: Any, model_path: str, n: int) -> Any:
    """``peft_config`` (a LoraConfig) restricted to the top ``n`` layers: ``layers_to_transform``
    set, and "all-linear" spelled out as the layers' linear modules (peft needs a list then)."""
    from transformers import AutoConfig

    peft_config.layers_to_transform = top_layer_indices(AutoConfig.from_pretrained(model_path), n)
    targets = peft_config.target_modules
    if targets is None or targets == "all-linear" or targets == {"all-linear"}:
        peft_config.target_modules = linear_module_names(model_path)
    return peft_config
