"""Tests of the LLM judges against a real scripted HTTP judge on 127.0.0.1, plus pure parsing.

The scripted judge reads directives from the last user message (the judged problem or task
carries them): ``[[reply]]...[[/reply]]`` is the answer, ``[[status:500x2]]`` answers HTTP 500
to the first two attempts of that message (``[[status:500]]``: always), ``[[sleep:1.0x1]]``
sleeps before answering the first attempt, ``[[gather:3]]`` holds each request (for at most
1 s, less than the client timeout) until three have been in flight together once, ``[[body]]...[[/body]]`` is sent as the raw response body.
"""

from __future__ import annotations

import doctest
import json
import os
import re
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import botgrpo.rewards.judges as judges
from botgrpo.rewards.judges import CodeJudge, JudgeConfig, StepJudge
from botgrpo.rewards.judges import cache as judge_cache
from botgrpo.rewards.judges import client as judge_client
from botgrpo.rewards.judges import config as judge_config
from botgrpo.rewards.judges import judge as judge_module
from botgrpo.rewards.judges import parsing as judge_parsing
from botgrpo.rewards.judges import prompts as judge_prompts
from botgrpo.rewards.judges import results as judge_results
from botgrpo.rewards.judges.cache import JudgeCache, cache_key
from botgrpo.rewards.judges.client import JudgeMetrics, backoff_delay
from botgrpo.rewards.judges.parsing import parse_code_answer, parse_step_answer

# ---------------------------------------------------------------- the scripted judge server


