"""Step parsing: spans, texts, final answer and format verdict."""

from __future__ import annotations

import pytest

from botgrpo.rewards.steps import parse_steps


def _spans(parsed):
    return [(s.start, s.end) for s in parsed.steps]


def test_closed_tags():
    text = "<step 1> 2+2=4 </step 1>\n<step 2> 4*3=12 </step 2>\n<final>12</final>"
    p = parse_steps(text)
    # "<step 1> 2+2=4 </step 1>" is 24 characters; step 2 starts after the newline at 24.
    assert _spans(p) == [(0, 24), (25, 50)]
    assert [s.text for s in p.steps] == ["2+2=4", "4*3=12"]
    assert [s.number for s in p.steps] == [1, 2]
    assert p.final_text == "12" and text[p.final[0] : p.final[1]] == "12"
    assert (p.format, p.verdict, p.problems) == ("tags", "well_formed", ())


def test_steps_terminated_by_the_next_tag():
    text = "<step 1> a\n<step 2> b\n<final> 3"
    p = parse_steps(text)
    # Step 1 ends where <step 2> begins, without the newline; the final runs to the end.
    assert _spans(p) == [(0, 10), (11, 21)]
    assert [s.closed for s in p.steps] == [False, False]
    assert (p.final_text, p.verdict) == ("3", "well_formed")


def test_tag_spelling_variants():
    p = parse_steps("<Step_1>a</STEP_1><step2>b</step2><step>c</step><FINAL>x</FINAL>")
    assert [s.text for s in p.steps] == ["a", "b", "c"]
    assert p.verdict == "well_formed"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<step 1> a </step 2><final>1</final>", "closes <step 1>"),
        ("<step 1> a <step 2> b </step 1> <final>1</final>", "closes <step 2>"),
        ("<step 1> a <step 2> b </step 2> c </step 1><final>1</final>", "nested"),
        ("</step 1><final>1</final>", "stray '</step 1>'"),
        ("<step 1> a </step 1></final>", "stray '</final>'"),
        ("<step 1> a </step 1><final>1</final><final>2</final>", "duplicate <final>"),
        ("<step 1> a </step 1><final>1 <step 2> b </step 2></final>", "inside <final>"),
        ("<step 1> a </step 1><final>1</final><step 2> b </step 2>", "after <final>"),
        ("<step 2> a </step 2><final>1</final>", "not 1, 2, 3"),
        ("<step 1> a </step 1><step 3> b </step 3><final>1</final>", "not 1, 2, 3"),
        ("<step 1> a </step 1>", "no <final>"),
    ],
)
def test_malformed_tags_are_reported_not_raised(text, problem):
    p = parse_steps(text)
    assert p.verdict == "malformed"
    assert any(problem in msg for msg in p.problems), p.problems


def test_missing_final_can_be_allowed():
    assert parse_steps("<step 1> a </step 1>", require_final=False).verdict == "well_formed"


def test_no_tags_and_empty_text():
    for text in ("", "just prose, no steps", "<final>4</final>"):
        p = parse_steps(text)
        assert p.steps == () and p.verdict == "missing"
    assert parse_steps("<final>4</final>").final_text == "4"


def test_step_n_headers():
    text = "Step 1: 2+3=5\n**Step 2.** 5*2=10\n\nFinal answer: 10"
    p = parse_steps(text, "step_n")
    assert _spans(p) == [(0, 13), (14, 32)]
    assert [s.text for s in p.steps] == ["2+3=5", "5*2=10"]
    assert (p.final_text, p.verdict) == ("10", "well_formed")
    assert parse_steps("Step 1: a\nStep 3: b", "step_n").verdict == "malformed"


def test_one_step_per_line():
    text = "line one\n\n  line two  \nAnswer: 5"
    p = parse_steps(text, "lines")
    assert _spans(p) == [(0, 8), (12, 20)]
    assert [s.text for s in p.steps] == ["line one", "line two"]
    assert p.final_text == "5"


def test_auto_picks_the_layout():
    assert parse_steps("<step 1>a</step 1><final>1</final>", "auto").format == "tags"
    assert parse_steps("Step 1: a\nStep 2: b", "auto").format == "step_n"
    assert parse_steps("a\nb", "auto").format == "lines"


def test_unknown_format_is_named():
    with pytest.raises(ValueError, match=r"unknown step_format 'xml'; valid: tags, step_n"):
        parse_steps("x", "xml")  # type: ignore[arg-type]
