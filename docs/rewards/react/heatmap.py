"""Make react-heatmap.png: token rewards and BoT advantages of one React completion.

A group of four completions for one prompt (a clean component, one with a missing key, one
with a syntax error, one that throws at render) is scored by the React recipe with the real
toolchain; the BoT advantage (Eqs. 2-3) of the group is computed and the completion with the
syntax error is drawn. Run from the repository root: .venv/bin/python docs/rewards/react/heatmap.py
"""

from pathlib import Path

import numpy as np
import torch

from botgrpo.core.advantages import bot
from botgrpo.rewards.recipes.react import make_react_code_reward
from botgrpo.tiny import build_char_tokenizer
from botgrpo.viz import save_png, token_texts

CLEAN = """export default function List() {
  const fruits = ["apple", "pear"];
  return (
    <ul>
      {fruits.map((f) => <li key={f}>{f}</li>)}
    </ul>
  );
}
"""
VARIANTS = [
    CLEAN,
    CLEAN.replace(" key={f}", ""),
    CLEAN.replace('"pear"];', '"pear";'),
    CLEAN.replace("  return (", "  fruits.sort().pop().crash();\n  return ("),
]


def main() -> None:
    tok = build_char_tokenizer()
    texts = [f"Here is the list:\n```jsx\n{code}```\nEach fruit is an item." for code in VARIANTS]
    ids = [tok(t).input_ids for t in texts]
    rewards = make_react_code_reward(tok)(
        prompts=["A fruit list."] * 4, completions=texts, completion_ids=ids
    )
    w_g, w_s = 3.0, 0.5
    length = max(len(i) for i in ids)
    rewards_bt = torch.zeros(4, length, dtype=torch.float64)
    mask_bt = torch.zeros(4, length, dtype=torch.bool)
    for k, tr in enumerate(rewards):
        rewards_bt[k, : len(ids[k])] = torch.from_numpy(tr.token_rewards(w_g, w_s))
        mask_bt[k, : len(ids[k])] = True
    adv_bt = bot(rewards_bt, mask_bt, torch.zeros(4, dtype=torch.long), eps=1e-6, gather=None)
    k = 2  # the syntax error
    for i, tr in enumerate(rewards):
        print(i, tr.outcome, tr.info.get("line_penalties"))
    out = Path(__file__).with_name("react-heatmap.png")
    save_png(
        out,
        token_texts(tok, ids[k]),
        rewards[k].token_rewards(w_g, w_s),
        adv_bt[k, : len(ids[k])].numpy(),
        title="Syntax error on line 2 (w_g 3, w_s 0.5)",
        width=60,
    )
    print("wrote", out, "mean advantage", float(np.mean(adv_bt[k, : len(ids[k])].numpy())))


if __name__ == "__main__":
    main()
