"""Character spans <-> token positions, on hand-checked tokenizations."""

from __future__ import annotations

import numpy as np
import pytest

from botgrpo.rewards.code_blocks import extract_code_block
from botgrpo.rewards.spans import (
    line_spans,
    offsets_from_ids,
    offsets_from_text,
    spread_span_scores,
    token_span_index,
    validate_spans,
)
from botgrpo.tiny import build_char_tokenizer
from tests.rewards_tokenizers import PlainCharTokenizer, byte_bpe, char_tokenizer


def _pieces(tt):
    return [tt.text[a:b] for a, b in tt.offsets_T2.tolist()]


# ---------------------------------------------------------------------------------------------
# Offsets of generated ids


def test_byte_bpe_unicode_offsets_are_hand_checked():
    tok = byte_bpe()
    text = "Café 😀 中!"
    ids = [*tok(text).input_ids, tok.eos_token_id]
    # Tokens (byte-level symbols): Ca | fÃ© | Ġð | Ł | ĺ | Ģ | Ġ | ä¸ | Ń | ! | <|end|>
    assert tok.convert_ids_to_tokens(ids)[:3] == ["Ca", "fÃ©", "Ġð"]
    tt = offsets_from_ids(tok, ids)
    assert tt.text == text
    # "é" is one token (2 bytes -> 1 char). "Ġð" carries the space and the emoji's first byte,
    # so it covers " 😀" = [4, 6); the three tokens with the emoji's other bytes cover [5, 6).
    # "中" is split 2 + 1 bytes: both tokens cover it. EOS is empty at the end.
    assert tt.offsets_T2.tolist() == [
        [0, 2], [2, 4], [4, 6], [5, 6], [5, 6], [5, 6], [6, 7], [7, 8], [7, 8], [8, 9], [9, 9],
    ]  # fmt: skip


def test_generated_offsets_agree_with_fresh_tokenization():
    tok = byte_bpe()
    for text in ["Café 😀 中!", "def f(x):\n    return x\n", "<step 1>1+1=2</step 1>", "  x"]:
        ids = tok(text).input_ids
        generated = offsets_from_ids(tok, ids)
        fresh = offsets_from_text(tok, text)
        assert generated.text == text
        assert generated.offsets_T2.tolist() == fresh.offsets_T2.tolist()


def test_token_straddling_two_lines():
    tok = byte_bpe()
    text = "def f(x):\n    return x\n"
    tt = offsets_from_ids(tok, tok(text).input_ids)
    pieces = _pieces(tt)
    # "\n    " is one token: the end of line 1 and the indentation of line 2.
    k = pieces.index("\n    ")
    assert tt.offsets_T2[k].tolist() == [9, 14]
    lines = line_spans(text)
    assert lines.tolist() == [[0, 10], [10, 23]]
    # It overlaps both lines: mean of their scores (-1 and 0) = -0.5; step index = first line.
    local = spread_span_scores(tt.offsets_T2, lines, [-1.0, 0.0])
    assert local[k] == -0.5
    assert token_span_index(tt.offsets_T2, lines)[k] == 0


def test_decoding_that_ends_inside_a_character():
    tok = byte_bpe()
    ids = tok("a 😀").input_ids  # a | Ġð | Ł | ĺ | Ģ
    tt = offsets_from_ids(tok, ids[:-1])  # cut before the emoji's last byte
    assert tt.text == "a \ufffd"  # what decode gives for the incomplete character
    # The run of tokens after "a" never completes a character: all three share the rest of
    # the text, the space and the replacement character " \ufffd" = [1, 3).
    assert tt.offsets_T2.tolist() == [[0, 1], [1, 3], [1, 3], [1, 3]]


def test_char_tokenizer_unicode_and_unknown():
    tok = char_tokenizer("abcé😀中 ")
    ids = [*tok("aé😀中 zb").input_ids, tok.eos_token_id]
    tt = offsets_from_ids(tok, ids)
    # "z" is unknown -> <unk>, a special token skipped by decoding (as TRL's text is):
    # it gets an empty range, like EOS.
    assert tt.text == "aé😀中 b"
    assert tt.offsets_T2.tolist() == [
        [0, 1],
        [1, 2],
        [2, 3],
        [3, 4],
        [4, 5],
        [5, 5],
        [5, 6],
        [6, 6],
    ]