class ScriptedJudge:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 that follows directives."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.attempts: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.judge = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        with self.cond:
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def n_requests(self) -> int:
        with self.cond:
            return len(self.requests)

    def handle(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple:
        """Record the request and work out (status, body bytes, extra headers)."""
        user = body["messages"][-1]["content"]
        with self.cond:
            self.requests.append({"path": path, "headers": headers, "body": body})
            self.attempts[user] += 1
            attempt = self.attempts[user]
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.cond.notify_all()
        try:
            return self._respond(user, attempt, body)
        finally:  # leave the in-flight count before the answer is sent
            with self.cond:
                self.in_flight -= 1

    def _respond(self, user: str, attempt: int, body: dict[str, Any]) -> tuple:
        gather = re.search(r"\[\[gather:(\d+)\]\]", user)
        if gather:
            with self.cond:
                n = int(gather.group(1))
                self.cond.wait_for(lambda: self.max_in_flight >= n or self.stop.is_set(), 1.0)
            self.stop.wait(0.05)  # stay in flight a little, so excess concurrency would show
        sleep = _directive(user, "sleep", attempt)
        if sleep is not None:
            self.stop.wait(float(sleep))
        status = _directive(user, "status", attempt)
        if status is not None:
            return int(status), b'{"error": {"message": "scripted"}}', {"Retry-After": "0"}
        raw = re.search(r"\[\[body\]\](.*?)\[\[/body\]\]", user, re.S)
        if raw:
            return 200, raw.group(1).encode(), {}
        reply = re.search(r"\[\[reply\]\](.*?)\[\[/reply\]\]", user, re.S)
        content = reply.group(1) if reply else "no reply scripted"
        answer = {
            "id": "cmpl-test",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        return 200, json.dumps(answer).encode(), {}


def _directive(user: str, name: str, attempt: int) -> str | None:
    """The value of ``[[name:value]]`` or ``[[name:valuexN]]`` if it applies to ``attempt``."""
    match = re.search(rf"\[\[{name}:([\d.]+)(?:x(\d+))?\]\]", user)
    if match is None:
        return None
    if match.group(2) is not None and attempt > int(match.group(2)):
        return None
    return match.group(1)


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        judge: ScriptedJudge = self.server.judge  # type: ignore[attr-defined]
        status, payload, headers = judge.handle(self.path, dict(self.headers.items()), body)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ScriptedJudge]:
    judge = ScriptedJudge()
    yield judge
    judge.close()


def make_config(server: ScriptedJudge, **overrides: Any) -> JudgeConfig:
    """A config for the scripted judge with tiny timeouts and backoff."""
    values: dict[str, Any] = {
        "base_url": server.url,
        "model": "judge-model",
        "api_key": "sk-test",
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_base_s": 0.001,
        "backoff_max_s": 0.01,
        "max_concurrency": 4,
    }
    values.update(overrides)
    return JudgeConfig(**values)


def reply(text: str) -> str:
    return f"[[reply]]{text}[[/reply]]"


STEPS = ["2x + 3 = 7, so 2x = 4", "x = 3", "check: 2 * 3 + 3 = 9"]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------- step judge over HTTP


def test_step_judge_parses_answer_and_sends_openai_request(server: ScriptedJudge) -> None:
    problem = "Solve 2x + 3 = 7. " + reply(
        "Step 1: correct\nStep 2: incorrect - 4 / 2 is 2\nStep 3: uncertain"
    )
    with StepJudge(make_config(server, temperature=0.2, max_tokens=77)) as judge:
        result = judge.judge_steps(problem, STEPS)
    assert result.ok and result.error is None
    assert result.verdicts == (1, -1, 0)
    assert result.reasons == {2: "4 / 2 is 2"}
    assert result.missing == () and not result.cached
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["body"]
    assert set(body) == {"model", "messages", "temperature", "max_tokens"}
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("judge-model", 0.2, 77)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    user = body["messages"][1]["content"]
    assert all(f"[Step {i}]\n{s}" in user for i, s in enumerate(STEPS, 1))
    assert judge.metrics.as_dict()["requests"] == 1


def test_step_judge_reads_json_in_a_code_fence(server: ScriptedJudge) -> None:
    answer = 'Verdicts:\n```json\n{"verdicts": [{"step": 1, "verdict": "Correct"}, '
    answer += '{"step": 2, "verdict": "wrong", "reason": "sign"}, {"step": 3, "verdict": 1}]}\n```'
    result = StepJudge(make_config(server)).judge_steps("p " + reply(answer), STEPS)
    assert result.verdicts == (1, -1, 1) and result.reasons == {2: "sign"}


def test_missing_steps_are_uncertain(server: ScriptedJudge) -> None:
    steps = ["a", "b", "c", "d"]
    answer = "Step 3: incorrect\nStep 1: correct\nStep 9: correct"
    result = StepJudge(make_config(server)).judge_steps(reply(answer), steps)
    assert result.ok
    assert result.verdicts == (1, 0, -1, 0)
    assert result.missing == (2, 4)
    assert result.dropped == 1  # step 9 does not exist


def test_garbage_answer_is_neutral_and_not_cached(server: ScriptedJudge, tmp_path: Path) -> None:
    judge = StepJudge(make_config(server, cache_dir=str(tmp_path)))
    problem = reply("I am not sure what you want me to do.")
    first = judge.judge_steps(problem, STEPS)
    assert not first.ok and first.verdicts == (0, 0, 0)
    assert first.error is not None and first.error.startswith("unparseable")
    assert first.raw == "I am not sure what you want me to do."
    second = judge.judge_steps(problem, STEPS)
    assert not second.ok and not second.cached
    assert server.n_requests == 2  # the failure was not cached
    assert not list(tmp_path.rglob("*.json"))
    counts = judge.metrics.as_dict()
    assert (counts["parse_failures"], counts["failures"], counts["judgements"]) == (2, 2, 2)
    assert counts["retries"] == 0  # an unparseable answer is not retried


def test_timeouts_are_retried_then_neutral(server: ScriptedJudge) -> None:
    judge = StepJudge(make_config(server, timeout_s=0.3, max_retries=1))
    result = judge.judge_steps("[[sleep:1.5]] " + reply("Step 1: correct"), STEPS)
    assert not result.ok and result.verdicts == (0, 0, 0)
    assert result.error is not None and "timeout" in result.error
    assert server.n_requests == 2
    counts = judge.metrics.as_dict()
    assert (counts["requests"], counts["timeouts"], counts["retries"]) == (2, 2, 1)


def test_a_slow_first_answer_recovers_on_retry(server: ScriptedJudge) -> None:
    judge = StepJudge(make_config(server, timeout_s=0.5, max_retries=2))
    result = judge.judge_steps("[[sleep:2.0x1]] " + reply("Step 1: correct"), ["only step"])
    assert result.ok and result.verdicts == (1,)
    assert (judge.metrics.timeouts, judge.metrics.retries, server.n_requests) == (1, 1, 2)


def test_http_500_then_success_is_retried(server: ScriptedJudge) -> None:
    judge = StepJudge(make_config(server, max_retries=2))
    result = judge.judge_steps("[[status:500x2]] " + reply("Step 1: incorrect"), ["s"])
    assert result.ok and result.verdicts == (-1,)
    assert server.n_requests == 3
    assert (judge.metrics.http_errors, judge.metrics.retries, judge.metrics.failures) == (2, 2, 0)


def test_persistent_500_is_neutral(server: ScriptedJudge) -> None:
    judge = StepJudge(make_config(server, max_retries=2))
    result = judge.judge_steps("[[status:503]] " + reply("Step 1: correct"), STEPS)
    assert not result.ok and result.verdicts == (0, 0, 0)
    assert result.error is not None and "HTTP 503" in result.error
    assert server.n_requests == 3  # one try and max_retries re-sends
    assert judge.metrics.failures == 1


def test_http_429_is_retried(server: ScriptedJudge) -> None:
    judge = StepJudge(make_config(server, max_retries=1))
    result = judge.judge_steps("[[status:429x1]] " + reply("Step 1: correct"), ["s"])
    assert result.ok and result.verdicts == (1,)
    assert (server.n_requests, judge.metrics.retries) == (2, 1)


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_client_errors_are_not_retried(server: ScriptedJudge, status: int) -> None:
    judge = StepJudge(make_config(server, max_retries=3))
    result = judge.judge_steps(f"[[status:{status}]]", STEPS)
    assert not result.ok and result.error is not None and f"HTTP {status}" in result.error
    assert (server.n_requests, judge.metrics.retries, judge.metrics.http_errors) == (1, 0, 1)


def test_connection_refused_is_neutral() -> None:
    config = JudgeConfig(base_url=f"http://127.0.0.1:{closed_port()}/v1", model="m")
    step_judge = StepJudge(config)
    code_judge = CodeJudge(client=step_judge.client)
    steps = step_judge.judge_steps("p", STEPS)
    code = code_judge.judge_code("t", "print(1)\n")
    assert not steps.ok and steps.verdicts == (0, 0, 0)
    assert not code.ok and code.score == 0.0 and dict(code.lines) == {}
    assert steps.error is not None and steps.error.startswith("connection error")
    counts = step_judge.metrics.as_dict()  # shared by both judges through the client
    assert (counts["connection_errors"], counts["retries"], counts["failures"]) == (2, 0, 2)


@pytest.mark.parametrize(
    "body",
    [
        "this is not json",
        '{"choices": []}',
        '{"choices": [{"message": {"content": null}, "finish_reason": "length"}]}',
        '{"choices": [{"message": {"content": "   "}}]}',
        '["choices"]',
    ],
)
def test_malformed_response_bodies_are_neutral(server: ScriptedJudge, body: str) -> None:
    judge = StepJudge(make_config(server))
    result = judge.judge_steps(f"[[body]]{body}[[/body]]", STEPS)
    assert not result.ok and result.verdicts == (0, 0, 0)
    assert result.error is not None and result.error.startswith("bad response")
    assert (judge.metrics.bad_responses, judge.metrics.retries) == (1, 0)


def test_an_unexpected_exception_becomes_neutral(
    server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_parser(text: str, n_steps: int) -> Any:
        raise RuntimeError("parser bug")

    monkeypatch.setattr(judge_module, "parse_step_answer", broken_parser)
    judge = StepJudge(make_config(server))
    result = judge.judge_steps(reply("Step 1: correct"), ["s"])
    assert not result.ok and result.verdicts == (0,)
    assert result.error == "internal error: RuntimeError: parser bug"
    assert judge.metrics.internal_errors == 1


# ---------------------------------------------------------------- code judge over HTTP

CODE = "import os\nprint(x)\nreturn 1\n"


def test_code_judge_parses_score_and_lines(server: ScriptedJudge) -> None:
    answer = (
        "SCORE: 4\nLINE 2: -3 (x is undefined)\nLINE 40: -1 (no such line)\n"
        "LINE 3: -5 (impact out of range)\nLINE 1: -1 (unused import)"
    )
    judge = CodeJudge(make_config(server))
    verdict = judge.judge_code("Print the value. " + reply(answer), CODE)
    assert verdict.ok and verdict.score == 4.0
    assert dict(verdict.lines) == {2: -3, 1: -1}
    assert verdict.reasons == {2: "x is undefined", 1: "unused import"}
    assert verdict.dropped == 2 and judge.metrics.dropped_entries == 2
    user = server.requests[0]["body"]["messages"][1]["content"]
    assert "1 | import os\n2 | print(x)\n3 | return 1" in user


def test_code_judge_reads_json(server: ScriptedJudge) -> None:
    answer = '{"score": 8, "lines": [{"line": 3, "impact": -2, "reason": "return at top level"}]}'
    verdict = CodeJudge(make_config(server)).judge_code(reply(answer), CODE)
    assert verdict.ok and verdict.score == 8.0 and dict(verdict.lines) == {3: -2}


def test_code_judge_without_score_is_neutral(server: ScriptedJudge) -> None:
    judge = CodeJudge(make_config(server))
    verdict = judge.judge_code(reply("LINE 2: -3 (x is undefined)\nLooks bad."), CODE)
    assert not verdict.ok and verdict.score == 0.0 and dict(verdict.lines) == {}
    assert judge.metrics.parse_failures == 1


# ---------------------------------------------------------------- batches and concurrency


def test_judge_many_bounds_concurrency_and_keeps_order(server: ScriptedJudge) -> None:
    judge = StepJudge(make_config(server, max_concurrency=3))
    verdict_words = ["correct", "incorrect", "uncertain"] * 3
    problems = [
        f"[[gather:3]] item {i} " + reply(f"Step 1: {w}") for i, w in enumerate(verdict_words)
    ]
    results = judge.judge_many(problems, [["s"]] * len(problems))
    assert [r.verdicts for r in results] == [(1,), (-1,), (0,)] * 3
    assert server.max_in_flight == 3
    assert server.n_requests == 9 and judge.metrics.timeouts == 0


def test_concurrency_bound_is_shared_across_threads(server: ScriptedJudge) -> None:
    step_judge = StepJudge(make_config(server, max_concurrency=2))
    code_judge = CodeJudge(client=step_judge.client)
    answers: dict[str, list[Any]] = {}

    def run_steps() -> None:
        problems = [f"[[gather:2]] s{i} " + reply("Step 1: correct") for i in range(4)]
        answers["steps"] = step_judge.judge_many(problems, [["s"]] * 4)

    def run_code() -> None:
        tasks = [f"[[gather:2]] c{i} " + reply("SCORE: 9") for i in range(4)]
        answers["code"] = code_judge.judge_many(tasks, ["pass"] * 4)

    threads = [threading.Thread(target=run_steps), threading.Thread(target=run_code)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.ok for r in answers["steps"] + answers["code"])
    assert server.max_in_flight == 2
    assert step_judge.metrics.judgements == server.n_requests == 8


def test_judge_many_rejects_mismatched_lengths(server: ScriptedJudge) -> None:
    judge = StepJudge(make_config(server))
    with pytest.raises(ValueError, match=r"judge_many: the input lists differ in length \(2, 1\)"):
        judge.judge_many(["a", "b"], [["s"]])
    assert judge.judge_many([], []) == []
    assert CodeJudge(client=judge.client).judge_many([], []) == []


# ---------------------------------------------------------------- cache


def test_cache_hits_skip_the_request(server: ScriptedJudge, tmp_path: Path) -> None:
    problem = reply("Step 1: correct\nStep 2: incorrect\nStep 3: correct")
    first_judge = StepJudge(make_config(server, cache_dir=str(tmp_path)))
    first = first_judge.judge_steps(problem, STEPS)
    again = first_judge.judge_steps(problem, STEPS)
    assert server.n_requests == 1
    assert not first.cached and again.cached and again.verdicts == first.verdicts == (1, -1, 1)
    assert first_judge.metrics.cache_hits == 1
    first_judge.close()

    fresh = StepJudge(make_config(server, cache_dir=str(tmp_path)))
    assert fresh.judge_steps(problem, STEPS).cached
    assert server.n_requests == 1  # the cache survives a new judge on the same directory

    other_model = StepJudge(make_config(server, cache_dir=str(tmp_path), model="other"))
    assert not other_model.judge_steps(problem, STEPS).cached
    other_steps = fresh.judge_steps(problem, [*STEPS[:2], "check: 2 * 2 + 3 = 7"])
    assert not other_steps.cached
    assert server.n_requests == 3  # a new model or a new completion is a new request


def test_failures_are_not_cached_but_the_later_success_is(
    server: ScriptedJudge, tmp_path: Path
) -> None:
    judge = CodeJudge(make_config(server, cache_dir=str(tmp_path), max_retries=0))
    task = "[[status:500x1]] " + reply("SCORE: 6\nLINE 1: -1 (style)")
    failed = judge.judge_code(task, CODE)
    recovered = judge.judge_code(task, CODE)
    cached = judge.judge_code(task, CODE)
    assert not failed.ok and recovered.ok and not recovered.cached
    assert cached.cached and cached.score == 6.0 and dict(cached.lines) == {1: -1}
    assert server.n_requests == 2
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_cache_ignores_unreadable_or_foreign_entries(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache")
    key = cache_key({"model": "m", "messages": []})
    assert cache.get(key) is None
    assert cache.put(key, "SCORE: 3", model="m")
    assert cache.get(key) == "SCORE: 3"
    umask = os.umask(0o022)
    os.umask(umask)
    assert cache.path(key).stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600
    cache.path(key).write_text("{not json", encoding="utf-8")
    assert cache.get(key) is None
    other = cache_key({"model": "n", "messages": []})
    cache.path(key).write_text(json.dumps({"key": other, "answer": "x"}), encoding="utf-8")
    assert cache.get(key) is None


def test_concurrent_cache_writes_leave_a_whole_entry(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = cache_key({"k": 1})
    answers = [f"SCORE: {i % 10} " + "x" * 5000 for i in range(16)]
    threads = [threading.Thread(target=cache.put, args=(key, a)) for a in answers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert cache.get(key) in answers
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [f"{key}.json"]


# ---------------------------------------------------------------- configuration


def test_no_api_key_sends_no_authorization_header(server: ScriptedJudge) -> None:
    StepJudge(make_config(server, api_key=None)).judge_steps(reply("Step 1: correct"), ["s"])
    assert "Authorization" not in server.requests[0]["headers"]


def test_extra_body_is_sent(server: ScriptedJudge) -> None:
    extra = {"chat_template_kwargs": {"enable_thinking": False}}
    StepJudge(make_config(server, extra_body=extra)).judge_steps(reply("Step 1: ok"), ["s"])
    assert server.requests[0]["body"]["chat_template_kwargs"] == {"enable_thinking": False}


def test_judge_reads_its_config_from_the_environment(
    server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("BOTGRPO_JUDGE_API_KEY", "BOTGRPO_JUDGE_CACHE_DIR", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BOTGRPO_JUDGE_BASE_URL", server.url)
    monkeypatch.setenv("BOTGRPO_JUDGE_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("BOTGRPO_JUDGE_MAX_RETRIES", "0")
    judge = StepJudge()
    assert judge.config.max_retries == 0
    assert judge.judge_steps(reply("Step 1: correct"), ["s"]).ok
    request = server.requests[0]
    assert request["body"]["model"] == "env-model"
    assert request["headers"]["Authorization"] == "Bearer sk-from-env"


def test_from_env_precedence_and_types() -> None:
    env = {
        "BOTGRPO_JUDGE_BASE_URL": "http://judge:8000/v1/",
        "OPENAI_BASE_URL": "https://api.openai.com/v1",
        "BOTGRPO_JUDGE_MODEL": "m",
        "BOTGRPO_JUDGE_API_KEY": "",
        "OPENAI_API_KEY": "sk-openai",
        "BOTGRPO_JUDGE_MAX_CONCURRENCY": "16",
        "BOTGRPO_JUDGE_JITTER": "0.25",
        "BOTGRPO_JUDGE_CACHE_DIR": "/tmp/judge-cache",
    }
    config = JudgeConfig.from_env(env, temperature=0.7)
    assert config.base_url == "http://judge:8000/v1"  # BOTGRPO_ wins, trailing / dropped
    assert config.api_key == "sk-openai"  # an empty variable counts as unset
    assert (config.max_concurrency, config.jitter, config.temperature) == (16, 0.25, 0.7)
    assert config.cache_dir == "/tmp/judge-cache"
    assert "sk-openai" not in repr(config)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BOTGRPO_JUDGE_MODEL": "m"}, "set BOTGRPO_JUDGE_BASE_URL or OPENAI_BASE_URL"),
        ({"OPENAI_BASE_URL": "http://h/v1"}, "set BOTGRPO_JUDGE_MODEL"),
        (
            {"OPENAI_BASE_URL": "http://h/v1", "BOTGRPO_JUDGE_MODEL": "m",
             "BOTGRPO_JUDGE_TIMEOUT_S": "soon"},
            "BOTGRPO_JUDGE_TIMEOUT_S='soon' is not a valid float",
        ),
    ],
)  # fmt: skip
def test_from_env_errors_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        JudgeConfig.from_env(env)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"base_url": "localhost:8000"}, "base_url must start with http:// or https://"),
        ({"base_url": "http://h/v1/chat/completions"}, "drop the trailing /chat/completions"),
        ({"model": " "}, "JudgeConfig.model is empty"),
        ({"temperature": -0.1}, "JudgeConfig.temperature must be >= 0.0"),
        ({"max_tokens": 0}, "JudgeConfig.max_tokens must be >= 1"),
        ({"max_tokens": 2.5}, "JudgeConfig.max_tokens must be an integer"),
        ({"timeout_s": 0}, "JudgeConfig.timeout_s must be > 0.0"),
        ({"timeout_s": float("nan")}, "JudgeConfig.timeout_s must be a finite number"),
        ({"max_retries": -1}, "JudgeConfig.max_retries must be >= 0"),
        ({"backoff_base_s": -1.0}, "JudgeConfig.backoff_base_s must be >= 0.0"),
        ({"jitter": 1.5}, "JudgeConfig.jitter must be >= 0.0 and <= 1.0"),
        ({"max_concurrency": 0}, "JudgeConfig.max_concurrency must be >= 1"),
        ({"max_concurrency": True}, "JudgeConfig.max_concurrency must be an integer"),
        ({"extra_body": {"model": "x"}}, "JudgeConfig.extra_body may not set ['model']"),
        ({"extra_body": ["x"]}, "JudgeConfig.extra_body must be a mapping"),
    ],
)
def test_config_validation_names_the_field(overrides: dict[str, Any], message: str) -> None:
    values = {"base_url": "http://localhost:8000/v1", "model": "m", **overrides}
    with pytest.raises(ValueError, match=re.escape(message)):
        JudgeConfig(**values)


def test_bad_inputs_raise_clear_errors(server: ScriptedJudge) -> None:
    step_judge = StepJudge(make_config(server))
    with pytest.raises(TypeError, match="steps must be a list of step texts"):
        step_judge.judge_steps("p", "Step 1. x = 2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"steps\[1\] is a int"):
        step_judge.judge_steps("p", ["a", 2])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"CodeJudge\.judge_code: code must be a str"):
        CodeJudge(client=step_judge.client).judge_code("t", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"config differs from client\.config"):
        CodeJudge(make_config(server, model="x"), client=step_judge.client)
    assert step_judge.judge_steps("p", []) == judge_results.StepVerdicts(verdicts=())
    assert server.n_requests == 0


# ---------------------------------------------------------------- client pieces


def test_backoff_doubles_caps_and_jitters() -> None:
    assert [backoff_delay(i, 0.5, 3.0, 0.0, 0.9) for i in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backoff_delay(2, 0.5, 3.0, 0.5, 0.0) == 2.0
    assert backoff_delay(2, 0.5, 3.0, 0.5, 0.999) == pytest.approx(1.001)


def test_retry_after_stretches_the_delay_up_to_the_cap() -> None:
    config = JudgeConfig(
        base_url="http://h/v1", model="m", backoff_base_s=0.1, backoff_max_s=2.0, jitter=0.0
    )
    with judge_client.JudgeClient(config) as client:
        assert client._delay(0, None) == 0.1
        assert client._delay(0, 1.5) == 1.5
        assert client._delay(0, 60.0) == 2.0


def test_metrics_count_snapshot_and_reset() -> None:
    metrics = JudgeMetrics()
    metrics.add("timeouts")
    metrics.add("requests", 3)
    snapshot = metrics.as_dict(prefix="judge/")
    assert snapshot["judge/timeouts"] == 1 and snapshot["judge/requests"] == 3
    assert not any(key.startswith("judge/_") for key in snapshot)
    metrics.reset()
    assert set(metrics.as_dict().values()) == {0}
    with pytest.raises(AttributeError, match="no counter 'timeout'"):
        metrics.add("timeout")


# ---------------------------------------------------------------- pure parsing: steps


@pytest.mark.parametrize(
    ("answer", "n_steps", "verdicts"),
    [
        ("Step 1: correct\nStep 2: incorrect\nStep 3: uncertain", 3, (1, -1, 0)),
        ("STEP 1: CORRECT\nstep 2: Incorrect.", 2, (1, -1)),
        ("**Step 1:** Correct\n**Step 2**: *incorrect* - sign flipped", 2, (1, -1)),
        ("- Step 1 - correct\n- Step 2 — wrong", 2, (1, -1)),
        ("1. correct\n2) incorrect\n3: unsure", 3, (1, -1, 0)),
        ("Step 1 is correct. Step 2 is fine?\nStep 2 is not correct", 2, (1, -1)),
        ("Step 1 (correct)\nStep 2 verdict: incorrect", 2, (1, -1)),
        ("Step 1: correct\nStep 1: incorrect", 1, (-1,)),  # the last verdict wins
        ("```\nStep 1: correct\nStep 2: incorrect\n```", 2, (1, -1)),
        ("Let me check.\nStep 1: The student adds 2.\nStep 1: correct", 1, (1,)),
        ("Step 1: +1\nStep 2: -1\nStep 3: 0", 3, (1, -1, 0)),
        ("Step 1: 1 + 1 = 2 so it holds\nStep 2: correct", 2, (0, 1)),
        ("Step 1: partially correct\nStep 2: correct", 2, (0, 1)),
        ("**Step 1**: ✅ correct\n**Step 2**: ❌ 4 / 2 is 2", 2, (1, -1)),
        ("Step 1: ✔️\nStep 2: ✗ incorrect", 2, (1, -1)),
        (
            "| Step | Verdict |\n|---|---|\n| 1 | correct |\n| 2 | incorrect | 7 * 8 = 56 |",
            2,
            (1, -1),
        ),
        ("| Step 1 | Correct | fine |\n| Step 2 | wrong |", 2, (1, -1)),
        ("Step 1: correct | 1 + 1 = 2\nStep 2: incorrect / the sign flips", 2, (1, -1)),
        ('{"verdicts": ["correct", "incorrect"]}', 2, (1, -1)),
        ('{"1": "correct", "Step 2": "INCORRECT"}', 2, (1, -1)),
        ('{"steps": {"1": {"verdict": "wrong"}, "2": {"verdict": "ok"}}}', 2, (-1, 1)),
        ('["correct", "uncertain", "incorrect"]', 3, (1, 0, -1)),
        ('[{"step": 2, "verdict": false}, {"step": 1, "verdict": true}]', 2, (1, -1)),
        ('Here you go: {"verdicts": [1, -1]} hope it helps', 2, (1, -1)),
        ('```json\n{"verdicts": [{"index": "1", "label": "Correct"}]}\n```', 2, (1, 0)),
        ("<think>Step 1: incorrect? Step 2: wrong</think>\nStep 1: correct", 2, (1, 0)),
        ("Step 2: incorrect\n</think>\nStep 1: correct\nStep 2: correct", 2, (1, 1)),
        (
            "Let's check each step.\nStep 1: The student gets 2x = 4. This is correct.\n"
            "Step 2: x = 3 is wrong since 4 / 2 = 2.\n\nFinal verdicts:\n"
            "Step 1: correct\nStep 2: incorrect\nStep 3: incorrect",
            3,
            (1, -1, -1),
        ),
    ],
)
def test_step_answers_parse(answer: str, n_steps: int, verdicts: tuple[int, ...]) -> None:
    result = parse_step_answer(answer, n_steps)
    assert result.ok, result.error
    assert result.verdicts == verdicts


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   \n  ",
        "The solution looks reasonable overall.",
        "Step 1: <correct|incorrect|uncertain>",
        "Step 1: correct/incorrect",
        "Step 1: correct / incorrect / uncertain",
        "Step 1: ✅ incorrect",  # the mark and the word disagree
        "Step 7: correct",  # only out-of-range steps
        "Step 0: incorrect",
        '{"verdicts": ["maybe", "perhaps"]}',
        '{"score": 7}',
        "[1, 2, 3]",
        "12 apples\n3 oranges",
        "Step one: correct",
        "```json\n{broken json\n```",
        "null",
    ],
)
def test_unusable_step_answers_are_neutral(answer: str) -> None:
    result = parse_step_answer(answer, 2)
    assert not result.ok and result.verdicts == (0, 0)
    assert result.error is not None and result.error.startswith("unparseable")


def test_step_parsing_reports_what_it_dropped() -> None:
    result = parse_step_answer("Step 1: correct\nStep 5: incorrect\nStep 1: uncertain", 2)
    assert result.ok and result.verdicts == (0, 0) and result.missing == (2,)
    assert result.dropped == 2
    assert any("not between 1 and 2" in p for p in result.problems)
    assert any("judged twice" in p for p in result.problems)


def test_step_parser_never_raises_on_non_text() -> None:
    assert not parse_step_answer(None, 2).ok  # type: ignore[arg-type]


# ---------------------------------------------------------------- pure parsing: code


@pytest.mark.parametrize(
    ("answer", "n_lines", "score", "lines", "dropped"),
    [
        ("SCORE: 7\nLINE 2: -2 (bad)", 5, 7.0, {2: -2}, 0),
        ("score: 7/10", 5, 7.0, {}, 0),
        ("**Score:** 35/50", 5, 7.0, {}, 0),
        ("SCORE: 7.5", 5, 7.5, {}, 0),
        ("SCORE: 11", 5, 10.0, {}, 0),  # clamped
        ("SCORE: -2", 5, 0.0, {}, 0),  # clamped
        ("Thinking... score: 3\nFinal:\nSCORE: 8", 5, 8.0, {}, 0),  # the last SCORE wins
        ("SCORE: 5\nLINE 1: -1\nLINE 2: -2\nLINE 3: -3\nLINE 4: -1", 5, 5.0, {1: -1, 2: -2, 3: -3}, 1),
        ("SCORE: 5\nLINE 2: -2\nLINE 2: -3", 5, 5.0, {2: -2}, 1),
        ("SCORE: 5\nLINE 0: -1\nLINE 6: -1", 5, 5.0, {}, 2),
        ("SCORE: 5\nLINE 2: -4\nLINE 3: 2\nLINE 4: -1.5", 5, 5.0, {}, 3),
        ("SCORE: 5\nLINE 2: -2.0", 5, 5.0, {2: -2}, 0),
        ("SCORE: 5\nLINE 2: \u22123 (a typographic minus)", 5, 5.0, {2: -3}, 0),
        ("SCORE: 5\n- **Line 3** (impact: -3): crashes", 5, 5.0, {3: -3}, 0),
        ("SCORE: 5\nline 4: -1 - unused variable", 5, 5.0, {4: -1}, 0),
        ('{"score": 6, "lines": [{"line": 1, "impact": -1}]}', 5, 6.0, {1: -1}, 0),
        ('{"score": "9/10", "worst_lines": {"2": -3, "3": {"impact": -2}}}', 5, 9.0, {2: -3, 3: -2}, 0),
        ('```json\n{"Score": 4, "lines": [[5, -1, "why"], [9, -1]]}\n```', 5, 4.0, {5: -1}, 1),
        ('Result: {"score": 3, "lines": []} done', 5, 3.0, {}, 0),
        ("SCORE: 5\nLINE 1: -1", 0, 5.0, {}, 1),  # empty code has no lines to flag
        ("<think>SCORE: 2\nLINE 1: -3</think>SCORE: 9", 5, 9.0, {}, 0),
        ("SCORE: 6\nLINE 2-4: -2 (a range is not one line)", 5, 6.0, {}, 1),
    ],
)  # fmt: skip
def test_code_answers_parse(
    answer: str, n_lines: int, score: float, lines: dict[int, int], dropped: int
) -> None:
    verdict = parse_code_answer(answer, n_lines)
    assert verdict.ok, verdict.error
    assert (verdict.score, dict(verdict.lines), verdict.dropped) == (score, lines, dropped)


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "Looks great!",
        "SCORE: <0-10>",
        "SCORE: seven",
        "LINE 2: -3 (undefined name)",
        '{"lines": [{"line": 1, "impact": -1}]}',
        '{"score": "high"}',
        '{"score": null}',
        "The score is unclear.",
    ],
)
def test_unusable_code_answers_are_neutral(answer: str) -> None:
    verdict = parse_code_answer(answer, 5)
    assert not verdict.ok and verdict.score == 0.0 and dict(verdict.lines) == {}
    assert verdict.error is not None and verdict.error.startswith("unparseable")


