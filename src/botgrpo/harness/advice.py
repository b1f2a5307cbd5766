"""What a diagnosis means: its figures among the settings measured in docs/results, and what to
try, never with a number that was not measured.

The measured settings come from the map of where BoT pays (``where_bot_pays.json`` beside this
module, written by ``benchmarks/where_bot_pays.py`` from the stored comparisons and the same
step-0 figures :mod:`botgrpo.harness.diagnosis` measures). :func:`advise` finds the nearest
measured settings by those figures and applies the map's rule, whose thresholds are read from
the map (each clause names the settings behind it).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

#: The map's data, shipped with the package (``benchmarks/where_bot_pays.py`` writes it).
MAP_PATH = Path(__file__).with_name("where_bot_pays.json")

#: Figures that place a setting, and how far apart two settings are along each (a difference
#: of this much counts as 1).
DISTANCE_SCALES = {
    "grpo_no_signal": 0.15,
    "solved": 0.15,
    "outcome_credit": 0.15,
    "local_share": 0.05,
}

#: Below this share of the model's own steps judged right, the advice for BoT carries a caution:
#: the real model's BoT run (23% right) collapsed to writing fewer steps; every setting of the
#: map had most steps right (the tiny chain warm start: 81-84%). One seed: a caution, not a rule.
MOSTLY_WRONG = 0.5

#: From this share of the sampled rollouts scoring below a short answer made of a failed
#: attempt (the shortcut probe, :mod:`botgrpo.harness.shortcut`), the advice carries a caution.
#: On the long React pages 0.89 (0.82-0.95) did, below one line of JSX on its own (a
#: non-component snippet, -0.3, against -1 for a page that fails to compile), and a random-line
#: run and a BoT run at twice the chosen rate learned such snippets; on react and python at
#: their default settings 0.60 (0.54-0.66) and 0.59 (0.50-0.67) did, and none of react's 20
#: kept runs shortened its pages. Set between the two sides' intervals; one setting on the
#: side of the hole: a caution, not a rule.
SHORTCUT_PAYS = 0.8


#: Below this many prompts a diagnosis's advice says its figures are rough: the map's settings
#: were diagnosed on 64, whose intervals separate the sides of the rule.
FEW_PROMPTS = 16


def load_map(path: Path | None = None) -> dict:
    """The map's settings and rule; an empty map when none ships (advice then says so)."""
    path = path or MAP_PATH
    if not path.is_file():
        return {"settings": [], "rule": {}}
    return json.loads(path.read_text())


def _value(figures: dict, name: str) -> float | None:
    entry = figures.get(name)
    if isinstance(entry, dict):
        return entry.get("value")
    return entry


def nearest(
    figures: dict,
    settings: list[dict],
    n: int = 3,
    *,
    accuracy: float | None = None,
    w_s: float | None = None,
) -> list[dict]:
    """The ``n`` measured settings closest to ``figures`` (:data:`DISTANCE_SCALES`), each with
    its distance. Without a measured verdict accuracy only settings with exact verdicts are
    candidates (noise is a property of the verifier the figures cannot see); with one, it
    counts in the distance (0.1 apart = 1). Settings at the diagnosis's w_s first, where any."""
    pool = [s for s in settings if w_s is None or s.get("w_s") == w_s] or list(settings)
    if accuracy is None:
        pool = [s for s in pool if s["predictors"].get("verdict_accuracy") == 1.0] or pool
    scored = []
    for s in pool:
        parts = []
        for name, scale in DISTANCE_SCALES.items():
            mine, theirs = _value(figures, name), _value(s["predictors"], name)
            if mine is not None and theirs is not None:
                parts.append(((mine - theirs) / scale) ** 2)
        theirs = s["predictors"].get("verdict_accuracy")
        if accuracy is not None and theirs is not None:
            parts.append(((accuracy - theirs) / 0.1) ** 2)
        if parts:
            scored.append({**s, "distance": math.sqrt(sum(parts) / len(parts))})
    return sorted(scored, key=lambda s: s["distance"])[:n]


