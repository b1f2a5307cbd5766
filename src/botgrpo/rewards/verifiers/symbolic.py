"""A deterministic step verifier: check every equality written in a math step exactly.

The BoT-GRPO paper (arXiv 2610.09804, Sec. 4) judged steps with an LLM and names symbolic
verifiers as the cheaper, cleaner replacement; this is one. A step's verdict is

    +1  every checkable claim holds (and there is at least one),
    -1  some checkable claim is false,
     0  nothing checkable.

Claims. The step text is read as a stream of numbers, operators, brackets, ``=`` and words.
Words (two letters or more) and punctuation other than operators cut the stream into segments;
inside a segment, ``a = b = c`` yields the claims ``a = b`` and ``b = c``. Understood:
integers, decimals, thousands separators (``1,234``: comma followed by exactly three digits),
``+ - − * × · ⋅ / ÷ ^ **``, ``x`` between two numbers (``3 x 4``), ``%`` (divide by 100),
``²``/``³``, brackets ``() [] {}``, implicit products written without a space (``2(3+4)``,
``2x``), LaTeX ``\\frac{a}{b}``, ``\\times``, ``\\cdot``, ``\\div``, ``\\sqrt{}`` (exact roots
only), ``\\left``/``\\right``, ``\\boxed``, ``\\%`` and ``$``; ``\\text``, ``\\quad`` and
their kind read as words. Single letters are symbols: ``x + x = 2x`` holds,
``2(x+1) = 2x+1`` is false, ``x = 5`` (an equation, not an identity) is not checkable.
A label before a claim (``c:``, ``Step 1:``, ``1.``, ``1)``) is not part of it, and a sign
after it starts the claim: ``c:-6-2=-8`` holds. Numbers written against a colon on both sides
(``3:4``, ``12:30``: a ratio, a time) are not read as claims.

Conservative by design: a false -1 hurts training more than a missing verdict, so

- a side that is not an arithmetic expression makes its claim uncheckable; a segment next to
  an operator word ("25% of 80 = 20", "3 times 4 = 12") drops the claim on that side, and so
  does an expression cut by a line break after an operator ("5 *\\n2 = 10");
- notation the parser does not read drops the claim on the side it touches: any other LaTeX
  command (``\\pi``, ``\\bmod``, ``\\overline``, ``\\ldots``), a subscript, prime, factorial,
  degree sign or Greek letter written against it (``a_1 = 3``, ``120 = 5!``, ``2π(5) = 10π``),
  an ellipsis (``1 + 2 + ... + 10 = 55``), a ratio (``2 : 3 = 4 : 6``), a number written
  before ``\\frac`` (``3\\frac{1}{2}``: a mixed number or a product);
- a GSM8K calculator annotation (``48/2 = <<48/2=24>>25``) is checked on its own, and the text
  around it as if it were not there (``48/2 = 25``, false);
- a line opening with ``-``, ``*``, ``+`` or ``•`` and a space is read as a Markdown list item
  ("- 3 + 4 = 7" holds), unless reading the marks as signs makes every claim hold
  ("- 3 + 4 = 1"): a step is false only where it is false under both readings;
- a side written as a decimal with k places matches the other side rounded or truncated to k
  places (``1/3 = 0.33``, ``2/3 = 0.67``, ``22/7 = 3.14``; not ``22/7 = 3.15``) when
  ``decimal_tolerance`` is on; a stray bracket at the outer end of a chain is ignored
  (``= 12 (because ...``), nothing else is trimmed;
- pathological input is refused, never evaluated: claims longer than ``max_claim_chars``,
  brackets nested deeper than ``max_depth``, integer exponents above ``max_exponent``
  (``9**9**9``), results above ``max_bits`` bits, non-integer powers; division by zero makes a
  claim uncheckable. No name is looked up or evaluated: the parser builds numbers (exact
  fractions) and sympy Symbols only, and sympy (``cancel``) is used only for claims with
  symbols, under ``max_symbolic_degree`` (total degree) and ``max_symbols``. ``max_seconds``
  bounds the time spent on one step (checked between claims: the limits above bound each).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy

__all__ = [
    "Claim",
    "StepCheck",
    "SymbolicConfig",
    "SymbolicStepVerifier",
    "check_step",
    "evaluate_arithmetic",
]


@dataclass(frozen=True)
class SymbolicConfig:
    """Limits and options of the symbolic step verifier."""

    max_claim_chars: int = 400
    """Longest segment (characters) holding a claim; longer ones are not checked."""
    max_claims: int = 32
    """At most this many claims are checked per step."""
    max_depth: int = 32
    """Deepest bracket nesting accepted."""
    max_exponent: int = 4096
    """Largest integer exponent evaluated (``9**9**9`` is refused)."""
    max_bits: int = 8192
    """Largest numerator/denominator size in bits of any intermediate result."""
    max_symbolic_degree: int = 12
    """Largest total degree of a side with symbols (``(x+1)^12`` ok, ``((x+1)^12)^2`` not)."""
    max_symbols: int = 4
    """Most distinct symbols in one claim with symbols."""
    allow_symbols: bool = True
    """Read single letters as symbols (identities like ``x + x = 2x`` become checkable)."""
    decimal_tolerance: bool = True
    """A side written as a decimal with k places matches its value rounded/truncated to k places."""
    max_seconds: float = 0.5
    """Time budget per step; claims left when it runs out are not checked."""

    def __post_init__(self) -> None:
        for name in ("max_claim_chars", "max_claims", "max_depth", "max_exponent", "max_bits"):
            if getattr(self, name) < 1:
                raise ValueError(f"SymbolicConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.max_symbolic_degree < 0 or self.max_symbols < 0:
            raise ValueError("SymbolicConfig.max_symbolic_degree and max_symbols must be >= 0")
        if not self.max_seconds > 0:
            raise ValueError(f"SymbolicConfig.max_seconds must be > 0, got {self.max_seconds}")


@dataclass(frozen=True)
class Claim:
    """One checked equality ``lhs = rhs``."""

    lhs: str
    """Left side as written."""
    rhs: str
    """Right side as written."""
    holds: bool
    """Whether the two sides are equal."""


@dataclass(frozen=True)
class StepCheck:
    """Verdict of one step and the claims behind it."""

    verdict: int
    """+1 all claims hold, -1 some claim is false, 0 nothing checkable."""
    claims: tuple[Claim, ...]
    """The claims that could be checked."""


# ---------------------------------------------------------------------------------------------
# Tokens

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t]+|\$|\\[,;:! ]|\\[()\[\]]|\\left\b|\\right\b|\\displaystyle\b|\\boxed\b)
   |(?P<num>\d{1,3}(?:,\d{3})+(?![\d])(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
   |(?P<frac>\\[dt]?frac\b)
   |(?P<sqrt>\\sqrt\b|√)
   |(?P<op>\*\*|\\times\b|\\cdot\b|\\div\b|[-+*/^×·⋅÷−])
   |(?P<brk>==>|=>|<=|>=|!=|:=)
   |(?P<eq>==|=)
   |(?P<lp>[(\[{])
   |(?P<rp>[)\]}])
   |(?P<pct>\\?%)
   |(?P<sup>[²³])
   |(?P<cmd>\\[A-Za-z]+)
   |(?P<word>[A-Za-z]+)
   |(?P<other>[\s\S])
    """,
    re.VERBOSE,
)
_OPS = {"**": "^", "\\times": "*", "\\cdot": "*", "\\div": "/", "×": "*", "·": "*", "⋅": "*"}
_OPS.update({"÷": "/", "−": "-"})
_CLOSE = {"(": ")", "[": "]", "{": "}"}
# Operator words: a number next to one belongs to a phrase we do not parse.
_OPERATOR_WORDS = frozenset(
    [
        "of",
        "times",
        "plus",
        "minus",
        "over",
        "divided",
        "multiplied",
        "by",
        "per",
        "squared",
        "cubed",
        "root",
        "twice",
        "double",
        "triple",
        "half",
        "percent",
        "mod",
        "modulo",
        "choose",
        "less",
        "more",
        "than",
        "add",
        "added",
        "subtract",
        "subtracted",
        "multiply",
        "divide",
        "to",
        "from",
        "into",
        "product",
        "sum",
        "difference",
        "quotient",
        "power",
        "sqrt",
        "sin",
        "cos",
        "tan",
        "log",
        "ln",
        "exp",
    ]
)


