"""Pictures of one completion's tokens coloured by token reward and by advantage.

Two outputs, same content:

- :func:`render_html` / :func:`save_html`: a self-contained HTML file (inline CSS, no
  scripts) with one panel per signal; each token is a box on a diverging colour scale, with a
  tooltip giving its index, text and values, and a legend with the scale's limits.
- :func:`save_png`: the same as a PNG (matplotlib, Agg backend): tokens laid out in wrapped
  rows of text boxes, one panel per signal, each with its colour bar.

Colour scales are diverging (blue above the centre, red below, white at it) and symmetric.
Advantages are centred on 0. Token rewards are centred on their median by default: the
outcome term ``w_g * G + b_format`` shifts every token of a rollout alike, and centring on
the median shows the local signal on top of it (pass ``reward_centre=0.0`` for signs).

Whitespace is made visible: a newline shows as ``↵`` and ends the row (a token holding a
newline is drawn as two boxes), a tab as ``→``; empty tokens (EOS and other special tokens
skipped in decoding) show as ``∅`` unless named; :func:`token_texts` names them.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["render_html", "save_html", "save_png", "token_texts"]

_CMAP = "RdBu"


def token_texts(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """Each generated token's text; empty tokens (specials) get their token name in ⟨⟩.

    >>> from botgrpo.tiny import build_char_tokenizer
    >>> tok = build_char_tokenizer()
    >>> token_texts(tok, tok("a+b").input_ids + [tok.eos_token_id])
    ['a', '+', 'b', '⟨<eos>⟩']
    """
    from botgrpo.rewards.spans import offsets_from_ids

    tokens = offsets_from_ids(tokenizer, ids)
    texts = tokens.token_texts()
    convert = getattr(tokenizer, "convert_ids_to_tokens", None)
    for k, text in enumerate(texts):
        if not text and convert is not None:
            texts[k] = f"⟨{convert(int(tokens.ids[k]))}⟩"
    return texts


@dataclass(frozen=True)
class _Panel:
    name: str
    values: np.ndarray
    centre: float

    @property
    def half(self) -> float:
        """Half-width of the symmetric scale: the largest |value - centre| (1 if none)."""
        top = float(np.max(np.abs(self.values - self.centre))) if self.values.size else 0.0
        return top if top > 0 else 1.0

    def rgb(self, values: np.ndarray | None = None) -> np.ndarray:
        from matplotlib import colormaps

        v = self.values if values is None else values
        return colormaps[_CMAP](0.5 + 0.5 * np.clip((v - self.centre) / self.half, -1, 1))[:, :3]


def _check(n_tokens: int, name: str, values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.shape[0] != n_tokens:
        raise ValueError(f"{name} has {arr.shape[0]} values for {n_tokens} tokens")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{name} must be finite; token {int(bad[0])} is {arr[bad[0]]}")
    return arr


def _panels(
    token_texts: Sequence[str], rewards: Any, advantages: Any, reward_centre: float | None
) -> list[_Panel]:
    r = _check(len(token_texts), "rewards", rewards)
    if reward_centre is not None and (
        isinstance(reward_centre, bool) or not np.isfinite(float(reward_centre))
    ):
        raise ValueError(f"reward_centre must be a finite number or None, got {reward_centre!r}")
    centre = float(np.median(r)) if reward_centre is None and r.size else reward_centre or 0.0
    panels = [_Panel("token reward", r, centre)]
    if advantages is not None:
        panels.append(_Panel("advantage", _check(len(token_texts), "advantages", advantages), 0.0))
    return panels


def _display(text: str) -> str:
    return text.replace("\t", "→").replace("\r", "").replace("\n", "↵") if text else "∅"


def _hex(rgb: np.ndarray) -> str:
    r, g, b = (round(255 * float(c)) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def _ink(rgb: np.ndarray) -> str:
    """Black or white text, whichever reads better on this background."""
    luminance = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    return "#000" if luminance > 0.45 else "#fff"


# ---------------------------------------------------------------------------------------------
# HTML

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
.panel { margin-bottom: 1.5em; }
.tokens { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px;
  line-height: 1.9; white-space: pre-wrap; word-break: break-all; border: 1px solid #ddd;
  padding: 0.6em; border-radius: 4px; }
.tok { padding: 1px 0; border-right: 1px solid rgba(0,0,0,0.12); }
.legend { display: flex; align-items: center; gap: 0.5em; font-size: 12px; margin: 0.3em 0; }
.bar { width: 240px; height: 12px; border: 1px solid #aaa; }
"""


def _legend(panel: _Panel) -> str:
    lo, hi = panel.centre - panel.half, panel.centre + panel.half
    stops = ", ".join(_hex(c) for c in panel.rgb(np.linspace(lo, hi, 9)))
    return (
        f'<div class="legend"><span>{lo:.4g}</span>'
        f'<div class="bar" style="background: linear-gradient(to right, {stops})"></div>'
        f"<span>{hi:.4g}</span><span>(white = {panel.centre:.4g}; hover a token for its "
        "values)</span></div>"
    )