def _votes(rule: dict, no_signal: float, solved: float, credit: float | None) -> dict[str, str]:
    """What each step-0 figure the map found separating says: ``pays``, ``ties`` or ``between``
    (a map without ``separating`` predates the solve-rate clause: the silent share alone; a
    diagnosis without the outcome credit, stored before it was measured, gets no vote on it)."""
    votes = {}
    for name in rule.get("separating", ["grpo_no_signal"]):
        if name == "grpo_no_signal":
            pays = no_signal >= rule.get("pays_from_no_signal", 0.4)
            ties = no_signal <= rule.get("ties_below_no_signal", 0.15)
        elif name == "solved":
            pays = solved <= rule["pays_up_to_solved"]
            ties = solved >= rule["ties_from_solved"]
        elif name == "outcome_credit" and credit is not None:
            pays = credit <= rule["pays_up_to_credit"]
            ties = credit >= rule["ties_from_credit"]
        else:
            continue
        votes[name] = "pays" if pays else "ties" if ties else "between"
    return votes


def _pays_or_ties(
    rule: dict,
    no_signal: float,
    solved: float,
    share: float,
    bot_none: float,
    credit: float | None = None,
) -> tuple[str, str]:
    """bot / grpo or dapo / in between, from the figures that separated the measured settings
    where BoT paid from those where it tied, and why."""
    votes = _votes(rule, no_signal, solved, credit)
    credit = 0.0 if credit is None else credit
    said = {
        ("grpo_no_signal", "pays"): f"{no_signal:.0%} of GRPO's groups carry no signal at step 0",
        ("solved", "pays"): f"{solved:.0%} of rollouts solve their problem at step 0",
        ("grpo_no_signal", "ties"): f"GRPO already has a signal in {1 - no_signal:.0%} of its "
        "groups",
        ("solved", "ties"): f"{solved:.0%} of rollouts already solve their problem",
        ("outcome_credit", "pays"): f"only {credit:.0%} of rollouts earn any outcome credit at "
        "step 0 (score above a typical failed attempt)",
        ("outcome_credit", "ties"): f"{credit:.0%} of rollouts already earn outcome credit "
        "(score above a typical failed attempt)",
    }
    pays = [said[n, v] for n, v in votes.items() if v == "pays"]
    ties = [said[n, v] for n, v in votes.items() if v == "ties"]
    if (
        pays
        and not ties
        and share >= rule.get("pays_from_local_share", 0.05)
        and bot_none < no_signal
    ):
        return "bot", (
            " and ".join(pays) + f", while BoT's local signal ({share:.0%} of its reward) still "
            "ranks rollouts there: where that held, BoT reached the half-way level sooner ("
            + ", ".join(rule.get("pays_basis", []))
            + ")"
        )
    if ties and not pays:
        gain = rule.get("ties_gain_up_to", 0.0)
        over_run = (
            f", and over the run at most a small gain (the most any of those settings kept: "
            f"{gain:+.3f} on the lead rate, averaged over the run)"
            if gain > 0
            else ""
        )
        return "grpo or dapo (bot ties)", (
            " and ".join(ties)
            + ": there BoT and GRPO learned at the same speed ("
            + ", ".join(rule.get("ties_basis", []))
            + "); BoT costs nothing extra, but expect no speedup"
            + over_run
        )
    return "bot (a smaller gain likely)", _why_between(
        rule,
        votes,
        said,
        no_signal=no_signal,
        solved=solved,
        share=share,
        bot_none=bot_none,
        credit=credit,
    )