#: LaTeX commands that space or hold text: read as a word (a break), not as unread math.
_TEXT_COMMANDS = frozenset(
    ["quad", "qquad", "text", "textrm", "textbf", "textit", "mathrm", "mathbf", "mbox", "hspace"]
)


@dataclass
class _Tok:
    kind: str
    text: str
    start: int
    end: int
    space_before: bool


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    space = True
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind == "ws":
            space = True
            continue
        value = m.group(0)
        if kind == "cmd" and value[1:] in _TEXT_COMMANDS:
            kind, value = "word", value[1:]
        if kind == "word" and len(value) == 1:
            kind = "var"
        if kind == "op":
            value = _OPS.get(value, value)
        toks.append(_Tok(kind, value, m.start(), m.end(), space))
        space = False
    for k, t in enumerate(toks):  # "3 x 4": x between numbers is a product
        between = 0 < k < len(toks) - 1 and toks[k - 1].kind in ("num", "rp")
        if t.kind == "var" and t.text in "xX" and between and toks[k + 1].kind in ("num", "lp"):
            t.kind, t.text = "op", "*"
    return toks


# ---------------------------------------------------------------------------------------------
# Parsing to a small AST of tuples: ("num", Fraction, places) ("var", name) (op, a, b)
# ("neg", a) ("pct", a) ("sqrt", a)


