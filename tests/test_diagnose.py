"""`botgrpo diagnose`: step-0 figures on hand-made rollouts with known answers, the advice on
fixed figures, a real run on the shipped chain warm start, and bad inputs in one line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from botgrpo.cli import main
from botgrpo.harness.advice import advise, nearest, render_diagnosis
from botgrpo.harness.diagnosis import (
    Rollouts,
    failure_outcome,
    group_figures,
    length_figures,
    score_rollouts,
    verdict_figures,
    with_intervals,
)
from botgrpo.harness.shortcut import (
    PROBES,
    cut_short,
    probe_rollouts,
    shortcut_figures,
    shortcut_sums,
    single_lines,
)
from botgrpo.rewards.types import TokenReward


def rollouts(lengths: list[int], k: int, truncated=None) -> Rollouts:
    n = len(lengths)
    return Rollouts(
        prompts=[f"p{i}" for i in range(n // k)],
        columns={"answer": [str(i) for i in range(n // k)]},
        completion_ids=[list(range(1, m + 1)) for m in lengths],
        texts=["x" * m for m in lengths],
        truncated=truncated or [False] * n,
        k=k,
        seconds=1.0,
    )


def token_reward(spec):
    """A token reward function: rollout i gets outcome spec[i][0], local spec[i][1] on every
    token, verdicts spec[i][2] and solved spec[i][3]."""

    def reward(prompts, completions, completion_ids, **columns):
        out = []
        for i, ids in enumerate(completion_ids):
            g, s, verdicts, solved = spec[i]
            out.append(
                TokenReward(
                    outcome=g,
                    local=np.full(len(ids), s),
                    info={"raw_verdicts": verdicts, "solved": solved},
                )
            )
        return out

    return reward


def test_group_figures_on_rollouts_with_known_answers():
    # group 0: outcomes differ (GRPO has signal), locals differ; group 1: all equal outcome and
    # local (neither has signal); group 2: equal outcome, different local (only BoT has signal)
    spec = [
        (1.0, 0.0, [1, 1], True),
        (0.0, -1.0, [1, -1], False),
        (0.0, 0.0, [1], False),
        (0.0, 0.0, [1], False),
        (0.0, 1.0, [1, 1], False),
        (0.0, -1.0, [-1], False),
    ]
    ro = rollouts([3, 2, 4, 4, 2, 3], k=2)
    scored = score_rollouts(ro, [token_reward(spec)], w_g=3.0, w_s=0.5)
    sums = group_figures(scored, ro.group_B)
    figures = with_intervals(sums)
    assert figures["grpo_no_signal"]["value"] == pytest.approx(2 / 3)
    assert figures["bot_no_signal"]["value"] == pytest.approx(1 / 3)
    # |outcome part|: w_g G = 3 on each of rollout 0's 3 tokens = 9
    local_abs = 0.5 * (2 + 2 + 3)  # |w_s S_t| on rollouts 1, 4, 5
    assert figures["local_share"]["value"] == pytest.approx(local_abs / (9 + local_abs))
    # the first token's return: each outcome once (3 on rollout 0), each rollout's local sum
    local_sums = 0.5 * 2 + 0.5 * 2 + 0.5 * 3  # |sum_t w_s S_t| on rollouts 1, 4, 5
    assert figures["return_local_share"]["value"] == pytest.approx(local_sums / (3 + local_sums))
    assert figures["solved"]["value"] == pytest.approx(1 / 6)
    # every outcome is 0 but rollout 0's: one rollout of six earns outcome credit
    assert figures["outcome_credit"]["value"] == pytest.approx(1 / 6)
    low, high = figures["grpo_no_signal"]["low"], figures["grpo_no_signal"]["high"]
    assert 0 <= low <= figures["grpo_no_signal"]["value"] <= high <= 1
    verdicts = verdict_figures(scored)
    assert verdicts["wrong_in_solved"] == 0.0
    assert verdicts["right_in_failed"] == pytest.approx(5 / 7)
    assert verdicts["steps_right"] == pytest.approx(7 / 9)
    assert verdicts["false_alarm"] is None


def test_outcome_credit_counts_the_rollouts_above_a_typical_failure():
    # a graded code reward: -1 broken, 0 compiles with lint, 0.5 compiles clean, 1 solves, and
    # one rare answer below the usual failure (-1.3: compiles, then fails to render)
    spec = [
        (-1.0, 0.0, None, False),
        (-1.0, 0.0, None, False),
        (0.0, 0.0, None, False),
        (-1.0, 0.0, None, False),
        (0.5, 0.0, None, False),
        (1.0, 0.0, None, True),
        (-1.3, 0.0, None, False),
        (-1.0, 0.0, None, False),
    ]
    ro = rollouts([2] * 8, k=4)
    scored = score_rollouts(ro, [token_reward(spec)], w_g=3.0, w_s=0.5)
    assert failure_outcome(scored) == -3.0  # w_g G of the broken ones, the most common failure
    figures = with_intervals(group_figures(scored, ro.group_B))
    assert figures["outcome_credit"]["value"] == pytest.approx(3 / 8)  # 0, 0.5 and 1
    assert figures["solved"]["value"] == pytest.approx(1 / 8)
    # equally common failures: the lowest is the typical one
    tied = [(-1.0, 0.0, None, False), (0.0, 0.0, None, False)] * 4
    scored = score_rollouts(ro, [token_reward(tied)], w_g=1.0, w_s=0.5)
    assert failure_outcome(scored) == -1.0
    assert with_intervals(group_figures(scored, ro.group_B))["outcome_credit"]["value"] == 0.5
    # every rollout failing alike: none earns credit; every rollout solving: all do
    flat = score_rollouts(ro, [token_reward([(0.0, 0.0, None, False)] * 8)], w_g=3.0, w_s=0.5)
    assert with_intervals(group_figures(flat, ro.group_B))["outcome_credit"]["value"] == 0.0
    solved = score_rollouts(ro, [token_reward([(1.0, 0.0, None, True)] * 8)], w_g=3.0, w_s=0.5)
    assert failure_outcome(solved) is None
    assert with_intervals(group_figures(solved, ro.group_B))["outcome_credit"]["value"] == 1.0

    # a rollout no reward function scores (outcome 0, as in training) is neither the typical
    # failure nor credited
    def some(prompts, completions, completion_ids, **columns):
        return [None, 1.0, 1.0, 2.0, 1.0, None, None, None]

    partial = score_rollouts(ro, [some], w_g=1.0, w_s=0.5)
    assert failure_outcome(partial) == 1.0  # 2.0, the batch's best, counts as solved
    assert with_intervals(group_figures(partial, ro.group_B))["outcome_credit"][
        "value"
    ] == pytest.approx(1 / 8)


def test_a_group_of_one_has_no_signal_and_masked_tokens_cannot_matter():
    spec = [(1.0, 0.5, [1], True), (0.0, -0.5, [-1], False)]
    one = rollouts([3, 3], k=1)
    scored = score_rollouts(one, [token_reward(spec)], w_g=1.0, w_s=1.0)
    figures = with_intervals(group_figures(scored, one.group_B))
    assert figures["grpo_no_signal"]["value"] == 1.0  # one rollout: nothing to compare
    assert figures["bot_no_signal"]["value"] == 1.0  # and its token rewards are constant
    # values outside a rollout's own tokens (the padding of a batch) cannot move a figure
    pair = rollouts([2, 5], k=2)
    scored = score_rollouts(pair, [token_reward(spec)], w_g=1.0, w_s=1.0)
    before = group_figures(scored, pair.group_B)
    scored.local_BT[0, 2:] = 99.0
    scored.outcome_B[1] += 0.0
    after = group_figures(scored, pair.group_B)
    assert all(np.allclose(before[k], after[k]) for k in before)


def test_scalar_rewards_only_give_no_local_signal_and_reference_rates():
    def scalar(prompts, completions, completion_ids, **columns):
        return [float(len(c) > 2) for c in completions]

    ro = rollouts([1, 3, 2, 2], k=2, truncated=[False, True, False, False])
    scored = score_rollouts(ro, [scalar], w_g=3.0, w_s=0.5)
    figures = with_intervals(group_figures(scored, ro.group_B))
    assert figures["local_share"]["value"] == 0.0
    assert figures["grpo_no_signal"]["value"] == 0.5
    assert figures["bot_no_signal"]["value"] == 0.5  # with no local signal BoT is GRPO
    lengths = length_figures(ro)
    assert lengths["truncated"] == 0.25 and lengths["mean_tokens"] == 2.0
    # against a reference: a verdict source judging one right step wrong and missing one error
    spec = [(0.0, 0.0, [1, -1, 1], False)] * 4
    mine = score_rollouts(ro, [token_reward(spec)], w_g=1.0, w_s=1.0)
    reference = [[1, 1, -1]] * 4
    v = verdict_figures(mine, reference)
    assert (
        v["false_alarm"] == 0.5
        and v["miss"] == 1.0
        and v["verdict_accuracy"] == pytest.approx(1 / 3)
        and v["flags_right"] == 0.0  # the one step judged wrong is right
    )
    # a flag on the wrong step and one on the right: half the flags are right
    spec = [(0.0, 0.0, [1, -1, -1], False)] * 4
    mine = score_rollouts(ro, [token_reward(spec)], w_g=1.0, w_s=1.0)
    v = verdict_figures(mine, reference)
    assert v["flags_right"] == 0.5 and v["miss"] == 0.0 and v["false_alarm"] == 0.5
    # nothing judged wrong: no precision to read
    spec = [(0.0, 0.0, [1, 1, 1], False)] * 4
    mine = score_rollouts(ro, [token_reward(spec)], w_g=1.0, w_s=1.0)
    assert verdict_figures(mine, reference)["flags_right"] is None


MAP = {
    "settings": [
        {
            "id": "rare",
            "label": "rare success",
            "page": "difficulty.md",
            "speedup": {"ratio": 1.6, "low": 1.4, "high": 1.9},
            "auc_diff": {"mean": 0.12, "low": 0.09, "high": 0.15},
            "predictors": {
                "grpo_no_signal": {"value": 0.8},
                "local_share": {"value": 0.05},
                "solved": {"value": 0.03},
            },
        },
        {
            "id": "code",
            "label": "code",
            "page": "react-tiny.md",
            "speedup": {"ratio": 1.0, "low": 0.99, "high": 1.03},
            "auc_diff": {"mean": 0.005, "low": -0.02, "high": 0.03},
            "predictors": {
                "grpo_no_signal": {"value": 0.03},
                "local_share": {"value": 0.03},
                "solved": {"value": 0.3},
            },
        },
    ],
    "rule": {
        "pays_from_no_signal": 0.5,
        "pays_from_local_share": 0.03,
        "pays_basis": ["rare 1.60x"],
        "ties_below_no_signal": 0.1,
        "ties_basis": ["code 1.00x"],
        "min_accuracy": 0.8,
        "max_false_alarm": 0.1,
        "accuracy_basis": ["flip0.2 AUC +0.027"],
        "min_flags_right": 0.43,
        "flags_right_basis": ["flip0.2 0.43, AUC +0.027", "false_alarm0.3 0.39, AUC -0.012"],
    },
}


def diagnosis(no_signal, share, solved=0.1, bot_none=0.0, verdicts=None, credit=None):
    f = {"value": None, "low": None, "high": None}
    figures = {
        "grpo_no_signal": {**f, "value": no_signal},
        "bot_no_signal": {**f, "value": bot_none},
        "local_share": {**f, "value": share},
        "solved": {**f, "value": solved},
    }
    if credit is not None:
        figures["outcome_credit"] = {**f, "value": credit}
    return {"figures": figures, "verdicts": verdicts or {}}


@pytest.mark.parametrize(
    ("figures", "expected", "nearest_id"),
    [
        (diagnosis(0.75, 0.05), "bot", "rare"),
        (diagnosis(0.02, 0.03, solved=0.35), "grpo or dapo (bot ties)", "code"),
        (diagnosis(0.3, 0.04, solved=0.2), "bot (a smaller gain likely)", None),
        (
            diagnosis(0.9, 0.05, verdicts={"verdict_accuracy": 0.7, "false_alarm": 0.3}),
            "fix the verifier first",
            "rare",
        ),
        (diagnosis(1.0, 0.0, solved=0.0, bot_none=1.0), "warm start first", None),
        # long pages with a flag on a random line: accurate on the many right lines, few false
        # alarms per right line, but only 7% of the flags on a wrong line
        (
            diagnosis(
                0.5,
                0.04,
                solved=0.0,
                verdicts={
                    "right_in_failed": 0.93,
                    "verdict_accuracy": 0.94,
                    "false_alarm": 0.03,
                    "flags_right": 0.07,
                },
            ),
            "fix the verifier first",
            None,
        ),
        (
            diagnosis(0.9, 0.05, verdicts={"verdict_accuracy": 0.95, "flags_right": 0.8}),
            "bot",
            "rare",
        ),
    ],
)
def test_the_advice_on_fixed_figures(figures, expected, nearest_id):
    advice = advise(figures, MAP)
    assert advice["try"] == expected
    assert advice["why"] and all(isinstance(w, str) for w in advice["why"])
    if nearest_id:
        assert advice["nearest"][0]["id"] == nearest_id
    assert advise(figures, {"settings": [], "rule": {}})["try"] == "unknown"


def test_a_diagnosis_on_few_prompts_says_its_figures_are_rough():
    figures = {**diagnosis(0.75, 0.05), "prompts": 2}
    why = " ".join(advise(figures, MAP)["why"])
    assert "only 2 prompts were sampled" in why and "--prompts 64" in why
    many = {**diagnosis(0.75, 0.05), "prompts": 64}
    assert "prompts were sampled" not in " ".join(advise(many, MAP)["why"])


def test_rollouts_cut_at_the_length_limit_lead_the_advice_with_a_caution():
    cut = {**diagnosis(0.75, 0.05), "lengths": {"truncated": 1.0}}
    why = advise(cut, MAP)["why"]
    assert why[0].startswith("100% of the rollouts were cut at the length limit")
    ended = {**diagnosis(0.75, 0.05), "lengths": {"truncated": 0.1}}
    assert "cut at the length limit" not in " ".join(advise(ended, MAP)["why"])


def test_a_tie_names_the_most_any_tie_gained_over_the_run():
    """A tie is read from the speedup; over the run a tie may still keep a small gain, and the
    advice says how much the map's ties kept at most (nothing when none gained)."""
    figures = diagnosis(0.02, 0.03, solved=0.35)
    gained = {**MAP, "rule": {**MAP["rule"], "ties_gain_up_to": 0.024}}
    why = " ".join(advise(figures, gained)["why"])
    assert "expect no speedup, and over the run at most a small gain" in why and "+0.024" in why
    level = {**MAP, "rule": {**MAP["rule"], "ties_gain_up_to": -0.002}}
    assert "over the run" not in " ".join(advise(figures, level)["why"])