def _why_between(
    rule: dict,
    votes: dict[str, str],
    said: dict[tuple[str, str], str],
    *,
    no_signal: float,
    solved: float,
    share: float,
    bot_none: float,
    credit: float = 0.0,
) -> str:
    """Why a diagnosis sits between the settings where BoT paid and where it tied: the figures
    that disagree, what held back a figure that says BoT pays, or the separating figures that
    lie between the two thresholds."""
    pays = " and ".join(said[n, v] for n, v in votes.items() if v == "pays")
    ties = " and ".join(said[n, v] for n, v in votes.items() if v == "ties")
    if pays and ties:
        clause = f"{pays} (as where BoT led), but {ties} (as where it tied)"
    elif pays and no_signal == 0.0:
        clause = (
            f"{pays} (as where BoT led), but GRPO already has a signal in every group, so BoT's "
            "local signal ranks no group that GRPO cannot (a lead would come only from ranking "
            "rollouts within groups that already have a signal)"
        )
    elif pays and bot_none >= no_signal:
        clause = (
            f"{pays} (as where BoT led), but BoT's local signal leaves {bot_none:.0%} of its "
            f"groups silent, no fewer than GRPO's {no_signal:.0%}"
        )
    elif pays:
        clause = (
            f"{pays} (as where BoT led), but BoT's local signal is {share:.1%} of its reward, "
            "quieter than in every setting where it paid (from "
            f"{rule.get('pays_from_local_share', 0.05):.1%})"
        )
    elif not rule.get("separating"):
        return (
            f"{no_signal:.0%} of GRPO's groups carry no signal and {solved:.0%} of rollouts "
            "solve their problem, but on the map no step-0 figure separates the settings "
            "where BoT led from those where it tied (docs/results/where-bot-pays.md, rules 1-3); "
            "measured settings nearby are listed below, and a short comparison on your task "
            "settles it"
        )
    elif any(v == "between" for v in votes.values()):
        ranges = {
            "grpo_no_signal": (
                f"{no_signal:.0%} of GRPO's groups carry no signal at step 0",
                f"BoT tied (up to {rule.get('ties_below_no_signal', 0.15):.0%})",
                f"it paid (from {rule.get('pays_from_no_signal', 0.4):.0%})",
            ),
            "solved": (
                f"{solved:.0%} of rollouts solve their problem at step 0",
                f"BoT paid (up to {rule.get('pays_up_to_solved', 0.0):.0%})",
                f"it tied (from {rule.get('ties_from_solved', 1.0):.0%})",
            ),
            "outcome_credit": (
                f"{credit:.0%} of rollouts earn outcome credit at step 0 (score above a typical "
                "failed attempt)",
                f"BoT paid (up to {rule.get('pays_up_to_credit', 0.0):.0%})",
                f"it tied (from {rule.get('ties_from_credit', 1.0):.0%})",
            ),
        }
        return (
            " and ".join(
                f"{text}: between the settings where {one} and those where {other}"
                for name, (text, one, other) in ranges.items()
                if votes.get(name) == "between"
            )
            + "; measured settings nearby are listed below"
        )
    else:
        clause = (
            f"{no_signal:.0%} of GRPO's groups carry no signal and {solved:.0%} of rollouts "
            "solve their problem"
        )
    return (
        clause + ": between the settings where BoT tied and where it led; measured settings "
        "nearby are listed below"
    )


#: The share of rollouts cut at the length limit from which the advice leads with a caution.
MANY_CUT = 0.25