class _Refused(Exception):
    """The expression is not checkable (not arithmetic, or over a safety limit)."""


class _Parser:
    def __init__(self, toks: list[_Tok], cfg: SymbolicConfig) -> None:
        self.toks, self.pos, self.cfg, self.depth = toks, 0, cfg, 0

    def peek(self) -> _Tok | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self, kind: str, text: str | None = None) -> _Tok:
        t = self.peek()
        if t is None or t.kind != kind or (text is not None and t.text != text):
            raise _Refused(f"expected {text or kind}")
        self.pos += 1
        return t

    def parse_all(self) -> Any:
        node = self.expr()
        if self.pos != len(self.toks):
            raise _Refused("trailing tokens")
        return node

    def expr(self) -> Any:
        node = self.term()
        while (t := self.peek()) is not None and t.kind == "op" and t.text in "+-":
            self.pos += 1
            node = ("add" if t.text == "+" else "sub", node, self.term())
        return node

    def _implicit(self, t: _Tok) -> bool:
        prev = self.toks[self.pos - 1]
        if t.kind == "frac" and prev.kind == "num":  # 3\frac{1}{2}: a mixed number or a product
            raise _Refused("a number before \\frac")
        starts = t.kind in ("lp", "var", "frac", "sqrt") or (t.kind == "num" and prev.kind == "rp")
        return starts and not t.space_before and prev.kind in ("num", "var", "rp", "sup", "pct")

    def term(self) -> Any:
        node = self.unary()
        while (t := self.peek()) is not None:
            if t.kind == "op" and t.text in "*/":
                self.pos += 1
                node = ("mul" if t.text == "*" else "div", node, self.unary())
            elif self._implicit(t):
                node = ("mul", node, self.unary())
            else:
                break
        return node

    def unary(self) -> Any:
        t = self.peek()
        if t is not None and t.kind == "op" and t.text in "+-":
            self.pos += 1
            inner = self.unary()
            return ("neg", inner) if t.text == "-" else inner
        return self.power()

    def power(self) -> Any:
        base = self.postfix()
        t = self.peek()
        if t is not None and t.kind == "op" and t.text == "^":
            self.pos += 1
            return ("pow", base, self.unary())
        return base

    def postfix(self) -> Any:
        node = self.atom()
        while (t := self.peek()) is not None and t.kind in ("pct", "sup"):
            self.pos += 1
            if t.kind == "pct":
                node = ("pct", node)
            else:
                node = ("pow", node, ("num", Fraction(2 if t.text == "²" else 3), 0))
        return node

    def group(self) -> Any:
        opener = self.take("lp")
        self.depth += 1
        if self.depth > self.cfg.max_depth:
            raise _Refused("nested too deep")
        node = self.expr()
        self.take("rp", _CLOSE[opener.text])
        self.depth -= 1
        return node

    def atom(self) -> Any:
        t = self.peek()
        if t is None:
            raise _Refused("missing operand")
        if t.kind == "num":
            self.pos += 1
            digits = t.text.replace(",", "")
            if len(digits) > self.cfg.max_bits // 3:
                raise _Refused("number too long")
            places = len(digits.split(".")[1]) if "." in digits else 0
            return ("num", Fraction(digits), places)
        if t.kind == "var" and self.cfg.allow_symbols:
            self.pos += 1
            return ("var", t.text)
        if t.kind == "lp":
            return self.group()
        if t.kind == "frac":
            self.pos += 1
            return ("div", self.group(), self.group())
        if t.kind == "sqrt":
            self.pos += 1
            nxt = self.peek()
            return ("sqrt", self.group() if nxt is not None and nxt.kind == "lp" else self.atom())
        raise _Refused(f"unexpected {t.text!r}")