#: A map where the silent share overlaps (a setting that paid at 0.48 silent, one that tied at
#: 0.50) and only the starting solve rate separates them.
SOLVE_MAP = {
    **MAP,
    "rule": {
        **MAP["rule"],
        "pays_from_no_signal": 0.48,
        "ties_below_no_signal": 0.5,
        "pays_up_to_solved": 0.08,
        "ties_from_solved": 0.18,
        "separating": ["solved"],
    },
}


#: A map where only the share of rollouts earning outcome credit separates the settings.
CREDIT_RULE = {
    **SOLVE_MAP["rule"],
    "pays_up_to_credit": 0.11,
    "ties_from_credit": 0.18,
    "separating": ["outcome_credit"],
}


@pytest.mark.parametrize(
    ("rule", "figures", "expected", "says"),
    [
        (
            SOLVE_MAP["rule"],
            diagnosis(0.49, 0.04, solved=0.0, verdicts={"right_in_failed": 0.9}),
            "bot",
            "0% of rollouts solve",
        ),
        (SOLVE_MAP["rule"], diagnosis(0.49, 0.04, solved=0.2), "grpo or dapo (bot ties)", "20%"),
        (SOLVE_MAP["rule"], diagnosis(0.9, 0.04, solved=0.12), "bot (a smaller gain likely)", ""),
        # both figures separate and disagree: in between, never a confident call
        (
            {**SOLVE_MAP["rule"], "separating": ["grpo_no_signal", "solved"]},
            diagnosis(0.3, 0.04, solved=0.02),
            "bot (a smaller gain likely)",
            "between",
        ),
        # a solve rate where BoT led, but GRPO has a signal in every group: BoT ranks no group
        # GRPO cannot, so the advice says why it is not a confident call
        (
            SOLVE_MAP["rule"],
            diagnosis(0.0, 0.04, solved=0.0, verdicts={"right_in_failed": 0.9}),
            "bot (a smaller gain likely)",
            "0% of rollouts solve their problem at step 0 (as where BoT led), but GRPO already "
            "has a signal in every group",
        ),
        # ... or BoT's signal leaves as many groups silent as GRPO's
        (
            SOLVE_MAP["rule"],
            diagnosis(0.3, 0.04, solved=0.0, bot_none=0.3, verdicts={"right_in_failed": 0.9}),
            "bot (a smaller gain likely)",
            "BoT's local signal leaves 30% of its groups silent, no fewer than GRPO's 30%",
        ),
        # ... or BoT's local signal is quieter than wherever it paid
        (
            {**SOLVE_MAP["rule"], "pays_from_local_share": 0.03},
            diagnosis(0.49, 0.01, solved=0.0, verdicts={"right_in_failed": 0.9}),
            "bot (a smaller gain likely)",
            "BoT's local signal is 1.0% of its reward, quieter than in every setting where it "
            "paid (from 3.0%)",
        ),
        (
            {**SOLVE_MAP["rule"], "separating": ["grpo_no_signal", "solved"]},
            diagnosis(0.9, 0.04, solved=0.02),
            "bot",
            "90% of GRPO's groups carry no signal at step 0 and 2% of rollouts solve",
        ),
        # no figure separates the settings that paid from those that tied: never a confident
        # call either way, and the advice says that no figure decides it
        (
            {**SOLVE_MAP["rule"], "separating": []},
            diagnosis(0.9, 0.04, solved=0.02),
            "bot (a smaller gain likely)",
            "no step-0 figure separates the settings where BoT led from those where it tied",
        ),
        (
            {**SOLVE_MAP["rule"], "separating": []},
            diagnosis(0.02, 0.04, solved=0.3),
            "bot (a smaller gain likely)",
            "no step-0 figure separates",
        ),
        # only the outcome credit separates: it decides both ways, and says so
        (
            CREDIT_RULE,
            diagnosis(0.3, 0.04, solved=0.0, credit=0.05, verdicts={"right_in_failed": 0.9}),
            "bot",
            "only 5% of rollouts earn any outcome credit at step 0",
        ),
        (
            CREDIT_RULE,
            diagnosis(0.3, 0.04, solved=0.0, credit=0.3, verdicts={"right_in_failed": 0.9}),
            "grpo or dapo (bot ties)",
            "30% of rollouts already earn outcome credit",
        ),
        (
            CREDIT_RULE,
            diagnosis(0.3, 0.04, solved=0.0, credit=0.14, verdicts={"right_in_failed": 0.9}),
            "bot (a smaller gain likely)",
            "14% of rollouts earn outcome credit at step 0 (score above a typical failed "
            "attempt): between the settings where BoT paid (up to 11%) and those where it tied "
            "(from 18%)",
        ),
        # the silent share alone between its thresholds: the advice names it and them
        (
            {
                **SOLVE_MAP["rule"],
                "pays_from_no_signal": 0.6,
                "ties_below_no_signal": 0.2,
                "separating": ["grpo_no_signal"],
            },
            diagnosis(0.4, 0.04, solved=0.1),
            "bot (a smaller gain likely)",
            "40% of GRPO's groups carry no signal at step 0: between the settings where BoT "
            "tied (up to 20%) and those where it paid (from 60%)",
        ),
        # a diagnosis stored before the figure was measured gets no vote from it
        (
            CREDIT_RULE,
            diagnosis(0.3, 0.04, solved=0.0, verdicts={"right_in_failed": 0.9}),
            "bot (a smaller gain likely)",
            "",
        ),
    ],
)
def test_the_advice_follows_the_figures_the_map_found_separating(rule, figures, expected, says):
    advice = advise(figures, {**MAP, "rule": rule})
    assert advice["try"] == expected
    assert says in " ".join(advice["why"])