def test_code_parsing_reports_a_clamped_score() -> None:
    verdict = parse_code_answer("SCORE: 42", 3)
    assert verdict.score == 10.0 and verdict.problems == ("score 42 clamped to [0, 10]",)


# ---------------------------------------------------------------- prompts and doctests


def test_prompts_number_steps_and_lines() -> None:
    messages = judge_prompts.step_messages("What is x?", ["a", "b"])
    assert "Step 1 to Step 2" in messages[1]["content"]
    code = "\n".join(f"line{i}" for i in range(1, 11))
    assert judge_prompts.number_lines(code).splitlines()[0] == " 1 | line1"
    assert "Code (10 lines):" in judge_prompts.code_messages("t", code)[1]["content"]


@pytest.mark.parametrize(
    "module",
    [
        judges,
        judge_cache,
        judge_client,
        judge_config,
        judge_module,
        judge_parsing,
        judge_prompts,
        judge_results,
    ],
)
def test_doctests(module: Any) -> None:
    failures, attempted = doctest.testmod(module)
    assert attempted > 0 and failures == 0


# ---------------------------------------------------------------- what real endpoints send


def _body(content: Any, finish_reason: str = "stop", **message: Any) -> str:
    choice = {"message": {"role": "assistant", "content": content, **message}}
    return (
        "[[body]]"
        + json.dumps({"choices": [{**choice, "finish_reason": finish_reason}]})
        + "[[/body]]"
    )


