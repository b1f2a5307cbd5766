"""The map's tables in Markdown, written between the page's markers (the prose around them is
kept)."""

from __future__ import annotations

from pathlib import Path


def _bound(x: float, fmt: str) -> str:
    """An interval's end; one that rounds to zero without being zero gets a digit more, so the
    side of zero it lies on shows (+0.0002, not +0.000)."""
    text = f"{x:{fmt}}"
    if x != 0 and float(text) == 0 and ".3f" in fmt:
        text = f"{x:{fmt.replace('.3f', '.4f')}}"
    return text


def _iv(entry, fmt=".2f", suffix="") -> str:
    if entry is None:
        return "n/a"
    value = entry.get("value", entry.get("ratio", entry.get("mean")))
    if value is None:
        return "n/a"
    text = f"{value:{fmt}}{suffix}"
    if entry.get("low") is not None:
        text += f" ({_bound(entry['low'], fmt)}-{_bound(entry['high'], fmt)})"
    return text


def render_map(data: dict) -> str:
    """The map's table (the page's prose is written around it in docs/results)."""
    lines = [
        "| setting | BoT vs GRPO, steps to half-way | AUC difference | GRPO groups without "
        "signal at step 0 | local share of BoT's reward | solved at step 0 | earning outcome "
        "credit at step 0 | tokens | verdicts right | flagged steps wrong | page |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(data["settings"], key=lambda r: -r["predictors"]["grpo_no_signal"]["value"]):
        p = r["predictors"]
        speed = _iv(r["speedup"], ".2f", "x")
        if r["speedup"].get("censoring"):
            speed += " *"
        acc = "n/a" if p["verdict_accuracy"] is None else f"{p['verdict_accuracy']:.2f}"
        flags = "n/a" if p.get("flags_right") is None else f"{p['flags_right']:.2f}"
        lines.append(
            f"| {r['label']} | {speed} | {_iv(r['auc_diff'], '+.3f')} | "
            f"{_iv(p['grpo_no_signal'])} | {_iv(p['local_share'], '.3f')} | "
            f"{_iv(p['solved'])} | {_iv(p.get('outcome_credit'))} | {p['mean_tokens']:.0f} | "
            f"{acc} | {flags} | [{r['page']}]({r['page']}) |"
        )
    lines.append("")
    lines.append("\\* censored: some runs never reached the level (see the page).")
    lines.append("")
    lines += render_rule(data["rule"])
    lines += [
        "",
        "Diagnose at step 0 against the first training step of the kept runs:",
        "",
        "| setting | GRPO groups without signal: diagnose / recorded | local share: "
        "diagnose / recorded | runs |",
        "|---|---|---|---|",
    ]
    for r in data["settings"]:
        rec = r.get("recorded_first_step")
        if not rec:
            continue
        p = r["predictors"]
        z = "n/a" if rec["grpo_no_signal"] is None else f"{rec['grpo_no_signal']:.3f}"
        sh = "n/a" if rec["local_share"] is None else f"{rec['local_share']:.3f}"
        lines.append(
            f"| {r['label']} | {_iv(p['grpo_no_signal'], '.3f')} / {z} | "
            f"{_iv(p['local_share'], '.3f')} / {sh} | {rec['runs']} |"
        )
    checks = data.get("advice_check", [])
    if checks:
        agree = sum(c["agrees"] for c in checks)
        wrong = [c["id"] for c in checks if not c["agrees"]]
        lines += [
            "",
            f"diagnose's advice on each setting's own step-0 figures against what its "
            f"comparison measured (ahead / level / behind: an interval of the speedup or "
            f"the AUC difference above, around or below no difference): {agree} of "
            f"{len(checks)} agree. The rule's thresholds are read from these same settings, so "
            "agreement is a consistency check, not a test on new settings"
            + (
                f"; where it disagrees ({', '.join(wrong)}) the rule does not describe the setting."
                if wrong
                else "."
            ),
            "",
            "| setting | advice | measured | agrees |",
            "|---|---|---|---|",
        ]
        for c in checks:
            lines.append(
                f"| {c['id']} | {c['advice']} | {c['measured']} | {'yes' if c['agrees'] else '**no**'} |"
            )
    return "\n".join(lines) + "\n"


#: Each threshold of the rule: what it says, how it is read from the table.
RULE_ROWS = (
    (
        "pays_from_no_signal",
        "BoT paid from this share of silent GRPO groups up",
        "pays_basis",
        "the lowest silent share among the exact-verdict settings whose speedup interval lies "
        "above 1",
    ),
    (
        "ties_below_no_signal",
        "BoT tied up to this share of silent groups",
        "ties_basis",
        "the highest silent share among the exact-verdict settings whose interval includes 1",
    ),
    (
        "ties_gain_up_to",
        "where BoT tied on speed, the most it still gained over the run (AUC difference)",
        "ties_gain_basis",
        "the highest AUC difference among the exact-verdict settings whose speedup interval "
        "includes 1",
    ),
    (
        "pays_up_to_solved",
        "BoT paid up to this starting solve rate",
        "pays_basis",
        "the highest solve rate among those that paid",
    ),
    (
        "ties_from_solved",
        "BoT tied from this starting solve rate up",
        "ties_basis",
        "the lowest solve rate among those that tied",
    ),
    (
        "pays_up_to_credit",
        "BoT paid up to this share of rollouts earning outcome credit",
        "pays_basis",
        "the highest share among those that paid",
    ),
    (
        "ties_from_credit",
        "BoT tied from this share of rollouts earning outcome credit up",
        "ties_basis",
        "the lowest share among those that tied",
    ),
    (
        "pays_from_local_share",
        "the quietest local signal that still paid",
        "local_share_basis",
        "the lowest local share among all settings (any verdicts) whose interval lies above 1",
    ),
    (
        "min_accuracy",
        "verdicts right at least this often kept BoT's lead over the run",
        "accuracy_basis",
        "the lowest accuracy among the flipped-verdict settings whose AUC "
        "difference stayed above 0",
    ),
    (
        "max_false_alarm",
        "right steps judged wrong, at most this share, kept the lead",
        "accuracy_basis",
        "the most false alarms among those settings",
    ),
    (
        "min_flags_right",
        "of the steps judged wrong, at least this share wrong kept the lead",
        "flags_right_basis",
        "the lowest flags' precision among the settings with noisy verdicts (w_s 0.5) whose AUC "
        "difference stayed above 0; every setting that lost it lies below",
    ),
    (
        "noisy_w_s",
        "with verdicts as noisy as this (right this often), the only weight that kept the lead",
        "noisy_w_s_basis",
        "w_s 0.1, 0.5 and 1 at 20% flipped verdicts",
    ),
)


#: The step-0 figure each pays/ties threshold reads (the advice uses it only while separating).
FIGURE_OF = {
    "pays_from_no_signal": "grpo_no_signal",
    "ties_below_no_signal": "grpo_no_signal",
    "pays_up_to_solved": "solved",
    "ties_from_solved": "solved",
    "pays_up_to_credit": "outcome_credit",
    "ties_from_credit": "outcome_credit",
}

#: Each step-0 figure's name in the page's prose.
FIGURE_NAMES = {
    "grpo_no_signal": "silent share",
    "solved": "solve rate",
    "outcome_credit": "outcome credit",
}


def render_rule(rule: dict) -> list[str]:
    """The rule's thresholds as a table: the value, what it says, how it is read, the basis."""
    lines = [
        "",
        "The rule's thresholds, read from the table above:",
        "",
        "| threshold | value | what it says | how it is read | settings |",
        "|---|---|---|---|---|",
    ]
    for key, says, basis, how in RULE_ROWS:
        if key not in rule:
            continue
        value = f"{rule[key]:g}"
        figure = FIGURE_OF.get(key)
        if figure and "separating" in rule and figure not in rule["separating"]:
            value += " (left out: overlaps)"
        if key == "noisy_w_s" and "noisy_w_s_up_to" in rule:
            value += f" (right {rule['noisy_w_s_up_to']:.0%})"
        lines.append(f"| `{key}` | {value} | {says} | {how} | {', '.join(rule.get(basis, []))} |")
    if "separating" in rule:
        names = FIGURE_NAMES
        used = ", ".join(names.get(n, n) for n in rule["separating"]) or "none"
        lines.append("")
        lines.append(
            f"Figures that separate the settings that paid from those that tied (the advice "
            f"reads these): {used}."
        )
        for name, basis in rule.get("overlap_basis", {}).items():
            lines.append(
                f"Left out, its ranges overlap: {names.get(name, name)} ({', '.join(basis)})."
            )
    if "flags_right_overlap" in rule:
        lines.append("")
        lines.append(
            "Not read, its ranges overlap: the flags' precision (settings with noisy verdicts: "
            + ", ".join(rule["flags_right_overlap"])
            + ")."
        )
    return lines


BEGIN, END = "<!-- map: written by benchmarks/where_bot_pays.py -->", "<!-- end of map -->"


def write_between_markers(path: Path, table: str) -> None:
    """Put ``table`` between the page's markers, keeping the prose around it (the whole page
    when it has none yet)."""
    text = path.read_text() if path.is_file() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = f"{head}{BEGIN}\n{table}{END}{tail}"
    else:
        text = f"{BEGIN}\n{table}{END}\n"
    path.write_text(text)