def test_tiny_model_char_tokenizer_is_one_token_per_character():
    tok = build_char_tokenizer()
    text = "<step 1> 2+2=4 </step 1>\n"
    tt = offsets_from_ids(tok, [*tok(text).input_ids, tok.eos_token_id])
    assert tt.text == text
    assert tt.offsets_T2[:-1].tolist() == [[i, i + 1] for i in range(len(text))]
    assert tt.offsets_T2[-1].tolist() == [len(text), len(text)]


def test_plain_tokenizer_uses_prefix_decoding():
    tok = PlainCharTokenizer()
    tt = offsets_from_ids(tok, [*tok.encode("hé😀"), tok.eos_token_id])
    assert tt.text == "hé😀"
    assert tt.offsets_T2.tolist() == [[0, 1], [1, 2], [2, 3], [3, 3]]


def test_ids_may_be_a_tensor_and_bad_ids_are_named():
    import torch

    tok = byte_bpe()
    ids = torch.tensor(tok("Ca").input_ids)
    assert offsets_from_ids(tok, ids).text == "Ca"
    with pytest.raises(ValueError, match=r"token id -100 is negative"):
        offsets_from_ids(tok, [256, -100])


def test_an_id_past_the_vocabulary_covers_nothing_and_warns():
    """A model whose embedding table is padded past its tokenizer can sample such an id:
    decoding drops it, so it must not stop training."""
    tok = byte_bpe()
    a, b = tok("a").input_ids[0], tok("b").input_ids[0]
    with pytest.warns(UserWarning, match=r"token id 99999 is past the tokenizer's vocabulary"):
        tt = offsets_from_ids(tok, [a, 99999, b])
    assert tt.text == "ab" and tt.offsets_T2.tolist() == [[0, 1], [1, 1], [1, 2]]


def test_invalid_utf8_inside_the_text_is_split_byte_by_byte(monkeypatch):
    """A token ending inside a character followed by one that does not complete it: decode
    writes one U+FFFD for the broken bytes, and each token covers only what its bytes make."""
    tok = byte_bpe()
    ids = tok("a 😀 b").input_ids  # a | Ġð | Ł | ĺ | Ģ | Ġ | b
    cut = ids[:4] + ids[5:]  # the emoji's last byte is missing
    tt = offsets_from_ids(tok, cut)
    assert tt.text == "a \ufffd b"
    assert tt.offsets_T2.tolist() == [[0, 1], [1, 3], [2, 3], [2, 3], [3, 4], [4, 5]]


def test_the_streaming_decoder_serves_cut_characters_and_added_special_tokens(monkeypatch):
    """Both used to fall back to decoding every prefix (O(T^2)): a completion cut inside a
    character after whole ones, and an added token marked special that all_special_ids omits."""
    from tokenizers import AddedToken

    from botgrpo.rewards import spans

    def no_fallback(*args, **kwargs):
        raise AssertionError("fell back to prefix decoding")

    monkeypatch.setattr(spans, "_prefix_pieces", no_fallback)
    tok = byte_bpe()
    ids = tok("ok 😀").input_ids  # o k | Ġð | Ł | ĺ | Ģ  (or similar)
    tt = offsets_from_ids(tok, ids[:-1])
    assert tt.text.endswith("\ufffd") and tt.offsets_T2[-1].tolist()[1] == len(tt.text)
    tok.add_tokens([AddedToken("<tool_call>", special=True)])
    call = tok.convert_tokens_to_ids("<tool_call>")
    assert call not in tok.all_special_ids
    a, b = tok("a").input_ids[0], tok("b").input_ids[0]
    tt = offsets_from_ids(tok, [a, call, b])
    assert tt.text == "ab" and tt.offsets_T2.tolist() == [[0, 1], [1, 1], [1, 2]]


def test_empty_completion():
    tok = byte_bpe()
    tt = offsets_from_ids(tok, [])
    assert tt.text == "" and tt.offsets_T2.shape == (0, 2)
    assert spread_span_scores(tt.offsets_T2, np.zeros((0, 2)), []).shape == (0,)


# ---------------------------------------------------------------------------------------------
# Spans -> tokens


