"""The recipes with the project's LLM judges, served by a real HTTP judge on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from botgrpo.rewards import PythonRewardConfig, make_math_step_reward, make_python_code_reward
from botgrpo.rewards.judges import CodeJudge, JudgeConfig, StepJudge
from botgrpo.tiny import build_char_tokenizer

TOK = build_char_tokenizer()


class FixedJudge:
    """An OpenAI-compatible chat-completions endpoint that always gives ``answer``."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                judge.requests.append(body)
                message = {"role": "assistant", "content": judge.answer}
                payload = json.dumps(
                    {"id": "x", "object": "chat.completion", "model": body["model"],
                     "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
                ).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.config = JudgeConfig(
            base_url=f"http://127.0.0.1:{self.httpd.server_address[1]}/v1",
            model="judge",
            api_key="sk-test",
            timeout_s=5.0,
            max_retries=0,
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fixed_judge() -> Iterator[Any]:
    servers: list[FixedJudge] = []

    def make(answer: str) -> FixedJudge:
        servers.append(FixedJudge(answer))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def test_math_recipe_with_the_llm_step_judge(fixed_judge):
    server = fixed_judge("Step 1: correct\nStep 2: incorrect\nStep 3: correct")
    text = "<step 1>a</step 1><step 2>b</step 2><step 3>c</step 3><final>1</final>"
    ids = [*TOK(text).input_ids, TOK.eos_token_id]
    with StepJudge(server.config) as judge:
        reward = make_math_step_reward(TOK, {"steps": {"window": 0}}, step_verifier=judge)
        [tr] = reward(
            prompts=["What is 1?"], completions=[text], completion_ids=[ids], answer=["1"]
        )
    # Judge: [1, -1, 1]; error propagation: [1, -1, 0]; Eq. 8 with |S| = 3.
    assert tr.info["raw_verdicts"] == [1, -1, 1] and tr.info["verdicts"] == [1, -1, 0]
    assert tr.local[0] == pytest.approx(1 / 3) and tr.local[18] == pytest.approx(-1 / 3)
    assert tr.local[36] == 0.0 and tr.outcome == 1.0
    assert "What is 1?" in server.requests[0]["messages"][-1]["content"]


def test_failed_step_judge_is_neutral(fixed_judge):
    server = fixed_judge("I cannot judge this.")  # unparseable: the judge returns all 0
    text = "<step 1>a</step 1><final>1</final>"
    with StepJudge(server.config) as judge:
        reward = make_math_step_reward(TOK, step_verifier=judge)
        [tr] = reward(prompts=["p"], completions=[text], completion_ids=[TOK(text).input_ids],
                      answer=["1"])  # fmt: skip
    assert tr.info["verdicts"] == [0] and not tr.local.any()


def test_python_recipe_with_the_llm_code_judge(fixed_judge):
    server = fixed_judge("SCORE: 6\nLINE 2: -2 (shadows a builtin)")
    code = "def f(x):\n    list = [x]\n    return list\n"
    text = f"```python\n{code}```"
    with CodeJudge(server.config) as judge:
        reward = make_python_code_reward(TOK, PythonRewardConfig(run_tests=False), code_judge=judge)
        [tr] = reward(prompts=["Wrap x."], completions=[text], completion_ids=[TOK(text).input_ids])
    # G = 0 (clean) + 6/10; p_2 = -2/10: line 2 = -0.2, lines 1 and 3 = -0.2 * 0.75
    assert tr.outcome == pytest.approx(0.6)
    start = len("```python\n")
    assert tr.local[start] == pytest.approx(-0.15)
    assert tr.local[start + len("def f(x):\n")] == pytest.approx(-0.2)


def test_judges_named_by_options_as_a_yaml_recipe_gives_them(fixed_judge, monkeypatch):
    """reward_func_kwargs (a recipe's YAML) names judges by their JudgeConfig options; the API key
    comes from the environment."""
    from botgrpo.scoring.loading import load_reward_funcs

    monkeypatch.setenv("BOTGRPO_JUDGE_API_KEY", "sk-from-env")
    server = fixed_judge("SCORE: 6\nLINE 2: -2 (shadows a builtin)")
    options = {"base_url": server.config.base_url, "model": "judge", "max_retries": 0}
    kwargs = {"python_code_reward": {"config": {"run_tests": False}, "code_judge": options}}
    (reward,) = load_reward_funcs(["python_code_reward"], TOK, kwargs)
    text = "```python\ndef f(x):\n    list = [x]\n    return list\n```"
    [tr] = reward(prompts=["Wrap x."], completions=[text], completion_ids=[TOK(text).input_ids])
    assert tr.outcome == pytest.approx(0.6) and server.requests[0]["model"] == "judge"
    steps = fixed_judge("Step 1: incorrect")
    kwargs = {
        "math_step_reward": {"step_verifier": {"base_url": steps.config.base_url, "model": "m"}}
    }
    (math,) = load_reward_funcs(["math_step_reward"], TOK, kwargs)
    text = "<step 1>a</step 1><final>1</final>"
    [tr] = math(
        prompts=["p"], completions=[text], completion_ids=[TOK(text).input_ids], answer=["1"]
    )
    assert tr.info["raw_verdicts"] == [-1] and steps.requests[0]["model"] == "m"


def test_bad_judge_options_get_a_one_line_error(monkeypatch):
    from botgrpo.rewards import make_react_code_reward

    for name in ("BOTGRPO_JUDGE_MODEL", "BOTGRPO_JUDGE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match=r"^code_judge: unknown judge option 'url'; a judge takes"):
        make_python_code_reward(TOK, code_judge={"url": "http://127.0.0.1:9/v1"})
    with pytest.raises(ValueError, match=r"^screenshot_judge: .*no model given"):
        make_react_code_reward(TOK, screenshot_judge={"base_url": "http://127.0.0.1:9/v1"})