def advise(result: dict, data: dict | None = None) -> dict:
    """The recommendation for a diagnosis: what to try, why, and the nearest measured settings
    with their speedups and intervals."""
    data = data if data is not None else load_map()
    figures = dict(result["figures"])
    verdicts = result.get("verdicts", {})
    rule = data.get("rule", {})
    close = nearest(
        figures,
        data.get("settings", []),
        accuracy=verdicts.get("verdict_accuracy"),
        w_s=result.get("w_s"),
    )
    why: list[str] = []
    no_signal = _value(figures, "grpo_no_signal") or 0.0
    bot_none = _value(figures, "bot_no_signal") or 0.0
    share = _value(figures, "local_share") or 0.0
    solved = _value(figures, "solved") or 0.0
    credit = _value(figures, "outcome_credit")
    accuracy = verdicts.get("verdict_accuracy")
    false_alarm = verdicts.get("false_alarm")
    flags_right = verdicts.get("flags_right")
    if not data.get("settings"):
        return {
            "try": "unknown",
            "why": ["no map of measured settings ships with this install"],
            "nearest": [],
        }
    right_steps = verdicts.get("right_in_failed")
    if solved == 0.0 and (share == 0.0 or right_steps is None or right_steps < 0.1):
        choice = "warm start first"
        if right_steps is None:
            judged = "the reward returned no step verdicts to tell right steps by"
        elif right_steps < 0.1:
            judged = "almost no step is judged right"
        else:
            judged = "the local signal is zero on every token"
        why.append(
            f"no rollout solved its problem and {judged}: neither method has behaviour to "
            "reinforce (RL re-weights what the model already does: see docs/tasks.md on warm "
            "starts)"
        )
    elif (accuracy is not None and accuracy < rule.get("min_accuracy", 0.8)) or (
        false_alarm is not None and false_alarm > rule.get("max_false_alarm", 0.1)
    ):
        choice = "fix the verifier first"
        right = "an unknown share" if accuracy is None else f"{accuracy:.0%}"
        alarms = "an unknown share of" if false_alarm is None else f"{false_alarm:.0%}"
        why.append(
            f"the verdicts are right {right} of the time with {alarms} "
            f"false alarms; BoT kept its lead down to {rule.get('min_accuracy', 0.8):.0%} "
            "right and lost it to false alarms (" + ", ".join(rule.get("accuracy_basis", [])) + ")"
        )
    elif (
        flags_right is not None
        and "min_flags_right" in rule
        and flags_right < rule["min_flags_right"]
    ):
        choice = "fix the verifier first"
        why.append(
            f"only {flags_right:.0%} of the steps judged wrong are wrong; BoT kept its lead "
            f"only where at least {rule['min_flags_right']:.0%} were (settings with noisy "
            "verdicts, their share and lead over the run: "
            + ", ".join(rule.get("flags_right_basis", []))
            + "): on long completions a few misplaced flags outnumber the right ones while the "
            "verdicts' accuracy, carried by the many right lines, stays high"
        )
    elif (
        accuracy is not None
        and accuracy <= rule.get("noisy_w_s_up_to", 0.0)
        and "noisy_w_s" in rule
        and result.get("w_s") not in (None, rule["noisy_w_s"])
    ):
        choice = f"bot at w_s {rule['noisy_w_s']:g}"
        why.append(
            f"with verdicts right {accuracy:.0%} of the time, only w_s {rule['noisy_w_s']:g} kept "
            "BoT's lead over the run; other weights did not ("
            + ", ".join(rule.get("noisy_w_s_basis", []))
            + ")"
        )
    else:
        choice, reason = _pays_or_ties(rule, no_signal, solved, share, bot_none, credit)
        why.append(reason)
    steps_right = verdicts.get("steps_right")
    if steps_right is not None and steps_right < MOSTLY_WRONG and choice != "warm start first":
        why.append(
            f"only {steps_right:.0%} of the steps the model writes are judged right: BoT's local "
            "signal penalises most of what it writes, and on the real model (one seed, "
            "docs/results/real-model.md) it learned to write fewer steps; watch the completion "
            "length, or warm start further / lower w_s first"
        )
    beats = _value(figures, "shortcut_beats")
    if beats is not None and beats >= SHORTCUT_PAYS:
        kind = result.get("shortcut", {}).get("cut") or "made of a failed attempt"
        why.append(
            f"a short answer ({kind}) scores above {beats:.0%} of the sampled rollouts: it "
            "pays more than most of the model's attempts, and a policy can learn to write it "
            "(docs/results/code-regime.md); score such an answer no higher than a failed "
            "attempt, or watch the completion length"
        )
    cut = (result.get("lengths") or {}).get("truncated")
    if isinstance(cut, int | float) and cut >= MANY_CUT:
        why.insert(
            0,
            f"{cut:.0%} of the rollouts were cut at the length limit before they ended: the "
            "figures describe cut-off attempts, not what the model writes; raise "
            "--max-completion-length (or the recipe's max_completion_length) and diagnose again",
        )
    prompts = result.get("prompts")
    if isinstance(prompts, int) and prompts < FEW_PROMPTS:
        why.append(
            f"only {prompts} prompts were sampled: each figure rests on {prompts} groups, its "
            "interval is rough or collapses to one value, and the advice can change with more; "
            "the map's settings were diagnosed on 64 (--prompts 64)"
        )
    if verdicts.get("wrong_in_solved") and verdicts["wrong_in_solved"] > 0.2:
        why.append(
            f"{verdicts['wrong_in_solved']:.0%} of the steps in solved rollouts are judged "
            "wrong: check the verifier against labelled steps"
        )
    return {
        "try": choice,
        "why": why,
        "nearest": [
            {k: s[k] for k in ("id", "label", "page", "speedup", "auc_diff", "distance")}
            for s in close
        ],
    }


def _interval(entry: dict | None, fmt: str = ".2f", suffix: str = "") -> str:
    if not entry or entry.get("value", entry.get("ratio", entry.get("mean"))) is None:
        return "n/a"
    value = entry.get("value", entry.get("ratio", entry.get("mean")))
    if entry.get("low") is None:
        return f"{value:{fmt}}{suffix}"
    return f"{value:{fmt}}{suffix} ({entry['low']:{fmt}} to {entry['high']:{fmt}})"