# ---------------------------------------------------------------------------------------------
# Evaluation


def _has_var(node: Any) -> bool:
    if node[0] == "var":
        return True
    return node[0] != "num" and any(_has_var(c) for c in node[1:] if isinstance(c, tuple))


def _bits(q: Fraction) -> int:
    return max(q.numerator.bit_length(), q.denominator.bit_length())


def _exact_root(q: Fraction) -> Fraction:
    if q < 0:
        raise _Refused("square root of a negative number")
    n, d = math.isqrt(q.numerator), math.isqrt(q.denominator)
    if n * n != q.numerator or d * d != q.denominator:
        raise _Refused("irrational square root")
    return Fraction(n, d)


def _num_pow(base: Fraction, exp: Fraction, cfg: SymbolicConfig) -> Fraction:
    if exp.denominator != 1:
        if exp == Fraction(1, 2):
            return _exact_root(base)
        raise _Refused("non-integer exponent")
    e = exp.numerator
    if abs(e) > cfg.max_exponent or _bits(base) * abs(e) > cfg.max_bits:
        raise _Refused("power too large")
    if base == 0 and e < 0:
        raise _Refused("division by zero")
    return base**e


def _eval_num(node: Any, cfg: SymbolicConfig) -> Fraction:
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "neg":
        return -_eval_num(node[1], cfg)
    if kind == "pct":
        return _eval_num(node[1], cfg) / 100
    if kind == "sqrt":
        return _exact_root(_eval_num(node[1], cfg))
    a, b = _eval_num(node[1], cfg), _eval_num(node[2], cfg)
    if kind == "pow":
        out = _num_pow(a, b, cfg)
    elif kind == "div":
        if b == 0:
            raise _Refused("division by zero")
        out = a / b
    else:
        out = a + b if kind == "add" else a - b if kind == "sub" else a * b
    if _bits(out) > cfg.max_bits:
        raise _Refused("result too large")
    return out


def _degree(node: Any, cfg: SymbolicConfig) -> int:
    """An upper bound on the total degree of an expression (numerator and denominator)."""
    kind = node[0]
    if not _has_var(node):
        return 0
    if kind == "var":
        return 1
    if kind in ("neg", "pct", "sqrt"):
        return _degree(node[1], cfg)
    if kind == "pow":
        if _has_var(node[2]):
            raise _Refused("symbolic exponent")
        exp = _eval_num(node[2], cfg)
        if exp.denominator != 1:
            raise _Refused("non-integer power of a symbolic expression")
        return _degree(node[1], cfg) * abs(exp.numerator)
    a, b = _degree(node[1], cfg), _degree(node[2], cfg)
    return max(a, b) if kind in ("add", "sub") else a + b


