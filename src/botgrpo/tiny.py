"""A tiny, offline, randomly initialised causal LM with a character-level tokenizer.

It exists so that the trainer, the CLI and the demo run end to end on a CPU without the model
hub: :func:`build_tiny_model` writes a small Llama-architecture model (random weights, seeded) and a
character-level :class:`~transformers.PreTrainedTokenizerFast` to a directory in the Hugging
Face format, and both load back with ``AutoModelForCausalLM`` / ``AutoTokenizer``.

- One token per character: every printable ASCII character, newline and tab are in the
  vocabulary, so ``len(tokenizer(text).input_ids) == len(text)`` for such text, and decoding
  the ids of a completion gives back exactly its characters (token i <-> character i).
- Special tokens: ``<pad>`` (id 0), ``<bos>``, ``<eos>``, ``<unk>``. Nothing is added when
  encoding (no BOS, no EOS); the model ends a completion by emitting ``<eos>``.
- A minimal chat template renders ``role: content`` lines, so conversational datasets work too.

Example::

    path = build_tiny_model("runs/tiny")
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
#: Every character the tokenizer knows; anything else encodes as ``<unk>``.
CHARACTERS = string.printable[:-2]  # digits, letters, punctuation, space, \t, \n, \r

_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


@dataclass(frozen=True)
class TinyModelSpec:
    """Shape of the tiny Llama model written by :func:`build_tiny_model`.

    Attributes:
        hidden: hidden size (model width).
        layers: number of decoder layers.
        heads: attention heads (``hidden`` must be divisible by it).
        kv_heads: key/value heads (grouped-query attention; divides ``heads``).
        intermediate: MLP inner size.
        max_positions: longest prompt + completion the model accepts.
        seed: seed of the random initialisation (same seed -> same weights).
    """

    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 128
    max_positions: int = 512
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("hidden", "layers", "heads", "kv_heads", "intermediate", "max_positions"):
            if getattr(self, name) < 1:
                raise ValueError(f"TinyModelSpec.{name} must be >= 1, got {getattr(self, name)}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be divisible by kv_heads ({self.kv_heads})"
            )


def build_char_tokenizer(characters: str = CHARACTERS) -> PreTrainedTokenizerFast:
    """A character-level fast tokenizer: one token per character, specials first.

    >>> tok = build_char_tokenizer()
    >>> ids = tok("1+2=3").input_ids
    >>> len(ids), tok.decode(ids)
    (5, '1+2=3')
    >>> tok.pad_token_id, tok.convert_ids_to_tokens(tok.eos_token_id)
    (0, '<eos>')
    """
    if len(set(characters)) != len(characters):
        raise ValueError("characters must not repeat")
    vocab = {token: i for i, token in enumerate((*SPECIAL_TOKENS, *characters))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # Split on every character (newlines included) and keep each one as its own piece.
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        padding_side="left",
        truncation_side="left",
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = _CHAT_TEMPLATE
    return tokenizer


def build_tiny_model(
    path: str | Path,
    *,
    spec: TinyModelSpec | None = None,
    characters: str = CHARACTERS,
) -> Path:
    """Write a tiny random Llama-architecture causal LM and its character tokenizer to ``path``.

    Args:
        path: output directory (created; existing files of the same names are overwritten).
        spec: model shape and seed; the default has about 0.1M parameters.
        characters: the tokenizer's characters (default: printable ASCII, see ``CHARACTERS``).

    Returns:
        ``path`` as a :class:`~pathlib.Path`, loadable with ``AutoModelForCausalLM`` and
        ``AutoTokenizer``. Building is deterministic: the same ``spec`` writes the same weights.
    """
    spec = spec or TinyModelSpec()
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_char_tokenizer(characters)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden,
        intermediate_size=spec.intermediate,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        dtype="float32",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def count_parameters(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def missing_characters(texts) -> list[str]:
    """The characters of ``texts`` that the tiny tokenizer (:data:`CHARACTERS`) cannot write,
    sorted: each would become ``<unk>`` and vanish from the decoded text."""
    known = set(CHARACTERS)
    return sorted({ch for text in texts for ch in text} - known)
