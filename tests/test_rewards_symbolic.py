"""The symbolic step verifier and the final-answer check."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from botgrpo.rewards.verifiers.answers import AnswerConfig, check_answer
from botgrpo.rewards.verifiers.symbolic import (
    SymbolicConfig,
    SymbolicStepVerifier,
    check_step,
    evaluate_arithmetic,
)


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("12 × 3 = 36, so the total is 36 + 4 = 40.", 1),
        ("Then 7 * 8 = 54.", -1),
        ("We add the two numbers.", 0),
        ("3 x 4 = 12 and 3x4=12", 1),
        ("6 ÷ 4 = 1.5 and 6 · 2 = 12 and 2 − 5 = −3", 1),
        ("2^10 = 1024, 2**3 = 8, 3² + 4² = 5²", 1),
        ("1,234 + 1 = 1,235", 1),
        (r"$\frac{3}{4} \times 8 = 6$", 1),
        (r"\left(1 + 2\right) \cdot 3 = 9", 1),
        ("√16 = 4 and \\sqrt{81} = 9", 1),
        ("50% = 0.5", 1),
        ("x = 12 - 5 = 7", 1),  # x = 12 - 5 is an equation (not checked); 12 - 5 = 7 holds
        ("2 + 3 = 6 = 6", -1),  # the first link of the chain is false
        ("x + x = 2x and (x+1)^2 = x^2 + 2x + 1", 1),
        ("2(x+1) = 2x + 1", -1),  # differs by a constant: false for every x
        ("2x = 10", 0),  # an equation, not an identity
        ("1/3 = 0.33, 2/3 = 0.67, 22/7 = 3.14", 1),  # rounded decimals are accepted
        ("22/7 = 3.15", -1),
        ("0.1 + 0.2 = 0.3", 1),  # exact decimals, no float error
        ("-3 + 5 = 2 and 3 - -2 = 5", 1),
        ("[3 + 4] * 2 = 14 and {2}(3) = 6", 1),
        ("so 3*4 = 12 (because 12 is a dozen)", 1),
    ],
)
def test_step_verdicts(text, verdict):
    assert check_step(text).verdict == verdict


@pytest.mark.parametrize(
    "text",
    [
        "25% of 80 = 20",  # "of" joins 25% to the claim: not parsed, not judged false
        "3 times 4 = 12",
        "5 cm + 3 cm = 8 cm",
        "3cm + 4 = 7",
        "sin(30) = 0.5",
        "f(2) = 5",
        "1 000 = 1000",  # space as thousands separator: not read as "000 = 1000"
        "5/0 = 1",
        "22/7 ≈ 3.14",
        "a <= 3 and b >= 4 and c != 5",
        "3 + 4 = 7apples",
        r"\sqrt{2} = 1.41",  # irrational: not decided
        "3:4 = 0.75",  # a ratio, not the claim 4 = 0.75
        "12:30 - 5 = 7",  # a time
        "the ratio 3:-2 = 5",
        "5! - 3 = 117",  # factorial: the sign after "!" continues the phrase
        "c: *3 = 3",
    ],
)
def test_unclear_claims_are_not_judged(text):
    assert check_step(text).verdict == 0


@pytest.mark.parametrize(
    "text",
    [
        "9**9**9 = 1",
        "2**100000 = 3",
        "9^9^9^9 = 2",
        "1" * 5000 + " = 1",
        "(" * 200 + "1" + ")" * 200 + " = 1",
        "x^1000 = x",
        "10^(10^10) = 0",
        "(a+b+c+d+e+f+g+h)^12 = 1",  # too many symbols: the expansion has 50k terms
        "((a+b+c+d)^12)^12 = 1",  # total degree 144
        "(x+1)(x+1)(x+1)(x+1)(x+1)(x+1)(x+1)(x+1)(x+1)(x+1)(x+1)(x+1)(x+1) = 0",
    ],
)
def test_pathological_input_is_refused(text):
    # Refused without evaluating: these would take hours or exhaust memory.
    assert check_step(text).verdict == 0


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("c:-6-2=-8", 1),
        ("x: -3+1=-2", 1),
        ("c:-6-2=-9", -1),
        ("Step 1:-6-2=-8", 1),
        ("Step 2: -3 + 1 = -2", 1),
        ("1. -6 - 2 = -8", 1),
        ("1) -6-2=-8", 1),
        ("b) -6*2=-12", 1),
        ("total; -(2+3) = -5", 1),
        ("so a = 5, -5 + 2 = -3", 1),
        ("c: +3-1=2", 1),
    ],
)
def test_labelled_steps_with_signed_numbers(text, verdict):
    assert check_step(text).verdict == verdict


LABELS = ["c:", "x:", "total:", "Step 3:", "step 12:", "Line 2:", "4.", "4)", "b)", "c;"]


@settings(max_examples=200, deadline=None)
@given(
    label=st.sampled_from(LABELS),
    space=st.booleans(),
    a=st.integers(-99, 99),
    b=st.integers(-99, 99),
    op=st.sampled_from(["+", "-", "*"]),
    error=st.integers(-3, 3),
    spaced=st.booleans(),
)
def test_a_label_never_changes_the_verdict(label, space, a, b, op, error, spaced):
    value = a + b if op == "+" else a - b if op == "-" else a * b
    gap = " " if spaced else ""
    claim = f"{a}{gap}{op}{gap}{b}{gap}={gap}{value + error}"
    sep = " " if space or label.endswith(".") else ""  # "4.-6" would be a decimal-like run
    expected = 1 if error == 0 else -1
    assert check_step(claim).verdict == expected, claim
    assert check_step(f"{label}{sep}{claim}").verdict == expected, f"{label}{sep}{claim}"


def test_claims_record_both_sides():
    check = check_step("First 3 + 4 = 7, then 7 * 2 = 15.")
    assert [(c.lhs, c.rhs, c.holds) for c in check.claims] == [
        ("3 + 4", "7", True),
        ("7 * 2", "15", False),
    ]
    assert check.verdict == -1


def test_options_change_what_is_checked():
    assert check_step("x + x = 2x", SymbolicConfig(allow_symbols=False)).verdict == 0
    assert check_step("1/3 = 0.33", SymbolicConfig(decimal_tolerance=False)).verdict == -1
    assert check_step("2^20 = 1048576", SymbolicConfig(max_exponent=10)).verdict == 0
    many = " and ".join(["1 + 1 = 2"] * 5 + ["1 + 1 = 3"])
    assert check_step(many, SymbolicConfig(max_claims=5)).verdict == 1


def test_config_is_validated():
    with pytest.raises(ValueError, match="max_exponent"):
        SymbolicConfig(max_exponent=0)
    with pytest.raises(ValueError, match="max_seconds"):
        SymbolicConfig(max_seconds=0)


def test_verifier_has_the_judge_signature():
    verifier = SymbolicStepVerifier()
    assert verifier("problem", ["3 * 4 = 12", "12 + 1 = 14", "so the answer is 13"]) == [1, -1, 0]
    assert verifier("problem", []) == []


def test_evaluate_arithmetic():
    assert evaluate_arithmetic("1,000 / 8") == Fraction(125)
    assert evaluate_arithmetic(r"\frac{1}{3} + 0.5") == Fraction(5, 6)
    assert evaluate_arithmetic("2 apples") is None
    assert evaluate_arithmetic("y") is None
    assert evaluate_arithmetic("9**9**9") is None


# ---------------------------------------------------------------------------------------------
# Final answers


@pytest.mark.parametrize(
    ("prediction", "gold", "correct", "method"),
    [
        ("42", "42", True, "exact"),
        (r"\boxed{42}.", "42", True, "exact"),
        ("1,000", "1000", True, "exact"),
        ("41", "42", False, "exact"),
        (r"$\frac{2}{4}$", "0.5", True, "exact"),
        (r"\frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}", True, "math_verify"),
        (r"x = \frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}", True, "math_verify"),
        (r"\{1, 2\}", r"\{2, 1\}", True, "math_verify"),
        ("The answer is 7", "7", True, "math_verify"),
        ("0.3333333", "1/3", True, "math_verify"),  # math-verify rounds floats to 6 places
        ("", "7", False, "empty"),
        (None, "7", False, "empty"),
    ],
)
def test_check_answer(prediction, gold, correct, method):
    result = check_answer(prediction, gold)
    assert (result.correct, result.method) == (correct, method)


def test_check_answer_in_a_worker_thread():
    # math-verify's timeout uses signal.alarm (main thread only); in a thread it runs in a
    # child process with the same timeout
    with ThreadPoolExecutor(max_workers=2) as pool:
        right = pool.submit(check_answer, r"\frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}")
        wrong = pool.submit(check_answer, "12 or 13", "13")
        assert (right.result().correct, right.result().method) == (True, "math_verify")
        assert (wrong.result().correct, wrong.result().method) == (False, "math_verify")


@pytest.mark.parametrize("thread", [False, True])
def test_a_power_tower_times_out_in_any_thread(thread):
    # 9^(9^9) has 370 million digits: the check gives up at its timeout and calls it wrong
    config = AnswerConfig(timeout_s=1)
    if thread:
        with ThreadPoolExecutor(max_workers=1) as pool:
            result = pool.submit(check_answer, r"\boxed{9^{9^9}}", "1", config).result(timeout=60)
    else:
        result = check_answer(r"\boxed{9^{9^9}}", "1", config)
    assert (result.correct, result.method) == (False, "timeout")
    # and the next check in a thread runs again
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(check_answer, r"\sqrt{4}", "2.0").result(timeout=60).correct


def test_answer_config_is_validated():
    with pytest.raises(ValueError, match="timeout_s"):
        AnswerConfig(timeout_s=0)


@pytest.mark.parametrize(
    ("prediction", "gold", "correct"),
    [
        # several candidates are not the answer: plain text is not cut to its last number
        ("(3, 4)", "4", False),
        ("2, 3", "3", False),
        ("12 or 13", "13", False),
        ("2 and 3", "3", False),
        # nor with a full stop or other punctuation after them, nor inside a sentence
        ("12 or 13.", "13", False),
        ("(3, 4).", "4", False),
        ("3, 4, 5, 6, 7.", "7", False),
        ("2, 3;", "3", False),
        ("The answer is 12 or 13", "12", False),
        ("12 (or 13)", "12", False),
        # Python's power is not LaTeX's product: 9**9**9 is not 9
        ("9**9**9", "9", False),
        ("2**3 or 3**2", "8", False),
        ("2**(1 + 2)", "8", True),
        ("The answer is 12.", "12", True),
        ("(3, 4).", "(3,4)", True),
        # a tuple, a list or a set compares as one, however it is spaced
        ("(1, 2)", "(1,2)", True),
        ("[1, 2]", "[1,2]", True),
        ("x = -1, 1", "-1,1", True),
        # LaTeX's thousands separator, and a percent sign with or without its backslash
        ("1{,}234", "1234", True),
        ("1{,}234", "1", False),
        ("50%", "50", True),
        ("50\\%", "50", True),
        # a single number with words around it still reads as that number
        ("12 dollars", "12", True),
        ("x = 5", "5", True),
    ],
)
def test_check_answer_reads_plain_text_answers_whole(prediction, gold, correct):
    assert check_answer(prediction, gold).correct is correct


@pytest.mark.parametrize(
    ("step", "verdict"),
    [
        ("5 *\n2 = 10", 0),  # cut by a line break: the claim's left side is not all there
        ("5 *\n2 = 11", 0),
        ("- 3 + 4 = 7", 1),  # a Markdown list item
        ("* 3 + 4 = 7", 1),
        ("- 3 + 4 = 1", 1),  # or a minus sign written apart: right under either reading
        ("- 3 + 4 = 8", -1),  # false under both
        ("  - 2 + 3 = 5\n  - 5 * 2 = 10", 1),
        ("3 + 4 = 7\n- 5 + 1 = 7", -1),
    ],
)
def test_line_breaks_and_list_markers_never_make_a_right_step_false(step, verdict):
    assert check_step(step).verdict == verdict


@pytest.mark.parametrize(
    ("step", "verdict"),
    [
        # notation the parser does not read taints the side it is written against
        (r"$a_1 = 3$", 0),  # a subscript, not the claim 1 = 3
        (r"$x_1 + x_2 = 7$", 0),
        (r"$a_{10} = 3 + 9 \cdot 4 = 39$", 1),
        ("x_1 = 3 + 4 = 8", -1),
        ("$1 + 2 + ... + 10 = 55$", 0),  # terms left out
        ("1 + 2 + … + 10 = 55", 0),
        ("2 : 3 = 4 : 6", 0),  # ratios, spaced or not
        ("0.75 = 3:4", 0),
        (r"$1/3 = 0.\overline{3}$", 0),  # a repeating decimal
        (r"$3\frac{1}{2} = \frac{7}{2}$", 0),  # a mixed number or a product: not read
        (r"$100 \bmod 7 = 2$", 0),  # a LaTeX command that is not arithmetic
        ("C = 2πr = 2π(5) = 10π", 0),  # a constant written as a letter
        (r"$\frac{4}{3}\pi (3)^3 = 36\pi$", 0),
        ("120 = 5!", 0),
        ("f'(2) = 4", 0),
        (r"5 \text{ cm} + 3 \text{ cm} = 9 \text{ cm}", 0),
        # LaTeX that is read
        (r"$\frac{40}{50} = 80\%$", 1),
        (r"$0.25 = 25\%$", 1),
        (r"$3 \cdot 12 = \boxed{36}$", 1),
        (r"$3 \cdot 12 = \boxed{35}$", -1),
        (r"$3 + 4 = 7 \quad 5 + 1 = 6$", 1),
        (r"$\text{Total} = 3 + 4 = 7$", 1),
        ("The angle is 90°, so 90 + 90 = 180", 1),
        ("At 12:30, 3 + 4 = 7", 1),
        # GSM8K's calculator annotations: checked on their own, and the text around them too
        ("Natalia sold 48/2 = <<48/2=24>>24 clips in May.", 1),
        ("Natalia sold 48/2 = <<48/2=24>>25 clips in May.", -1),
        ("She has 5 * 3 = <<5*3=16>>15 apples.", -1),
    ],
)
def test_textbook_and_latex_notation(step, verdict):
    assert check_step(step).verdict == verdict