def _sentence(text: str) -> str:
    """A reason of the advice as a sentence of the report."""
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def _flags_note(result: dict) -> list[str]:
    """Where the sampled flags are, and (with no reference verdicts) how to check them."""
    sample = result.get("flag_sample")
    if not sample or result.get("exact_verdicts"):
        if sample and sample.get("sampled"):
            return [
                "",
                "The verdicts are the built-in task's own, exact by construction; "
                f"{sample['sampled']} of its {sample['of']} flagged steps are in flags.jsonl, "
                "for reading.",
            ]
        return []
    if not sample.get("sampled"):
        if not sample.get("of"):
            return [
                "",
                "The reward flagged no step (no raw verdict of -1 and no negative local "
                "value): no flags to check.",
            ]
        return []  # --flag-sample 0
    n, of = sample["sampled"], sample["of"]
    kind = str(sample.get("kind", ""))
    unit = (
        " (read off the token values: each line's run of penalised tokens; return "
        'TokenReward(steps=...) or info["verdict_spans"] beside info["raw_verdicts"] for '
        "step flags)"
        if kind == "line run"
        else ""
    )
    if "did not hold one range" in kind:  # the user's spans and verdicts disagree in number
        unit = (
            f" ({kind.split('(', 1)[1].rstrip(')')}: give one (start, end) in "
            'info["verdict_spans"] per verdict in info["raw_verdicts"])'
        )
    if result["verdicts"].get("flags_right") is not None:
        return [
            "",
            f"{n} of the {of} flagged steps{unit} are in flags.jsonl, each with the "
            "reference's verdict (`reference_wrong`) where it judged the same steps.",
        ]
    threshold = load_map()["rule"].get("min_flags_right")
    where = (
        f": BoT lost its lead on the map wherever under {threshold:.0%} of the flags were on "
        "wrong steps, and the advice above assumes they are precise enough"
        if threshold is not None
        else ""
    )
    return [
        "",
        f"The verdicts were not checked against a reference: {n} of the {of} flagged "
        f"steps{unit} are in flags.jsonl. Mark them by hand and run `botgrpo check-flags` on "
        f"this folder for the flags' precision{where}.",
    ]


def render_diagnosis(result: dict) -> str:
    """The diagnosis in words and a table, as the command prints it."""
    f, v, c = result["figures"], result["verdicts"], result["costs"]
    advice = result.get("advice", {})
    lines = [
        f"# Diagnosis: {result['label']}",
        "",
        f"Model {result['model']}; {result['prompts']} prompts x {result['k']} rollouts at "
        f"temperature {result['temperature']:g}; w_g {result['w_g']:g}, w_s {result['w_s']:g}.",
        "",
        f"**Try: {advice.get('try', 'n/a')}.** " + " ".join(map(_sentence, advice.get("why", []))),
        "",
        "| figure (95% interval over prompts) | value |",
        "|---|---|",
        f"| GRPO groups with no signal | {_interval(f['grpo_no_signal'])} |",
        f"| BoT groups with no signal | {_interval(f['bot_no_signal'])} |",
        f"| local signal's share of BoT's reward | {_interval(f['local_share'], '.3f')} |",
        f"| local signal's spread in a group (sd of w_s S_t) | {_interval(f['local_spread'], '.3f')} |",
    ]
    if "return_local_share" in f:  # diagnoses stored before it was measured lack it
        lines.append(
            "| local signal's share of the first token's return (otb, reinforce_pp, ppo) | "
            f"{_interval(f['return_local_share'], '.3f')} |"
        )
    shortcut = result.get("shortcut") or {}
    if "shortcut_beats" in f:  # diagnoses stored before the probe lack it
        best = f" (most often best: {shortcut['cut']})" if shortcut.get("cut") else ""
        lines.append(
            f"| rollouts scoring below a short answer of the model's own text{best} | "
            f"{_interval(f['shortcut_beats'])} |"
        )
    elif shortcut.get("error"):
        lines.append(f"| rollouts scoring below a short answer | n/a: {shortcut['error']} |")
    lines.append(f"| solved | {_interval(f['solved'])} |")
    if "outcome_credit" in f:  # diagnoses stored before it was measured lack it
        floor = result.get("failure_outcome")
        above = "" if floor is None else f", {floor:+.2f}"
        lines.append(
            f"| rollouts earning outcome credit (above the typical failure's outcome{above}) | "
            f"{_interval(f['outcome_credit'])} |"
        )
    lines += [
        f"| tokens per completion (mean, p90) | {result['lengths']['mean_tokens']:.0f}, "
        f"{result['lengths']['p90_tokens']:.0f} |",
        f"| truncated at the length limit | {result['lengths']['truncated']:.2f} |",
    ]
    for key, label in (
        ("wrong_in_solved", "steps judged wrong in solved rollouts"),
        ("right_in_failed", "steps judged right in failed rollouts"),
        ("steps_right", "steps judged right, all rollouts"),
        ("false_alarm", "false alarms (right steps judged wrong, vs the reference)"),
        ("miss", "misses (wrong steps judged right, vs the reference)"),
        ("flags_right", "steps judged wrong that are wrong (the flags' precision)"),
        ("verdict_accuracy", "verdicts right (vs the reference)"),
    ):
        if v.get(key) is not None:
            lines.append(f"| {label} | {v[key]:.3f} |")
    calls = ", ".join(f"{s:.2f}" for s in c["seconds_per_scoring_call"])
    probe = (
        f" (shortcut probe: {c['seconds_shortcut_probe']:.2f})"
        if "seconds_shortcut_probe" in c
        else ""
    )
    lines.append(
        f"| seconds per rollout / per scoring call | {c['seconds_per_rollout']:.3f} / "
        f"{calls}{probe} |"
    )
    lines.append(f"| peak memory of this process | {c['peak_rss_gib']:.2f} GiB |")
    if "bot_state_gib" in c:
        lines.append(
            f"| training state, BoT vs PPO with a critic (bf16, AdamW) | "
            f"{c['bot_state_gib']:.2f} vs {c['ppo_state_gib']:.2f} GiB |"
        )
    lines += _flags_note(result)
    beats = _value(f, "shortcut_beats")
    if beats is not None and beats >= SHORTCUT_PAYS and "example" in shortcut:
        lines += [
            "",
            "The short answer that leads its prompt's rollouts by the most (outcome part "
            f"{shortcut['example_outcome']:+.2f}; those rollouts' mean "
            f"{shortcut['example_rollouts_outcome']:+.2f}):",
            "",
            *(
                ["~~~~", shortcut["example"], "~~~~"]
                if shortcut["example"]
                else ["(the empty answer)"]
            ),
        ]
    if advice.get("nearest"):
        lines += [
            "",
            "Nearest measured settings (docs/results):",
            "",
            "| setting | BoT vs GRPO, steps to half-way | AUC difference | page |",
            "|---|---|---|---|",
        ]
        for s in advice["nearest"]:
            speed = _interval(s["speedup"], ".2f", "x")
            lines.append(
                f"| {s['label']} | {speed} | {_interval(s['auc_diff'], '+.3f')} | {s['page']} |"
            )
    return "\n".join(lines) + "\n"