def _panel_html(panel: _Panel, token_texts: Sequence[str], panels: list[_Panel]) -> str:
    colours = panel.rgb()
    spans = []
    for k, text in enumerate(token_texts):
        tip = f"#{k} {text!r}\n" + "\n".join(f"{p.name}: {p.values[k]:+.4f}" for p in panels)
        shown = html.escape(_display(text)) + ("\n" if "\n" in text else "")
        style = f"background:{_hex(colours[k])};color:{_ink(colours[k])}"
        spans.append(f'<span class="tok" style="{style}" title="{html.escape(tip)}">{shown}</span>')
    return (
        f'<div class="panel"><h3>{html.escape(panel.name)}</h3>{_legend(panel)}'
        f'<div class="tokens">{"".join(spans)}</div></div>'
    )


def render_html(
    token_texts: Sequence[str],
    rewards: Any,
    advantages: Any = None,
    *,
    title: str = "",
    reward_centre: float | None = None,
) -> str:
    """A self-contained HTML page: tokens coloured by reward (and advantage, if given).

    >>> page = render_html(["a", "+", "b"], [1.0, 0.0, -1.0], [0.5, 0.0, -0.5], title="demo")
    >>> page.startswith("<!DOCTYPE html>") and page.count('class="tok"') == 6
    True
    """
    panels = _panels(token_texts, rewards, advantages, reward_centre)
    body = "".join(_panel_html(p, token_texts, panels) for p in panels)
    heading = f"<h2>{html.escape(title)}</h2>" if title else ""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title or 'token rewards')}</title><style>{_CSS}</style></head>"
        f"<body>{heading}{body}</body></html>\n"
    )


def save_html(
    path: str | Path,
    token_texts: Sequence[str],
    rewards: Any,
    advantages: Any = None,
    *,
    title: str = "",
    reward_centre: float | None = None,
) -> Path:
    """Write :func:`render_html` to ``path`` (UTF-8); returns the path."""
    page = render_html(token_texts, rewards, advantages, title=title, reward_centre=reward_centre)
    out = Path(path)
    out.write_text(page, encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------
# PNG


def _layout(token_texts: Sequence[str], width: int) -> list[tuple[int, int, int, str]]:
    """Boxes (token index, row, column, shown text), wrapping at ``width`` characters.

    A token holding newlines is drawn as several boxes: the text up to each newline (shown
    ``↵``) ends its row and the rest starts the next.
    """
    row, col, out = 0, 0, []
    for k, text in enumerate(token_texts):
        parts = text.split("\n") if text else [""]
        for j, part in enumerate(parts):
            last = j == len(parts) - 1
            if last and j and not part:
                break  # the token ended with a newline: nothing left to draw
            shown = _display(part) if part or last else ""
            shown += "" if last else "↵"
            if col and col + len(shown) > width:
                row, col = row + 1, 0
            out.append((k, row, col, shown))
            col += len(shown)
            if not last:
                row, col = row + 1, 0
    return out


def _draw_tokens(
    ax: Any, layout: list, panel: _Panel, width: int, n_rows: int, font_pt: float
) -> None:
    from matplotlib.patches import Rectangle

    colours = panel.rgb()
    for k, row, col, shown in layout:
        ax.add_patch(
            Rectangle((col, row), max(len(shown), 0.6), 0.9, facecolor=colours[k],
                      edgecolor="#00000030", linewidth=0.4)
        )  # fmt: skip
        ax.text(col, row + 0.45, shown, fontsize=font_pt, family="DejaVu Sans Mono",
                va="center", ha="left", color=_ink(colours[k]))  # fmt: skip
    ax.set_xlim(0, width)
    ax.set_ylim(n_rows, -0.1)
    ax.axis("off")
    ax.set_title(f"{panel.name} (white = {panel.centre:.4g})", loc="left", fontsize=10)


def save_png(
    path: str | Path,
    token_texts: Sequence[str],
    rewards: Any,
    advantages: Any = None,
    *,
    title: str = "",
    width: int = 100,
    dpi: int = 110,
    reward_centre: float | None = None,
) -> Path:
    """Draw the tokens as wrapped rows of coloured text boxes, one panel per signal.

    ``width`` is the longest row in characters (the picture is as wide as its widest row).
    Uses matplotlib's Agg backend (no display).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    panels = _panels(token_texts, rewards, advantages, reward_centre)
    layout = _layout(token_texts, width)
    n_rows = (layout[-1][1] + 1) if layout else 1
    width = max([col + len(shown) for _, _, col, shown in layout] + [10])  # the widest row
    heights = [n_rows * 0.24 + 0.4 for _ in panels]  # inches per row, plus the panel title
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(width * 0.085 + 1.2, sum(heights) + (0.4 if title else 0.1)),
        squeeze=False, layout="constrained", gridspec_kw={"height_ratios": heights},
    )  # fmt: skip
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        norm = Normalize(panel.centre - panel.half, panel.centre + panel.half)
        fig.colorbar(ScalarMappable(norm, cmap=_CMAP), ax=ax, fraction=0.025, pad=0.01)
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    fig.draw_without_rendering()  # settle the layout, then size the font to the columns
    axis_inches = axes[0, 0].get_position().width * fig.get_size_inches()[0]
    font_pt = min(11.0, axis_inches / width * 72 / 0.6)  # a monospace glyph is 0.6 em wide
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyphs the font lacks (emoji, CJK) draw as boxes
        for ax, panel in zip(axes[:, 0], panels, strict=True):
            _draw_tokens(ax, layout, panel, width, n_rows, font_pt)
        out = Path(path)
        fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out