def _symbols(node: Any) -> set[str]:
    if node[0] == "var":
        return {node[1]}
    if node[0] == "num":
        return set()
    return set().union(*(_symbols(c) for c in node[1:] if isinstance(c, tuple)))


def _eval_sym(node: Any, cfg: SymbolicConfig) -> sympy.Expr:
    """The sympy expression of a node (numbers exact; subtrees without symbols via Fraction)."""
    kind = node[0]
    if not _has_var(node):
        value = _eval_num(node, cfg)
        return sympy.Rational(value.numerator, value.denominator)
    if kind == "var":
        return sympy.Symbol(node[1])
    if kind == "sqrt":
        raise _Refused("square root of a symbolic expression")
    if kind in ("neg", "pct"):
        inner = _eval_sym(node[1], cfg)
        return -inner if kind == "neg" else inner / 100
    if kind == "pow":
        return _eval_sym(node[1], cfg) ** int(_eval_num(node[2], cfg))
    a, b = _eval_sym(node[1], cfg), _eval_sym(node[2], cfg)
    if kind == "div":
        if b == 0:
            raise _Refused("division by zero")
        return a / b
    return a + b if kind == "add" else a - b if kind == "sub" else a * b


def _symbolic_difference(lhs: Any, rhs: Any, cfg: SymbolicConfig) -> sympy.Expr:
    """lhs - rhs with sympy, after the size guards (degree and number of symbols)."""
    if max(_degree(lhs, cfg), _degree(rhs, cfg)) > cfg.max_symbolic_degree:
        raise _Refused("symbolic degree too large")
    if len(_symbols(lhs) | _symbols(rhs)) > cfg.max_symbols:
        raise _Refused("too many symbols")
    return sympy.cancel(_eval_sym(lhs, cfg) - _eval_sym(rhs, cfg))


def _decimal_places(node: Any) -> int | None:
    """k if the side is a lone decimal literal with k > 0 places (possibly negated)."""
    if node[0] == "neg":
        node = node[1]
    return node[2] if node[0] == "num" and node[2] > 0 else None


def _compare(lhs: Any, rhs: Any, cfg: SymbolicConfig) -> bool | None:
    """True/False for a checkable claim, None when it is not checkable."""
    try:
        if _has_var(lhs) or _has_var(rhs):
            diff = _symbolic_difference(lhs, rhs, cfg)
            if diff.free_symbols:
                return None
            return bool(diff == 0)
        a, b = _eval_num(lhs, cfg), _eval_num(rhs, cfg)
    except (_Refused, ZeroDivisionError, OverflowError, RecursionError, ValueError):
        return None
    if a == b:
        return True
    if cfg.decimal_tolerance:
        for written, other in ((lhs, b), (rhs, a)):
            places = _decimal_places(written)
            value = a if written is lhs else b
            if places is not None and _rounds_to(other, value, places):
                return True
    return False


def _rounds_to(exact: Fraction, written: Fraction, places: int) -> bool:
    """Whether ``written`` is ``exact`` rounded (half up) or truncated to ``places`` decimals."""
    scale = 10**places
    truncated = Fraction(math.trunc(exact * scale), scale)
    return abs(exact - written) <= Fraction(1, 2 * scale) or truncated == written


# ---------------------------------------------------------------------------------------------
# Claims


_OPERANDS = ("num", "var", "rp", "pct", "sup")