@pytest.mark.parametrize(("steps_right", "cautioned"), [(0.23, True), (0.49, True), (0.5, False)])
@pytest.mark.parametrize("no_signal", [0.75, 0.02])
def test_mostly_wrong_steps_carry_a_caution_whatever_the_choice(no_signal, steps_right, cautioned):
    advice = advise(diagnosis(no_signal, 0.05, verdicts={"steps_right": steps_right}), MAP)
    assert advice["try"] in ("bot", "grpo or dapo (bot ties)")
    said = any("of the steps the model writes are judged right" in w for w in advice["why"])
    assert said == cautioned


PAGE = "```jsx\nimport React from 'react';\nexport default function App() {\n  return <p/>;\n}\n```"


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        (0, ""),
        (1, "```jsx\n```"),  # the open fence is closed
        (2, "```jsx\nimport React from 'react';\n```"),
        (0.5, "```jsx\nimport React from 'react';\nexport default function App() {\n```"),
        (0.01, "```jsx\n```"),  # a share keeps at least one line
        (99, PAGE),  # all lines but the last (here the closing fence, closed again)
    ],
)
def test_cut_short_keeps_the_first_lines_and_closes_an_open_fence(keep, expected):
    assert cut_short(PAGE, keep) == expected


def test_cut_short_of_plain_text_adds_no_fence():
    assert cut_short("a\nb\nc\nd", 2) == "a\nb" and cut_short("one line", 1) == ""