def test_an_answer_cut_at_max_tokens_is_no_answer_and_is_not_cached(server, tmp_path) -> None:
    cut = _body("Step 1: correct\nStep 2: incorr", finish_reason="length")
    judge = StepJudge(make_config(server, cache_dir=str(tmp_path / "cache")))
    for _ in range(2):
        result = judge.judge_steps("p " + cut, STEPS[:2])
        assert not result.ok and "raise max_tokens" in result.error
    assert server.n_requests == 2 and judge.metrics.bad_responses == 2


def test_content_parts_are_joined_and_a_reasoning_only_answer_is_explained(server) -> None:
    judge = StepJudge(make_config(server))
    parts = [
        {"type": "text", "text": "Step 1: correct\n"},
        {"type": "text", "text": "Step 2: wrong"},
    ]
    assert judge.judge_steps("p " + _body(parts), STEPS[:2]).verdicts == (1, -1)
    thinking = _body("", reasoning_content="Let me check step 1...")
    result = judge.judge_steps("q " + thinking, STEPS[:2])
    assert (
        not result.ok and "reasoning_content" in result.error and "enable_thinking" in result.error
    )


def test_a_think_block_never_closed_is_a_draft_not_an_answer() -> None:
    draft = "<think>\nDraft: Step 1: incorrect\nStep 2: correct\nhmm, let me recheck"
    assert not parse_step_answer(draft, 2).ok
    assert not parse_code_answer("<think>\nSCORE: 9\nLINE 2: -1", 5).ok


