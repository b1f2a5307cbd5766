"""Throughput of the token-reward recipes on a GRPO-sized batch (not a test).

A batch is 64 completions of about 1k tokens (8 prompts x 8 rollouts, as in the paper):

- math: recipe 1 with the symbolic step verifier (steps in tags, final answer check);
- python: recipe 2 without unit tests (code block, compile, pyflakes, line penalties);
- python + tests: recipe 2 with HumanEval-style tests in the sandbox (one run per completion).

Prints seconds per batch and per completion next to the target (0.5 s per batch on 2 cores for
the first two). Usage: ``python benchmarks/bench_rewards.py [--repeats 5] [--no-sandbox]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from botgrpo.rewards import (
    PythonRewardConfig,
    make_math_step_reward,
    make_python_code_reward,
)

BATCH = 64
TARGET_S = 0.5
TEST = "def check(candidate):\n" + "".join(
    f"    assert candidate({i}, {i + 1}) == {2 * i + 1}\n" for i in range(5)
)


def math_completion(rng: random.Random, n_steps: int = 28) -> tuple[str, str]:
    """A tagged solution: each step states a few arithmetic facts (some wrong)."""
    parts, value = [], rng.randint(2, 50)
    for i in range(1, n_steps + 1):
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        wrong = rng.random() < 0.05
        product = a * b + (1 if wrong else 0)
        parts.append(
            f"<step {i}> We multiply {a} × {b} = {product:,} and then add the running total: "
            f"{value} + {a} = {value + a}. So far the partial result is {value + a}. </step {i}>"
        )
        value += a
    answer = str(value)
    return "\n".join(parts) + f"\n<final>{answer}</final>", answer


def python_completion(rng: random.Random, n_funcs: int = 20) -> str:
    """Prose around a code block with a few lint findings."""
    lines = ["import os", "import sys", ""]
    for k in range(n_funcs):
        lines += [
            f"def helper_{k}(values, scale={rng.randint(1, 9)}):",
            f'    """Scale and sum part {k} of the input."""',
            "    total = 0",
            "    for v in values:",
            "        total += v * scale" if rng.random() > 0.1 else "        total += v * scael",
            "    unused = len(values)" if rng.random() < 0.2 else "    total = total // 1",
            "    return total",
            "",
        ]
    lines += ["def add(a, b):", "    return a + b", ""]
    code = "\n".join(lines)
    return f"Here is a solution with helpers.\n\n```python\n{code}```\n\nIt adds the numbers."


def train_tokenizer(corpus: list[str]) -> PreTrainedTokenizerFast:
    """A byte-level BPE (vocabulary 4000) trained on the benchmark texts."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=4000,
        special_tokens=["<|end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|end|>")


def timed(fn, repeats: int) -> float:
    fn()  # warm-up (imports, caches)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(name: str, seconds: float, target: float | None) -> None:
    per = seconds / BATCH * 1e3
    verdict = "" if target is None else f"  target <= {target:.2f} s: {seconds / target:.2f}x"
    print(f"{name:<26} {seconds:7.3f} s/batch  {per:7.2f} ms/completion{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-sandbox", action="store_true", help="skip the sandboxed tests")
    args = parser.parse_args()

    rng = random.Random(0)
    maths = [math_completion(rng) for _ in range(BATCH)]
    codes = [python_completion(rng) for _ in range(BATCH)]
    tok = train_tokenizer([t for t, _ in maths] + codes)
    eos = tok.eos_token_id
    math_ids = [[*tok(t).input_ids, eos] for t, _ in maths]
    code_ids = [[*tok(t).input_ids, eos] for t in codes]
    print(
        f"batch: {BATCH} completions; tokens per completion: math "
        f"{statistics.mean(map(len, math_ids)):.0f}, python {statistics.mean(map(len, code_ids)):.0f}"
        f"; cores: {os.cpu_count()}"
    )

    math_reward = make_math_step_reward(tok)
    prompts = ["Compute the total."] * BATCH
    answers = [a for _, a in maths]
    texts = [t for t, _ in maths]
    out = math_reward(prompts=prompts, completions=texts, completion_ids=math_ids, answer=answers)
    correct = sum(tr.outcome for tr in out)
    print(
        f"math: {correct:.0f}/{BATCH} answers correct, verdicts of completion 0: "
        f"{out[0].info['verdicts'][:8]}..."
    )
    seconds = timed(
        lambda: math_reward(
            prompts=prompts, completions=texts, completion_ids=math_ids, answer=answers
        ),
        args.repeats,
    )
    report("math (symbolic verifier)", seconds, TARGET_S)

    py_reward = make_python_code_reward(tok, PythonRewardConfig(run_tests=False))
    seconds = timed(
        lambda: py_reward(prompts=prompts, completions=codes, completion_ids=code_ids),
        args.repeats,
    )
    report("python (no tests)", seconds, TARGET_S)

    if args.no_sandbox:
        return
    from botgrpo.rewards.sandbox import max_concurrency

    tested = make_python_code_reward(tok)
    columns = {"test": [TEST] * BATCH, "entry_point": ["add"] * BATCH}
    out = tested(prompts=prompts, completions=codes, completion_ids=code_ids, **columns)
    passed = sum(tr.info["tests"] == (5, 5) for tr in out)
    seconds = timed(
        lambda: tested(prompts=prompts, completions=codes, completion_ids=code_ids, **columns),
        max(1, args.repeats // 2),
    )
    print(
        f"python + tests: {passed}/{BATCH} all tests passed; {max_concurrency()} sandboxes at "
        f"a time; sandbox throughput {BATCH / seconds:.1f} test runs/s"
    )
    report("python + sandbox tests", seconds, None)


if __name__ == "__main__":
    main()
