"""Pictures of token rewards and advantages (HTML and PNG)."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pytest

from botgrpo.rewards import make_math_step_reward
from botgrpo.tiny import build_char_tokenizer
from botgrpo.viz import _layout, render_html, save_html, save_png, token_texts
from tests.rewards_tokenizers import byte_bpe


def test_token_texts_name_special_tokens():
    tok = byte_bpe()
    ids = [*tok("Café\n  x").input_ids, tok.eos_token_id]
    assert token_texts(tok, ids) == ["Ca", "fé", "\n  ", "x", "⟨<|end|>⟩"]


def test_html_is_self_contained_with_tooltips_and_legend(tmp_path):
    texts = ["<b>", " x", "\n", "⟨eos⟩"]
    page = render_html(texts, [1.0, 0.0, -1.0, 0.5], [2.0, 0.0, -2.0, 1.0], title="t & u")
    assert "<script" not in page and "http" not in page  # nothing loaded from elsewhere
    assert "&lt;b&gt;" in page and "<b>" not in page.split("<body>", 1)[1]
    assert "<h2>t &amp; u</h2>" in page
    # one box per token per panel, each with both values in its tooltip
    assert page.count('class="tok"') == 8
    assert "token reward: -1.0000" in page and "advantage: -2.0000" in page
    # legends: reward centred on its median 0.25, advantage on 0 (limits -2 .. 2)
    assert "white = 0.25" in page and "white = 0;" in page
    assert "<span>-2</span>" in page and "<span>2</span>" in page
    path = save_html(tmp_path / "r.html", texts, [0.0] * 4)
    assert path.read_text(encoding="utf-8").count('class="tok"') == 4  # no advantage panel


def test_colours_diverge_around_the_centre():
    page = render_html(["a", "b", "c"], [-1.0, 0.0, 1.0], reward_centre=0.0)
    colours = [part.split(";")[0] for part in page.split("background:")[1:]]
    # RdBu: the lowest value is red, the centre white-ish, the highest blue.
    red, mid, blue = (tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in colours[-3:])
    assert red[0] > red[2] and blue[2] > blue[0] and min(mid) > 230


def test_layout_wraps_rows_and_splits_newline_tokens():
    boxes = _layout(["ab", "cd\n  ", "e", "f" * 9], width=6)
    # "cd\n  " is two boxes: "cd↵" ends row 0, "  " starts row 1; "fffffffff" wraps to row 2
    assert boxes == [
        (0, 0, 0, "ab"),
        (1, 0, 2, "cd↵"),
        (1, 1, 0, "  "),
        (2, 1, 2, "e"),
        (3, 2, 0, "fffffffff"),
    ]


def test_png_of_a_real_completion(tmp_path):
    tok = build_char_tokenizer()
    text = "<step 1>3*4=12</step 1>\n<step 2>12+5=18</step 2>\n<final>18</final>"
    ids = [*tok(text).input_ids, tok.eos_token_id]
    [tr] = make_math_step_reward(tok)(
        prompts=["p"], completions=[text], completion_ids=[ids], answer=["17"]
    )
    rewards = tr.token_rewards(3.0, 0.5)
    advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
    path = save_png(tmp_path / "r.png", token_texts(tok, ids), rewards, advantages, title="demo")
    image = mpimg.imread(path)
    height, width = image.shape[:2]
    assert width > 300 and height > 150
    # Both panels are drawn: strongly red pixels (the wrong step 2) and blue ones (step 1).
    rgb = image[..., :3]
    assert np.any((rgb[..., 0] > 0.6) & (rgb[..., 2] < 0.3))
    assert np.any((rgb[..., 2] > 0.6) & (rgb[..., 0] < 0.3))


@pytest.mark.parametrize(
    ("rewards", "advantages", "message"),
    [
        ([0.0, 1.0], None, "rewards has 2 values for 3 tokens"),
        ([0.0, 1.0, float("nan")], None, "rewards must be finite; token 2 is nan"),
        ([0.0, 1.0, 2.0], [0.0], "advantages has 1 values for 3 tokens"),
    ],
)
def test_bad_values_are_named(rewards, advantages, message):
    with pytest.raises(ValueError, match=message):
        render_html(["a", "b", "c"], rewards, advantages)


@pytest.mark.parametrize("centre", [float("nan"), float("inf")])
def test_a_non_finite_reward_centre_is_named(centre):
    with pytest.raises(ValueError, match="reward_centre must be a finite number or None"):
        render_html(["a", "b", "c"], [0.0, 1.0, 2.0], None, reward_centre=centre)