def _segments(toks: list[_Tok]) -> list[tuple[list[_Tok], bool, bool]]:
    """Runs of tokens between breaks, with flags: operator word just before / just after.

    A word counts as an operator word when it is in ``_OPERATOR_WORDS`` or is written against
    an operand without a space (``3cm``, ``sin(30)``, ``log2``); a LaTeX command not read as
    arithmetic (``\\pi``, ``\\bmod``, ``\\overline``, ``\\ldots``) always counts as one. A
    mark of :data:`_GLUED_MARKS` (a subscript ``_``, a prime, ``!``, a Greek letter) taints
    the side it is written against (``a_1 = 3``, ``120 = 5!``, ``2π(5) = 10π``). After a
    separator (``: ; , .``) a sign starts a new claim (``c:-6-2=-8``, ``Step 1: -3+1=-2``),
    except between two numbers around a colon (``3:4``, ``12:30``, ``2 : 3``: a ratio or a
    time, not checked) unless the first number follows a label word (``Step 1:-6-2=-8``), and
    except where the separator joins a number to what follows it (``0.\\overline{3}``). A
    taint carries over breaks with nothing between them (``2 + ... + 10``).
    """
    out: list[tuple[list[_Tok], bool, bool]] = []
    current: list[_Tok] = []
    taint_left = False
    after_label_word = False
    for k, t in enumerate(toks):
        if t.kind not in ("word", "other", "brk", "cmd"):
            current.append(t)
            continue
        word = t.kind == "word"
        known = (word and t.text.lower() in _OPERATOR_WORDS) or t.kind == "cmd"
        glued_prev = bool(current) and not t.space_before and current[-1].kind in _OPERANDS
        label_index = after_label_word and len(current) == 1 and current[0].kind == "num"
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        glued_next = nxt is not None and not nxt.space_before and nxt.kind in ("lp", "num", "var")
        mark = t.kind == "other" and _is_glued_mark(t.text)
        separator = t.kind == "other" and t.text in _SEPARATORS
        joins = separator and not label_index and _joins_numbers(t, current, nxt, glued_prev)
        taint_right = known or ((word or mark) and glued_prev) or joins
        if current:
            out.append((current, taint_left, taint_right))
        # "5 *\n2 = 10": an expression cut by a line break (or a mark) goes on after it
        dangling = bool(current) and current[-1].kind == "op"
        if separator:
            new_taint = _separator_taints(t, current, nxt, glued_prev and not label_index)
            new_taint = new_taint or joins or dangling
        else:
            # "3cm + 4 = 7": an operator after a unit word continues the phrase before it.
            continued = nxt is not None and nxt.kind == "op" and (glued_prev or nxt.text in "+*/^")
            glued_after = (
                nxt is not None
                and not nxt.space_before
                and nxt.kind != "word"
                and not (nxt.kind == "other" and nxt.text in _SEPARATORS)
            )
            new_taint = known or (word and glued_next) or (mark and glued_after)
            new_taint = new_taint or continued or dangling
        taint_left = new_taint or (taint_left and not current and not t.space_before)
        after_label_word, current = word and t.text.lower() in _LABEL_WORDS, []
    if current:
        out.append((current, taint_left, False))
    return out


#: Marks that belong to the expression they are written against, which the parser does not
#: read: a subscript, a prime, a factorial, a degree sign; Greek letters are added by
#: :func:`_is_glued_mark`.
_GLUED_MARKS = frozenset("_'′″!°")


def _is_glued_mark(ch: str) -> bool:
    return ch in _GLUED_MARKS or "\u0370" <= ch <= "\u03ff"


def _joins_numbers(sep: _Tok, before: list[_Tok], nxt: _Tok | None, glued_prev: bool) -> bool:
    """Whether separator ``sep`` joins the number before it to what follows instead of ending
    a claim: a colon between two numbers, spaced or not (``2 : 3``, ``12:30``: a ratio or a
    time), or any separator written against a number and against a following mark or command
    (``0.\\overline{3}``)."""
    if nxt is None or not before or before[-1].kind != "num":
        return False
    if sep.text == ":" and (nxt.kind == "num" or (nxt.kind == "op" and nxt.text in "+-")):
        return True
    return glued_prev and not nxt.space_before and nxt.kind in ("other", "cmd")


def _drop_list_label(toks: list[_Tok]) -> list[_Tok]:
    """Drop a list label that opens the step (``1) -6-2=-8``, ``b) 3+4=7``): one number or
    letter and a closing bracket with no opening one."""
    if len(toks) > 2 and toks[0].kind in ("num", "var") and toks[1].text == ")":
        return toks[2:]
    return toks


_LABEL_WORDS = frozenset(["step", "line", "case", "part", "stage", "row", "item", "eq", "equation"])
"""Words that number a step: "Step 1:-6-2=-8" is a label, not the ratio 1:-6."""
_SEPARATORS = frozenset(":;,.")
"""Punctuation that ends a label or a clause: a sign right after it belongs to the next claim."""