def test_an_error_message_is_read_from_a_long_error_body() -> None:
    import httpx

    body = {
        "error": {"type": "auth", "request_id": "req_" + "a" * 300, "message": "invalid api key"}
    }
    response = httpx.Response(401, json=body)
    assert judge_client._error_text(response) == "'invalid api key'"


def test_retry_after_as_an_http_date() -> None:
    import email.utils
    import time

    import httpx

    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = judge_client._retry_after(httpx.Response(429, headers={"Retry-After": when}))
    assert 25 <= seconds <= 31
    assert judge_client._retry_after(httpx.Response(429, headers={"Retry-After": "soon"})) is None


def test_a_pasted_key_is_cleaned_and_a_bad_one_is_named_without_showing_it(server) -> None:
    config = make_config(server, api_key="sk-test\n")
    assert config.api_key == "sk-test"
    assert StepJudge(config).judge_steps("p " + reply("Step 1: correct"), STEPS[:1]).ok
    with pytest.raises(ValueError, match=r"api_key holds a character .* \(U\+00E9\)") as err:
        make_config(server, api_key="sk-clé-secrète")
    assert "secr" not in str(err.value)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:abc/v1", "is not a valid URL"),
        ("http://127.0.0.1:8000/v1?api-version=1", "has a query or fragment"),
        ("http:///v1", "names no host"),
    ],
)
def test_a_malformed_base_url_is_named_at_construction(url, says) -> None:
    with pytest.raises(ValueError, match=says):
        JudgeConfig(base_url=url, model="m")
    assert JudgeConfig(base_url=" http://127.0.0.1:8000/v1/ ", model="m").base_url.endswith(
        ":8000/v1"
    )


def test_closing_one_judge_leaves_a_shared_client_open(server) -> None:
    first = StepJudge(make_config(server))
    second = StepJudge(client=first.client)
    with second:
        pass
    assert first.judge_steps("p " + reply("Step 1: correct"), STEPS[:1]).ok
    first.close()


def test_a_cache_folder_that_cannot_be_made_is_named(tmp_path, server) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match=r"cache_dir .* cannot be created"):
        StepJudge(make_config(server, cache_dir=str(blocker / "cache")))