def plot_diagnosis(result: dict, path: Path, data: dict | None = None) -> None:
    """The user's figures (a star, with intervals) among the measured settings, coloured by
    BoT's speedup over GRPO: the share of rollouts earning outcome credit (the figure the map's
    rule reads) across, where the diagnosis has it, else GRPO's silent groups; the local share
    up."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = data if data is not None else load_map()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    settings = data.get("settings", [])
    f = result["figures"]
    across = "outcome_credit" if "outcome_credit" in f else "grpo_no_signal"
    xs = [_value(s["predictors"], across) for s in settings]
    ys = [_value(s["predictors"], "local_share") for s in settings]
    cs = [s["speedup"]["ratio"] if s["speedup"] else 1.0 for s in settings]
    keep = [
        i for i, (x, y) in enumerate(zip(xs, ys, strict=True)) if x is not None and y is not None
    ]
    if keep:
        points = ax.scatter(
            [xs[i] for i in keep],
            [ys[i] for i in keep],
            c=[cs[i] for i in keep],
            cmap="coolwarm",
            vmin=0.6,
            vmax=1.8,
            s=60,
        )
        fig.colorbar(points, ax=ax, label="BoT vs GRPO, steps to half-way (x)")
        for i in keep:
            ax.annotate(
                settings[i]["id"],
                (xs[i], ys[i]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    x, y = f[across], f["local_share"]
    ax.errorbar(
        x["value"],
        y["value"],
        xerr=[[max(0.0, x["value"] - x["low"])], [max(0.0, x["high"] - x["value"])]],
        yerr=[[max(0.0, y["value"] - y["low"])], [max(0.0, y["high"] - y["value"])]],
        fmt="*",
        color="k",
        markersize=14,
        capsize=4,
        label=f"this diagnosis: {result['label']}",
    )
    ax.set(
        xlabel=(
            "share of rollouts earning outcome credit at step 0 (above a typical failure)"
            if across == "outcome_credit"
            else "share of GRPO's groups with no signal at step 0"
        ),
        ylabel="local signal's share of BoT's token reward",
        title="Where your task sits among the measured settings",
    )
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