def _separator_taints(sep: _Tok, before: list[_Tok], nxt: _Tok | None, glued_prev: bool) -> bool:
    """Whether the claim after separator ``sep`` is not to be checked on its left side.

    ``3:4``, ``12:30``, ``3:-2`` (a number, the separator and a number or a signed number, all
    written together) are ratios or times; ``*``, ``/`` or ``^`` right after a separator
    continue something unparsed. A label (``c:``, ``Step 1:``, ``1.``) or a clause end before
    a number or a sign taints nothing.
    """
    if nxt is None:
        return False
    if nxt.kind == "op" and nxt.text in "*/^":
        return True
    number_before = glued_prev and before[-1].kind == "num"
    glued_after = not nxt.space_before and (nxt.kind == "num" or nxt.kind == "op")
    return number_before and glued_after


def _parse(toks: list[_Tok], cfg: SymbolicConfig) -> Any | None:
    if not toks:
        return None
    try:
        return _Parser(toks, cfg).parse_all()
    except (_Refused, RecursionError):
        return None


def _strip_dangling(toks: list[_Tok], *, left: bool) -> list[_Tok]:
    """Drop closing brackets that open a chain (``...) 3+4 = 7``) or opening brackets that end
    it (``= 12 (because ...``); nothing else is ever dropped. A chain that opens with such a
    bracket and then an operator continues something before it and is not checked."""
    kind = "rp" if left else "lp"
    toks = list(toks)
    stripped = False
    while toks and toks[0 if left else -1].kind == kind:
        toks.pop(0 if left else -1)
        stripped = True
    if stripped and left and toks and toks[0].kind == "op":  # "} + 3 = 8": a phrase goes on
        return []
    return toks


def _text_of(toks: list[_Tok], text: str) -> str:
    return text[toks[0].start : toks[-1].end] if toks else ""


def _segment_claims(
    seg: list[_Tok], taint_left: bool, taint_right: bool, text: str, cfg: SymbolicConfig
) -> list[tuple[Any, Any, str, str]]:
    parts: list[list[_Tok]] = [[]]
    for t in seg:
        if t.kind == "eq":
            parts.append([])
        else:
            parts[-1].append(t)
    if len(parts) < 2:
        return []
    nodes: list[Any] = []
    texts: list[str] = []
    for k, part in enumerate(parts):
        if k == 0:
            part = _strip_dangling(part, left=True)
        if k == len(parts) - 1:
            part = _strip_dangling(part, left=False)
        tainted = (k == 0 and taint_left) or (k == len(parts) - 1 and taint_right)
        node = None if tainted else _parse(part, cfg)
        nodes.append(node)
        texts.append(_text_of(part, text))
    return [
        (nodes[k], nodes[k + 1], texts[k], texts[k + 1])
        for k in range(len(nodes) - 1)
        if nodes[k] is not None and nodes[k + 1] is not None
    ]


def evaluate_arithmetic(text: str, config: SymbolicConfig | None = None) -> Fraction | None:
    r"""The exact value of ``text`` if it is one arithmetic expression without symbols, else None.

    >>> evaluate_arithmetic(r"\frac{3}{4} + 1,000")
    Fraction(4003, 4)
    >>> evaluate_arithmetic("x + 1") is None, evaluate_arithmetic("12 apples") is None
    (True, True)
    """
    cfg = config or SymbolicConfig()
    if len(text) > cfg.max_claim_chars:
        return None
    toks = _tokenize(text)
    if any(t.kind not in _ARITHMETIC for t in toks):
        return None
    node = _parse(toks, cfg)
    if node is None or _has_var(node):
        return None
    try:
        return _eval_num(node, cfg)
    except (_Refused, ZeroDivisionError, OverflowError, RecursionError, ValueError):
        return None


_ARITHMETIC = frozenset(("num", "op", "lp", "rp", "frac", "sqrt", "pct", "sup", "var"))


