"""Token-level rewards for BoT-GRPO (arXiv 2610.09804, Eq. 4).

    r_t = w_g * G + w_s * S_t + b_format

A reward function follows TRL's calling convention,
``fn(prompts, completions, completion_ids, **dataset_columns)``, and returns one
:class:`TokenReward` (outcome G, local signal S_t per completion token, format bonus, step
index per token, diagnostics) per completion. Three recipes are built in:

- :func:`make_math_step_reward`: math solutions in ``<step i>`` tags, final answer checked with
  math-verify, each step judged (+1/0/-1) by the symbolic verifier or an LLM judge (Eq. 8);
- :func:`make_python_code_reward`: Python code scored by compile, pyflakes and sandboxed unit
  tests, with line penalties decayed over neighbouring lines (Eqs. 6-7);
- :func:`make_react_code_reward`: React components scored by Babel, ESLint, a jsdom render and
  optional judges (code, screenshot), line penalties as above (the paper's headline recipe).

Layout. The token machinery sits at the top of this package and imports nothing from its
subpackages: :mod:`~botgrpo.rewards.types` (:class:`TokenReward`),
:mod:`~botgrpo.rewards.spans` (span -> token mapping), :mod:`~botgrpo.rewards.steps` and
:mod:`~botgrpo.rewards.code_blocks` (finding steps and code in a completion),
:mod:`~botgrpo.rewards.compose` (composition rules), :mod:`~botgrpo.rewards.noise` (noisy
verdicts and line penalties, the controls), :mod:`~botgrpo.rewards.calling`
(TRL's calling convention), :mod:`~botgrpo.rewards.configs` and
:mod:`~botgrpo.rewards.validate` (:func:`validate_token_rewards` checks any reward function's
output). Verdict sources live in subpackages: :mod:`botgrpo.rewards.verifiers` (symbolic step
verifier, final-answer check, Python diagnostics), :mod:`botgrpo.rewards.judges` (LLM judges),
:mod:`botgrpo.rewards.prm` (process reward models, read with the machinery's config checks)
and :mod:`botgrpo.rewards.sandbox` (isolated execution of generated code). Beneath all of them,
:mod:`~botgrpo.rewards.text` says where lines end and what counts as blank, the same for every
reader (CRLF, CR, a byte-order mark and Unicode separators read as their LF form).
:mod:`botgrpo.rewards.recipes` combines them into reward functions. The judges and the sandbox
are imported from their own packages; every other public name is re-exported here.

>>> tr = TokenReward(outcome=1.0, local=[0.5, -0.5, 0.0], format_bonus=0.2)
>>> tr.token_rewards(w_g=3.0, w_s=0.5).tolist()   # 3 * 1 + 0.2 + 0.5 * S_t
[3.45, 2.95, 3.2]
"""

from botgrpo.rewards.calling import message_text
from botgrpo.rewards.code_blocks import CodeBlock, extract_code_block
from botgrpo.rewards.compose import (
    FormatBonusConfig,
    LineSignalConfig,
    RewardWeights,
    StepSignalConfig,
    check_dominance,
    clamp_local,
    decay,
    line_values,
    propagate_errors,
    step_values,
)
from botgrpo.rewards.configs import config_from_mapping
from botgrpo.rewards.noise import VerdictNoise, noisy_line_penalties
from botgrpo.rewards.recipes import (
    CodeJudgement,
    MathRewardConfig,
    PythonRewardConfig,
    ReactCheck,
    ReactDiagnostic,
    ReactRewardConfig,
    TestOutcome,
    check_components,
    make_math_step_reward,
    make_python_code_reward,
    make_react_code_reward,
    screenshot_components,
)
from botgrpo.rewards.spans import (
    TokenizedText,
    line_spans,
    offsets_from_ids,
    offsets_from_text,
    spread_span_scores,
    token_span_index,
    validate_spans,
)
from botgrpo.rewards.steps import ParsedSolution, Step, parse_steps
from botgrpo.rewards.types import TokenReward
from botgrpo.rewards.validate import validate_token_rewards
from botgrpo.rewards.verifiers import (
    AnswerCheck,
    AnswerConfig,
    Diagnostic,
    PythonAnalysis,
    SeverityWeights,
    StepCheck,
    SymbolicConfig,
    SymbolicStepVerifier,
    analyse_python,
    check_answer,
    check_step,
    evaluate_arithmetic,
    lint_python,
    pyflakes_severity,
    syntax_error,
)

__all__ = [
    "AnswerCheck",
    "AnswerConfig",
    "CodeBlock",
    "CodeJudgement",
    "Diagnostic",
    "FormatBonusConfig",
    "LineSignalConfig",
    "MathRewardConfig",
    "ParsedSolution",
    "PythonAnalysis",
    "PythonRewardConfig",
    "ReactCheck",
    "ReactDiagnostic",
    "ReactRewardConfig",
    "RewardWeights",
    "SeverityWeights",
    "Step",
    "StepCheck",
    "StepSignalConfig",
    "SymbolicConfig",
    "SymbolicStepVerifier",
    "TestOutcome",
    "TokenReward",
    "TokenizedText",
    "VerdictNoise",
    "analyse_python",
    "check_answer",
    "check_components",
    "check_dominance",
    "check_step",
    "clamp_local",
    "config_from_mapping",
    "decay",
    "evaluate_arithmetic",
    "extract_code_block",
    "line_spans",
    "line_values",
    "lint_python",
    "make_math_step_reward",
    "make_python_code_reward",
    "make_react_code_reward",
    "message_text",
    "noisy_line_penalties",
    "offsets_from_ids",
    "offsets_from_text",
    "parse_steps",
    "propagate_errors",
    "pyflakes_severity",
    "screenshot_components",
    "spread_span_scores",
    "step_values",
    "syntax_error",
    "token_span_index",
    "validate_spans",
    "validate_token_rewards",
]