def test_a_fence_is_closed_with_its_own_mark_and_only_when_open():
    four = "````md\n```js\nx\n```\n````\nafter"
    assert cut_short(four, 3) == "````md\n```js\nx\n````"  # inner ``` lines do not close ````
    assert single_lines(four, 1) == ["````md\n```js\n````"]
    closed = "```py\nx = 1\n```\nprose\nmore"
    assert cut_short(closed, 4) == "```py\nx = 1\n```\nprose"  # closed before the cut


def test_single_lines_are_spaced_through_the_body_inside_its_fence():
    assert single_lines(PAGE, 3) == [
        "```jsx\nimport React from 'react';\n```",
        "```jsx\nreturn <p/>;\n```",
        "```jsx\n}\n```",
    ]
    assert single_lines("a\n\nb", 3) == ["a", "a", "b"]  # blank lines skipped, repeated
    assert single_lines("", 2) == ["", ""] and single_lines("```py\n```", 1) == [""]


def probe_case(texts: list[str], reward, k: int = 4):
    ro = Rollouts(
        prompts=[f"p{i}" for i in range(len(texts) // k)],
        columns={},
        completion_ids=[[1] * (t.count("\n") + 1) for t in texts],
        texts=texts,
        truncated=[False] * len(texts),
        k=k,
        seconds=0.0,
    )
    sampled = score_rollouts(ro, [reward], w_g=1.0, w_s=0.5)
    probes = probe_rollouts(ro, lambda text: [1] * (text.count("\n") + 1), sampled.solved_B)
    best = float(sampled.outcome_B.max())
    probed = score_rollouts(probes, [reward], w_g=1.0, w_s=0.5, solved_from=best)
    return ro, sampled, probes, probed


def hack_pays(prompts, completions, completion_ids, **kw):
    """2 for the answer 'win' (it solves), 0.5 for the snippet 'hack', None (unscored) for
    'skip', -1 for anything else."""
    scores = {"win": 2.0, "hack": 0.5, "skip": None}
    return [scores.get(c, -1.0) for c in completions]


def test_the_shortcut_probe_counts_rollouts_below_the_best_short_answer():
    """Prompt 0: its first failed rollout 'a\nhack' (not the solved 'win') is cut, and the
    snippet 'hack' on its own (0.5) lies above its three failed rollouts. Prompt 1: a piece of
    its failed rollout is the answer 'win', which solves: a solution, not a shortcut, so it is
    left out and nothing lies above the rollouts."""
    texts = ["win", "a\nhack", "c", "d", "win\nx", "e", "f", "g"]
    ro, sampled, probes, probed = probe_case(texts, hack_pays)
    assert sampled.solved_B.tolist() == [True] + [False] * 7
    assert probes.k == len(PROBES) and len(probes.texts) == 2 * len(PROBES)
    assert probes.texts[:2] == ["", "a"] and probes.texts[-1] == "x"
    assert probes.texts[len(PROBES) - 1] == "hack"  # the last single line of 'a\nhack'
    assert probed.solved_B[len(PROBES) + 1]  # 'win', the first line of prompt 1's rollout
    sums = shortcut_sums(sampled, probed, k=4)
    assert sums["shortcut_beats"].tolist() == [3.0, 0.0]
    figures = with_intervals({**group_figures(sampled, ro.group_B), **sums})
    assert figures["shortcut_beats"]["value"] == 3 / 8
    report = shortcut_figures(sampled, probed, 4, probes.texts)
    assert report["cut"] == "one line of it on its own" and report["prompts_with_one"] == 1
    assert report["example"] == "hack" and report["example_outcome"] == 0.5
    assert report["example_rollouts_outcome"] == (2 - 1 - 1 - 1) / 4
    # without the probe's sums the figure is left out, not made up
    assert "shortcut_beats" not in with_intervals(group_figures(sampled, ro.group_B))


def test_unscored_short_answers_and_all_solved_prompts_cannot_show_a_hole():
    """'skip' is scored by no reward (outcome 0 and no weight in training, above every failed
    rollout's -1): left out. A prompt whose rollouts all solve has no failed attempt to cut."""
    texts = ["skip\nx", "c", "win", "win"]
    _, sampled, probes, probed = probe_case(texts, hack_pays, k=2)
    assert probed.outcome_B[1] == 0.0 and not probed.scored_B[1]  # 'skip', its first line
    assert shortcut_sums(sampled, probed, k=2)["shortcut_beats"].tolist() == [0.0, 0.0]
    assert shortcut_figures(sampled, probed, 2, probes.texts) == {"cut": None}


@pytest.mark.parametrize(("beats", "cautioned"), [(0.93, True), (0.8, True), (0.66, False)])
def test_a_shortcut_that_outscores_most_rollouts_carries_a_caution(beats, cautioned):
    result = diagnosis(0.9, 0.05, solved=0.0, verdicts={"right_in_failed": 0.9})
    result["figures"]["shortcut_beats"] = {"value": beats, "low": beats, "high": beats}
    result["shortcut"] = {"cut": "one line of it on its own"}
    advice = advise(result, MAP)
    said = [w for w in advice["why"] if "a short answer (one line of it on its own)" in w]
    assert bool(said) == cautioned and advice["try"] == "bot"


def test_nearest_orders_by_scaled_distance():
    close = nearest(diagnosis(0.7, 0.05)["figures"], MAP["settings"])
    assert [s["id"] for s in close] == ["rare", "code"] and close[0]["distance"] < 1


@pytest.mark.slow
def test_diagnose_on_the_shipped_chain_warm_start(tmp_path, capsys):
    """The command end to end: the report, the JSON, the plot, and figures that match what the
    PRM page's clean comparison recorded at its first step (GRPO: 75% of groups without
    signal, local share 0.041, 5 seeds x 8 groups)."""
    args = [
        "diagnose",
        "--task",
        "chain",
        "--prompts",
        "48",
        "--out-dir",
        str(tmp_path),
        "--progress",
        "false",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Try:" in out and "GRPO groups with no signal" in out
    folder = tmp_path / "diagnose"
    result = json.loads((folder / "diagnosis.json").read_text())
    assert (folder / "diagnosis.png").read_bytes()[:4] == b"\x89PNG"
    f = result["figures"]
    assert f["grpo_no_signal"]["low"] <= 0.75 <= f["grpo_no_signal"]["high"]
    assert f["local_share"]["low"] - 0.01 <= 0.041 <= f["local_share"]["high"] + 0.01
    assert f["bot_no_signal"]["value"] == 0.0
    # summed over a completion the step signal outweighs an outcome counted once
    assert f["local_share"]["value"] < 0.5 < f["return_local_share"]["value"] < 1
    assert "Try:" in render_diagnosis(result)
    assert "share of the first token's return" in out
    # a chain answer cut short has no final answer: it scores as a failed one, never above
    assert f["shortcut_beats"]["value"] == 0.0 and "below a short answer" in out
    # the task's own verdicts: its flags are written for reading, with nothing to check
    assert result["exact_verdicts"] and "exact by construction" in out
    assert (folder / "flags.jsonl").read_text().count("\n") == result["flag_sample"]["sampled"]


BROKEN = textwrap.dedent(
    """
    def broken(prompts, completions, completion_ids, **kw):
        raise RuntimeError("the judge is down")
    """
)


UNICODE_TASK = textwrap.dedent(
    """
    from botgrpo.tasks import load_task
    from botgrpo.tasks.base import Example

    class Uni(type(load_task("chain"))):
        name = "uni"

        def sample(self, rng):
            ex = super().sample(rng)
            return Example(ex.prompt.replace("+", "\u00d7"), ex.answer, ex.meta)

    def uni():
        return Uni()
    """
)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--task", "chain", "--k", "1"], "k must be >= 2"),
        (["--task", "chain", "--model", "real:nope"], "no real model 'nope'"),
        (["--task", "nosuchtask"], "unknown task"),
        (["--prompts", "8"], "give --task SPEC or --config"),
        (["--task", "chain", "--config", "RECIPE_NO_REWARDS"], "reward_funcs is empty"),
        (
            ["--task", "chain", "--config", "RECIPE_BROKEN"],
            "would score with the task's own reward, not the recipe's reward_funcs",
        ),
        (["--task", "chain", "--w-s", "inf"], "w_s must be a finite number >= 0"),
        (["--task", "chain", "--w-g", "0"], "w_g must be a finite number > 0"),
        (["--task", "chain", "--w-g", "nan"], "w_g must be a finite number > 0"),
        (["--task", "chain", "--seed", "-1"], "seed must be >= 0"),
        (["--task", "chain", "--temperature", "inf"], "temperature must be a finite number"),
        (["--task", "unimod:uni", "--model", "warm:chain"], "tokenizer cannot: '×'"),
        (["--task", "chain", "--model", "EMPTY_DIR"], "the folder holds no model"),
        (
            ["--config", "RECIPE_BROKEN", "--prompts", "2", "--k", "2", "--progress", "false"],
            "a reward function failed",
        ),
    ],
)
def test_bad_inputs_are_one_line_and_write_nothing(tmp_path, capsys, monkeypatch, extra, says):
    (tmp_path / "brokenmod.py").write_text(BROKEN)
    (tmp_path / "unimod.py").write_text(UNICODE_TASK, encoding="utf-8")
    (tmp_path / "EMPTY_DIR").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    recipes = {
        "RECIPE_NO_REWARDS": "model_name_or_path: warm:chain\ntask: chain\nreward_funcs: []\n",
        "RECIPE_BROKEN": "model_name_or_path: warm:chain\ntask: chain\n"
        "reward_funcs: ['brokenmod:broken']\nmax_completion_length: 8\n",
    }
    args = []
    for a in extra:
        if a in recipes:
            path = tmp_path / f"{a}.yaml"
            path.write_text(recipes[a])
            a = str(path)
        elif a == "EMPTY_DIR":
            a = str(tmp_path / a)
        args.append(a)
    out = tmp_path / "out"
    assert main(["diagnose", *args, "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert not out.exists()


SHORT_REWARDS = textwrap.dedent(
    """
    def short_pays(prompts, completions, completion_ids, **kw):
        return [1.0 if len(c) < 4 else -1.0 for c in completions]

    def fails_on_empty(prompts, completions, completion_ids, **kw):
        if any(not c for c in completions):
            raise ValueError("empty completion")
        return [0.0] * len(completions)
    """
)


@pytest.mark.parametrize(
    ("reward", "says"),
    [
        ("short_pays", "A short answer (the empty answer) scores above 100% of the sampled"),
        (
            "fails_on_empty",
            "| rollouts scoring below a short answer | n/a: the short answers could",
        ),
    ],
)
def test_the_shortcut_probe_on_a_users_reward(tmp_path, capsys, monkeypatch, reward, says):
    """A reward that pays any answer under 4 characters: the empty answer outscores every
    sampled rollout (16 tokens of the chain warm start), and the advice says so; a reward
    that raises on an empty answer leaves the probe out, named, and the diagnosis stands."""
    (tmp_path / "shortmod.py").write_text(SHORT_REWARDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "model_name_or_path: warm:chain\ntask: chain\n"
        f"reward_funcs: ['shortmod:{reward}']\nmax_completion_length: 16\n"
    )
    args = ["diagnose", "--config", str(recipe), "--prompts", "4", "--k", "2"]
    assert main([*args, "--out-dir", str(tmp_path / "out"), "--progress", "false"]) == 0
    out = capsys.readouterr().out
    assert says in out, out
    result = json.loads((tmp_path / "out" / "diagnose" / "diagnosis.json").read_text())
    if reward == "short_pays":
        assert result["figures"]["shortcut_beats"]["value"] == 1.0
        assert result["shortcut"]["example"] == "" and result["shortcut"]["example_outcome"] > 0
    else:
        assert "shortcut_beats" not in result["figures"]
        assert "empty completion" in result["shortcut"]["error"]


def test_the_shortcut_probe_can_be_skipped(tmp_path, capsys):
    args = ["diagnose", "--task", "chain", "--prompts", "2", "--k", "2"]
    args += ["--max-completion-length", "8", "--shortcut-probe", "false", "--json", "true"]
    assert main([*args, "--out-dir", str(tmp_path), "--progress", "false"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "shortcut_beats" not in result["figures"] and result["shortcut"] == {}
    assert "seconds_shortcut_probe" not in result["costs"]
    assert "short answer" not in render_diagnosis(result)


def test_the_tensor_sums_use_the_trainers_split():
    """A token reward and a scalar one together, weighted: the outcome is the weighted sum of
    outcome parts, the local part the weighted w_s S_t (the trainer's TokenBatch)."""

    def scalar(prompts, completions, completion_ids, **kw):
        return [1.0] * len(completions)

    ro = rollouts([2, 2], k=2)
    spec = [(1.0, 0.5, None, True), (0.0, -0.5, None, False)]
    scored = score_rollouts(ro, [token_reward(spec), scalar], w_g=2.0, w_s=1.0, weights=[1.0, 0.5])
    assert torch.allclose(
        scored.outcome_B, torch.tensor([2.0 + 1.0, 0.0 + 1.0], dtype=torch.float64)
    )
    assert torch.allclose(
        scored.local_BT, torch.tensor([[0.5, 0.5], [-0.5, -0.5]], dtype=torch.float64)
    )


def test_diagnose_runs_on_a_users_own_task_and_model(tmp_path, capsys):
    """A task written against docs/tasks.md (tests/user_task.py) and a model of the user's
    (here the tiny random model): the same figures, and advice that says nothing is learned
    yet when nothing is solved."""
    args = [
        "diagnose",
        "--task",
        "tests.user_task:make_task",
        "--model",
        f"tiny:{tmp_path / 'm'}",
        "--prompts",
        "6",
        "--k",
        "2",
        "--max-completion-length",
        "6",
        "--out-dir",
        str(tmp_path / "out"),
        "--json",
        "true",
        "--progress",
        "false",
    ]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["k"] == 2 and result["prompts"] == 6
    assert set(result["figures"]) >= {"grpo_no_signal", "bot_no_signal", "local_share", "solved"}
    assert result["advice"]["try"] in ("warm start first", "fix the verifier first") or (
        result["figures"]["solved"]["value"] > 0
    )
    assert (tmp_path / "out" / "diagnose" / "diagnosis.json").is_file()


def test_a_model_folder_without_weights_is_one_line(tmp_path, capsys):
    from botgrpo.models import resolve_model_path

    weightless = tmp_path / "weightless"
    weightless.mkdir()
    warm = Path(resolve_model_path("warm:chain"))
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        if (warm / name).is_file():
            (weightless / name).write_bytes((warm / name).read_bytes())
    args = ["diagnose", "--task", "chain", "--model", str(weightless), "--prompts", "2"]
    assert main([*args, "--k", "2", "--progress", "false", "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be loaded" in err[0] and "weights included" in err[0], err
    assert not (tmp_path / "out").exists()


def test_a_task_of_one_problem_is_refused(tmp_path, capsys):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"prompt": "1 + 1 =", "answer": "2"}) + "\n")
    args = ["diagnose", "--task", f"jsonl:{path}", "--model", "warm:chain", "--k", "2"]
    assert main([*args, "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "only 1 problem(s) to diagnose" in err[0], err