def check_step(text: str, config: SymbolicConfig | None = None) -> StepCheck:
    """Check every equality claim of one step; see the module docstring for the rules.

    >>> check_step("12 × 3 = 36, so the total is 36 + 4 = 40.").verdict
    1
    >>> check_step("Then 7 * 8 = 54.").verdict
    -1
    >>> check_step("We add the two numbers.").verdict
    0
    >>> check_step("9**9**9 = 1").verdict   # refused, not evaluated
    0
    """
    cfg = config or SymbolicConfig()
    unmarked = _BULLET.sub(lambda m: m.group(1) + " " * len(m.group(2)), text)
    if unmarked == text:
        return _check_claims(text, cfg)
    # "- 3 + 4 = 7": a list marker or a minus sign. Read as a list, unless the marks read as
    # signs make every claim of the list reading hold ("- 3 + 4 = 1"): a step is judged false
    # only where it is false under both readings.
    as_written, as_item = _check_claims(text, cfg), _check_claims(unmarked, cfg)
    signs_hold = as_written.verdict == 1 and len(as_written.claims) >= len(as_item.claims)
    return as_written if signs_hold and as_item.verdict != 1 else as_item


#: A Markdown list marker opening a line: ``-``, ``*``, ``+`` or ``•`` and a space.
_BULLET = re.compile(r"(^|\n)([ \t]*[-*+•][ \t])")


#: A calculator annotation of GSM8K's solutions, ``<<48/2=24>>``: its result is not the text's.
_ANNOTATION = re.compile(r"<<([^<>\n]{0,400})>>")


def _check_claims(text: str, cfg: SymbolicConfig) -> StepCheck:
    """Every claim of ``text``; a calculator annotation (``48/2 = <<48/2=24>>25``) is checked
    on its own, and the text around it as if it were not there (``48/2 = 25``)."""
    notes = [m.group(1) for m in _ANNOTATION.finditer(text)]
    if not notes:
        return _check_text(text, cfg)
    claims: list[Claim] = []
    for part in (_ANNOTATION.sub(lambda m: " " * len(m.group(0)), text), *notes):
        claims += _check_text(part, cfg).claims
    return _verdict(claims[: cfg.max_claims])


def _verdict(claims: list[Claim]) -> StepCheck:
    """+1 when every claim holds, -1 when one is false, 0 without claims."""
    if not claims:
        return StepCheck(0, ())
    return StepCheck(1 if all(c.holds for c in claims) else -1, tuple(claims))


def _check_text(text: str, cfg: SymbolicConfig) -> StepCheck:
    deadline = time.perf_counter() + cfg.max_seconds
    claims: list[Claim] = []
    for seg, taint_l, taint_r in _segments(_drop_list_label(_tokenize(text))):
        if not any(t.kind == "eq" for t in seg):
            continue
        if seg[-1].end - seg[0].start > cfg.max_claim_chars:
            continue
        for lhs, rhs, lhs_text, rhs_text in _segment_claims(seg, taint_l, taint_r, text, cfg):
            if len(claims) >= cfg.max_claims or time.perf_counter() > deadline:
                break
            holds = _compare(lhs, rhs, cfg)
            if holds is not None:
                claims.append(Claim(lhs_text, rhs_text, holds))
    return _verdict(claims)


class SymbolicStepVerifier:
    """Step verdict source ``(problem, steps) -> list[int]`` backed by :func:`check_step`.

    It has the signature of an LLM step judge, so either can feed the math recipe.

    >>> SymbolicStepVerifier()("Compute 3*4+1.", ["3 * 4 = 12", "12 + 1 = 14", "so 13"])
    [1, -1, 0]
    """

    __name__ = "symbolic_step_verifier"

    def __init__(self, config: SymbolicConfig | None = None) -> None:
        self.config = config or SymbolicConfig()

    def check(self, steps: list[str]) -> list[StepCheck]:
        """The full check (verdict and claims) of each step."""
        return [check_step(s, self.config) for s in steps]

    def __call__(self, problem: str, steps: list[str]) -> list[int]:
        """Verdicts in {-1, 0, +1}, one per step; ``problem`` is not needed."""
        del problem
        return [c.verdict for c in self.check(steps)]