def test_spread_mean_rule_and_empty_tokens():
    #            tok0    tok1    tok2    tok3(EOS)
    offsets = np.array([[0, 2], [2, 5], [5, 6], [6, 6]])
    spans = np.array([[0, 3], [3, 6]])
    # tok1 overlaps both spans: (2 + -1) / 2 = 0.5. EOS overlaps nothing: 0.
    assert spread_span_scores(offsets, spans, [2.0, -1.0]).tolist() == [2.0, 0.5, -1.0, 0.0]
    assert token_span_index(offsets, spans).tolist() == [0, 0, 1, -1]


def test_token_outside_spans_and_partial_overlap():
    offsets = np.array([[0, 2], [2, 4], [4, 8], [8, 9]])
    spans = np.array([[3, 5], [7, 8]])
    # tok0 touches no span; tok1 covers char 3 (span 0); tok2 = [4, 8) overlaps span 0 (char 4)
    # and span 1 (char 7): mean (1 + 3) / 2 = 2; tok3 starts at 8 = end of span 1: no overlap.
    assert spread_span_scores(offsets, spans, [1.0, 3.0]).tolist() == [0.0, 1.0, 2.0, 0.0]


def test_empty_span_covers_nothing():
    offsets = np.array([[0, 2], [2, 4]])
    spans = np.array([[1, 1], [2, 4]])
    assert spread_span_scores(offsets, spans, [5.0, 1.0]).tolist() == [0.0, 1.0]
    assert token_span_index(offsets, spans).tolist() == [-1, 1]


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        ([[0, 5], [4, 8]], r"span 1 = \(4, 8\) overlaps or precedes span 0"),
        ([[0, 11]], r"span 0 = \(0, 11\) is out of range for a text of 10 characters"),
        ([[-1, 2]], r"out of range"),
        ([[3, 2]], r"out of range"),
        ([[0, 1, 2]], r"shape \[S, 2\]"),
        ([[0.5, 2]], r"integer"),
    ],
)
def test_bad_spans_are_named(spans, message):
    with pytest.raises(ValueError, match=message):
        validate_spans(spans, 10)


def test_line_spans():
    assert line_spans("a\n\nb").tolist() == [[0, 2], [2, 3], [3, 4]]
    assert line_spans("x\ny\n", 2, 4).tolist() == [[2, 4]]
    assert line_spans("").tolist() == []
    with pytest.raises(ValueError, match="out of range"):
        line_spans("abc", 2, 9)


def test_code_block_inside_prose_to_tokens():
    tok = byte_bpe()
    text = "Café:\n```python\ndef f(x):\n    return x\n```\nDone 😀"
    tt = offsets_from_ids(tok, [*tok(text).input_ids, tok.eos_token_id])
    block = extract_code_block(tt.text)
    assert block is not None and block.code == "def f(x):\n    return x\n"
    lines = block.line_spans(tt.text)
    # Code starts after "Café:\n" (6 chars) + "```python\n" (10 chars) = 16.
    assert lines.tolist() == [[16, 26], [26, 39]]
    local = spread_span_scores(tt.offsets_T2, lines, [0.0, -1.0])
    by_piece = dict(zip(_pieces(tt), local.tolist(), strict=False))
    assert by_piece["return"] == -1.0 and by_piece[" x"] == -1.0
    assert by_piece["\n    "] == -0.5  # straddles line 1 (0) and line 2 (-1)
    assert by_piece["Ca"] == 0.0  # prose
    assert local[-1] == 0.0  # EOS
    # Every token with a nonzero value lies inside the code block.
    inside = (tt.offsets_T2[:, 1] > block.start) & (tt.offsets_T2[:, 0] < block.end)
    assert not np.any((local != 0) & ~inside)


def test_spreading_refuses_unsorted_or_overlapping_spans():
    offsets = np.array([[0, 2], [2, 4]])
    with pytest.raises(ValueError, match="span 1 overlaps or precedes span 0"):
        spread_span_scores(offsets, np.array([[0, 3], [2, 4]]), [1.0, 2.0])
    with pytest.raises(ValueError, match="0 <= start <= end"):
        spread_span_scores(offsets, np.array([[3, 1]]), [1.0])
    with pytest.raises(ValueError, match="got 1 scores for 2 spans"):
        spread_span_scores(offsets, np.array([[0, 1], [1, 2]]), [1.0])
