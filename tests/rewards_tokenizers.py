"""Small offline tokenizers with known tokenizations, for the rewards tests.

- :func:`byte_bpe` is a byte-level BPE (the GPT-2 / Llama 3 / Qwen family) with a hand-written
  vocabulary and merge list, so every tokenization in the tests can be checked by hand.
- :func:`char_tokenizer` is a character-level tokenizer over any alphabet (unicode included),
  one token per character, like ``botgrpo.tiny.build_char_tokenizer`` (ASCII only).
- :class:`PlainCharTokenizer` is not a Hugging Face tokenizer at all: only ``decode``,
  ``all_special_ids`` and ``__len__`` (exercises the prefix-decoding fallback).
"""

from __future__ import annotations

import functools

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast


def bytes_to_unicode() -> dict[int, str]:
    """Byte-level BPE's table byte -> printable character (bytes 0-255)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    table, shifted = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


BYTE = bytes_to_unicode()
SPACE = BYTE[ord(" ")]  # "Ġ"
NEWLINE = BYTE[ord("\n")]  # "Ċ"


def symbols(text: str) -> str:
    """``text``'s UTF-8 bytes written in byte-level symbols (how the vocabulary spells them)."""
    return "".join(BYTE[b] for b in text.encode())


# Merges, in priority order. Chosen so that: "é" is one token, " 😀" is split into a token
# holding the space plus the emoji's first byte and three single-byte tokens, "中" into a
# two-byte token and a one-byte token, "\n    " is one token straddling two lines, and a few
# words and tags are whole tokens.
MERGES: list[tuple[str, str]] = [
    (symbols("C"), symbols("a")),  # "Ca"
    (BYTE[0xC3], BYTE[0xA9]),  # "é"
    (symbols("f"), symbols("é")),  # "fé"
    (SPACE, BYTE[0xF0]),  # " " + first byte of 😀
    (BYTE[0xE4], BYTE[0xB8]),  # first two bytes of 中
    (NEWLINE, SPACE),  # "\n "
    (NEWLINE + SPACE, SPACE),  # "\n  "
    (SPACE, SPACE),  # "  "
    (NEWLINE + SPACE + SPACE, SPACE + SPACE),  # "\n    "
    (symbols("r"), symbols("e")),  # "re"
    (symbols("re"), symbols("t")),  # "ret"
    (symbols("ret"), symbols("u")),  # "retu"
    (symbols("retu"), symbols("r")),  # "retur"
    (symbols("retur"), symbols("n")),  # "return"
    (SPACE, symbols("return")),  # " return"
    (symbols("d"), symbols("e")),  # "de"
    (symbols("de"), symbols("f")),  # "def"
    (SPACE, symbols("x")),  # " x"
    (symbols("<"), symbols("s")),  # "<s"
    (symbols("<s"), symbols("t")),  # "<st"
    (symbols("<st"), symbols("e")),  # "<ste"
    (symbols("<ste"), symbols("p")),  # "<step"
    (symbols("1"), symbols(">")),  # "1>"
    (symbols("2"), symbols(">")),  # "2>"
    (symbols("<"), symbols("/")),  # "</"
    (symbols("</"), symbols("s")),  # "</s"
    (symbols("</s"), symbols("t")),  # "</st"
    (symbols("</st"), symbols("e")),  # "</ste"
    (symbols("</ste"), symbols("p")),  # "</step"
]

EOS = "<|end|>"


@functools.lru_cache(maxsize=1)
def byte_bpe() -> PreTrainedTokenizerFast:
    """A byte-level BPE over all 256 bytes plus :data:`MERGES`, with EOS ``<|end|>``."""
    vocab = {BYTE[b]: b for b in range(256)}
    for a, b in MERGES:
        vocab.setdefault(a + b, len(vocab))
    backend = Tokenizer(models.BPE(vocab=vocab, merges=MERGES))
    # No regex pre-split: the merges alone decide the tokens, so spaces and newlines can merge.
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token=EOS, clean_up_tokenization_spaces=False
    )


@functools.lru_cache(maxsize=4)
def char_tokenizer(alphabet: str) -> PreTrainedTokenizerFast:
    """One token per character of ``alphabet``; ``<eos>`` (id 0) and ``<unk>`` (id 1) special."""
    vocab = {"<eos>": 0, "<unk>": 1}
    for ch in alphabet:
        vocab.setdefault(ch, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<eos>",
        unk_token="<unk>",
        clean_up_tokenization_spaces=False,
    )


class PlainCharTokenizer:
    """A minimal non-Hugging-Face tokenizer: id = code point + 1, id 0 = EOS (special)."""

    all_special_ids = (0,)
    eos_token_id = 0

    def __len__(self) -> int:
        return 0x110000 + 1

    def encode(self, text: str) -> list[int]:
        return [ord(c) + 1 for c in text]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(
            "" if i == 0 and skip_special_tokens else "<eos>" if i == 0 else chr(i - 1) for i in ids
        )
