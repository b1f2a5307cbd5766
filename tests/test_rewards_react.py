"""React rewards with the real toolchain: node, Babel, esbuild, ESLint 9, jsdom, Chromium."""

from __future__ import annotations

import base64
import doctest
import http.server
import importlib
import json
import os
import shutil
import struct
import threading
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from botgrpo.rewards.recipes.react import (
    NodeWorker,
    ReactRewardConfig,
    WorkerError,
    WorkerPool,
    check_components,
    make_react_code_reward,
    screenshot_components,
)
from botgrpo.rewards.sandbox import SpawnConfig, spawn_sandboxed
from botgrpo.tiny import build_char_tokenizer

COMPONENTS = Path(__file__).with_name("react_components")


def read(name: str) -> str:
    return (COMPONENTS / name).read_text()


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(2) as workers:
        yield workers


# name -> (compiled, rendered, blank, is_component, {(line, source, severity, rule)})
EXPECTED = {
    "valid.jsx": (True, True, False, True, set()),
    # Babel gives up at the first error: esbuild places it
    "syntax_error.jsx": (False, None, None, False, {(2, "compile", "fatal", "esbuild")}),
    "undefined_variable.jsx": (
        True,
        False,
        None,
        True,
        {(2, "lint", "error", "no-undef"), (2, "render", "fatal", "runtime-error")},
    ),
    "conditional_hook.jsx": (
        True,
        True,
        False,
        True,
        {(5, "lint", "error", "react-hooks/rules-of-hooks")},
    ),
    "missing_key.jsx": (True, True, False, True, {(5, "lint", "error", "react/jsx-key")}),
    "throws.jsx": (True, False, None, True, {(3, "render", "fatal", "runtime-error")}),
    # React itself throws: the line is the declaration of the component being rendered
    "invalid_child.jsx": (True, False, None, True, {(1, "render", "fatal", "runtime-error")}),
    "returns_null.jsx": (True, True, True, True, set()),
    "empty_div.jsx": (True, True, True, True, set()),
    # a timeout is blamed on the loop or function that was running
    "sync_loop.jsx": (True, False, None, True, {(3, "render", "fatal", "timeout")}),
    "microtask_loop.jsx": (True, False, None, True, {(5, "render", "fatal", "timeout")}),
    "timer_loop.jsx": (True, True, False, True, set()),
    "effect_no_deps.jsx": (
        True,
        False,
        None,
        True,
        {
            (5, "lint", "warning", "react-hooks/exhaustive-deps"),
            ("3 or 5", "render", "fatal", "timeout"),  # App (3) and its effect (5) loop
        },
    ),
    "after_mount.jsx": (True, True, False, True, set()),
    "typed.tsx": (True, True, False, True, set()),
    "unknown_import.jsx": (True, True, False, True, {(1, "render", "warning", "unknown-import")}),
    "not_react.jsx": (True, False, None, False, {(None, "render", "error", "not-a-component")}),
    "self_mounting.jsx": (True, True, False, True, set()),
    "browser_apis.jsx": (True, True, False, True, set()),  # canvas and fetch in an effect
    # React's component stack points at the first hook call: the declaration line is blamed
    "hook_then_invalid_child.jsx": (
        True,
        False,
        None,
        True,
        {(3, "render", "fatal", "runtime-error")},
    ),
    "imports_react.jsx": (True, True, False, True, set()),  # JSX uses React: not unused
    # structuredClone, <dialog>.showModal, Element.animate, navigator.geolocation
    "jsdom_gaps.jsx": (True, True, False, True, set()),
}


def test_every_component_gets_its_exact_verdicts_and_the_worker_stays_usable(pool):
    names = sorted(EXPECTED)
    results = check_components([read(n) for n in names], timeout_s=1.0, pool=pool)
    for name, result in zip(names, results, strict=True):
        compiled, rendered, blank, is_component, diagnostics = EXPECTED[name]
        got = {(d.line, d.source, d.severity, d.rule) for d in result.diagnostics}
        if name == "effect_no_deps.jsx":  # whichever of the two was entered last
            got = {("3 or 5", *g[1:]) if g[3] == "timeout" and g[0] in (3, 5) else g for g in got}
        assert (result.compiled, result.rendered, result.blank, result.is_component) == (
            compiled,
            rendered,
            blank,
            is_component,
        ), name
        assert got == diagnostics, name
    assert results[names.index("unknown_import.jsx")].unknown_imports == ("lucide-react",)
    [again] = check_components([read("valid.jsx")], pool=pool)
    assert again.rendered and not again.diagnostics
    assert all(w.starts == 1 for w in pool.workers)  # nothing crashed: no restart


def test_compile_and_lint_only_skips_the_render(pool):
    [result] = check_components([read("throws.jsx")], render=False, pool=pool)
    assert result.compiled and result.rendered is None and result.blank is None
    assert "render" not in result.timings_ms and "lint" in result.timings_ms


def test_bad_input_gets_a_clear_error_or_a_failed_result(pool):
    with pytest.raises(TypeError, match=r"codes\[1\] is a int"):
        check_components(["export default () => <p/>;", 3], pool=pool)
    with pytest.raises(ValueError, match=r"codes\[0\] is empty"):
        check_components(["  \n"], pool=pool)
    with pytest.raises(TypeError, match="not one str"):
        check_components("export default () => <p/>;", pool=pool)
    [huge] = check_components(["x = 1;\n" * 40000], pool=pool)
    assert not huge.compiled and huge.diagnostics[0].rule == "too-long"


# ---------------------------------------------------------------------------------------------
# Token rewards


def reward_of(text: str, pool, **config):
    tok = build_char_tokenizer()
    reward = make_react_code_reward(tok, ReactRewardConfig(**config))
    import botgrpo.rewards.recipes.react.checks as checks

    original = checks._pool
    checks._pool = pool
    try:
        [tr] = reward(
            prompts=["Build it."], completions=[text], completion_ids=[tok(text).input_ids]
        )
    finally:
        checks._pool = original
    return text, tr


def line_rows(text: str, code: str) -> list[tuple[int, int]]:
    start = text.index(code)
    rows, pos = [], start
    for line in code.splitlines(keepends=True):
        rows.append((pos, pos + len(line)))
        pos += len(line)
    return rows


def test_syntax_error_penalises_its_line_with_decay_and_leaves_prose_at_zero(pool):
    code = read("syntax_error.jsx")
    text, tr = reward_of(f"Here is the component:\n```jsx\n{code}```\nIt renders a list.", pool)
    assert tr.outcome == -1.0
    rows = line_rows(text, code)
    expected = [-0.75, -1.0, -0.75, -0.5]  # phi(d) = max(0, 1 - d/4) around line 2
    for (a, b), value in zip(rows, expected, strict=True):
        assert np.allclose(tr.local[a:b], value)
    assert np.all(tr.local[: rows[0][0]] == 0) and np.all(tr.local[rows[-1][1] :] == 0)


def test_grpo_baseline_has_the_same_outcome_and_no_local_signal(pool):
    code = read("syntax_error.jsx")
    _, bot = reward_of(f"```jsx\n{code}```\n", pool)
    _, grpo = reward_of(f"```jsx\n{code}```\n", pool, line_penalties=False)
    assert bot.outcome == grpo.outcome == -1.0
    assert np.any(bot.local != 0) and np.all(grpo.local == 0)


def test_lint_error_is_global_and_local_at_the_linter_weight(pool):
    code = read("missing_key.jsx")
    text, tr = reward_of(f"```jsx\n{code}```", pool)
    assert tr.outcome == pytest.approx(-0.1)
    rows = line_rows(text, code)
    expected = [0.0, -0.025, -0.05, -0.075, -0.1, -0.075, -0.05, -0.025]
    for (a, b), value in zip(rows, expected, strict=True):
        assert np.allclose(tr.local[a:b], value)


def test_blank_page_not_a_component_and_render_failure_terms(pool):
    _, blank = reward_of(f"```jsx\n{read('empty_div.jsx')}```", pool)
    assert blank.outcome == pytest.approx(-0.5) and np.all(blank.local == 0)
    _, off = reward_of(f"```jsx\n{read('empty_div.jsx')}```", pool, blank_score=0.0)
    assert off.outcome == 0.0
    _, plain = reward_of(f"```js\n{read('not_react.jsx')}```", pool)
    assert plain.outcome == pytest.approx(-0.3)
    _, thrown = reward_of(f"```jsx\n{read('throws.jsx')}```", pool)
    assert thrown.outcome == pytest.approx(-1.0)
    assert thrown.info["line_penalties"] == {3: -1.0}


def test_an_untagged_install_block_before_the_component_is_not_the_code():
    from botgrpo.rewards.recipes.react import extract_react_block

    text = "First:\n```\nnpm install\n```\nThen:\n```\nexport default () => <p>Hi</p>;\n```\n"
    assert extract_react_block(text).code == "export default () => <p>Hi</p>;\n"
    only = "Run:\n```\nnpm install\n```\n"  # no block looks like React: the first untagged
    assert extract_react_block(only).code == "npm install\n"


def test_no_code_block_and_an_unfenced_component(pool):
    _, none = reward_of("I cannot write that.", pool)
    assert none.outcome == -1.0 and np.all(none.local == 0)
    _, bare = reward_of(read("valid.jsx"), pool)
    assert bare.outcome == 0.0 and bare.info["rendered"] is True


def test_code_judge_adds_its_score_and_worst_lines(pool):
    tok = build_char_tokenizer()
    calls = []

    def judge(task, code):
        calls.append((task, code))
        return {"score": 8, "lines": {2: -2}}

    import botgrpo.rewards.recipes.react.checks as checks

    original, checks._pool = checks._pool, pool
    try:
        reward = make_react_code_reward(tok, code_judge=judge)
        text = f"```jsx\n{read('valid.jsx')}```"
        [tr] = reward(prompts=["Counter"], completions=[text], completion_ids=[tok(text).input_ids])
    finally:
        checks._pool = original
    assert calls == [("Counter", read("valid.jsx"))]
    assert tr.outcome == pytest.approx(0.8)
    assert tr.info["line_penalties"] == {2: pytest.approx(-0.2)}


# ---------------------------------------------------------------------------------------------
# Screenshots (headless Chromium)


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def test_screenshots_in_chromium_fresh_page_per_item(pool):
    shots = screenshot_components(
        [read("valid.jsx"), read("empty_div.jsx"), read("syntax_error.jsx")], pool=pool
    )
    assert png_size(shots[0].png) == (1280, 800)
    assert shots[0].rendered and shots[0].blank is False
    assert shots[1].png is not None and shots[1].blank is True
    assert shots[2].png is None and "compile" in shots[2].reason


def test_screenshot_judge_terms(pool):
    tok = build_char_tokenizer()
    seen = []

    def screenshot_judge(task, png):
        seen.append(png_size(png))
        return 7

    import botgrpo.rewards.recipes.react.checks as checks

    original, checks._pool = checks._pool, pool
    try:
        reward = make_react_code_reward(tok, screenshot_judge=screenshot_judge)
        texts = [f"```jsx\n{read('valid.jsx')}```", f"```jsx\n{read('syntax_error.jsx')}```"]
        ids = [tok(t).input_ids for t in texts]
        good, broken = reward(prompts=["a", "b"], completions=texts, completion_ids=ids)
    finally:
        checks._pool = original
    assert seen == [(1280, 800)]
    assert good.outcome == pytest.approx(0.7)
    assert broken.outcome == pytest.approx(-1.0 - 0.3)


# ---------------------------------------------------------------------------------------------
# Containment


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self):
        self.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    _Recorder.hits = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()


def hostile_components(marker: Path, port: int) -> list[str]:
    m = str(marker)
    return [
        # constructor-chain escape to the worker's process
        "export default function App() {\n"
        "  const p = this.constructor.constructor('return process')();\n"
        f"  p.mainModule.require('fs').writeFileSync({m!r}, 'x');\n"
        "  return <p>escaped</p>;\n}\n",
        # child_process, fs, process.exit, a socket
        f"const cp = require('child_process');\ncp.execSync('touch {m}');\n"
        "export default () => <p>x</p>;\n",
        f"import fs from 'fs';\nfs.writeFileSync({m!r}, 'x');\nexport default () => <p>x</p>;\n",
        "export default function App() {\n  process.exit(3);\n  return <p/>;\n}\n",
        "export default function App() {\n  const x = new XMLHttpRequest();\n"
        f"  x.open('GET', 'http://127.0.0.1:{port}/leak', false);\n  x.send();\n"
        "  return <p>{x.responseText}</p>;\n}\n",
        # a memory bomb: stopped by the data-segment limit or the render timeout
        "export default function App() {\n  const hoard = [];\n"
        "  for (;;) hoard.push(new Float64Array(1 << 24));\n}\n",
    ]


def test_hostile_components_fail_and_leave_no_trace(pool, tmp_path, server):
    marker = tmp_path / "pwned"
    results = check_components(hostile_components(marker, server), timeout_s=3.0, pool=pool)
    assert not marker.exists()
    assert _Recorder.hits == []
    for result in results:  # a failed render, or (the memory bomb) a worker that died
        assert not result.rendered, result
        assert any(d.source == "render" and d.severity == "fatal" for d in result.diagnostics)
    assert all(r.compiled for r in results[:-1])
    [after] = check_components([read("valid.jsx")], pool=pool)
    assert after.rendered


def test_sandboxed_node_cannot_write_the_host_or_reach_the_network(tmp_path, server):
    marker = tmp_path / "written"
    script = (
        "const fs = require('fs'); const out = {uid: process.getuid()};\n"
        f"try {{ fs.writeFileSync({str(marker)!r}, 'x'); out.write = 'ok'; }} catch (e) {{ out.write = e.code; }}\n"
        f"require('http').get('http://127.0.0.1:{server}/x', () => {{ out.net = 'ok'; }})"
        ".on('error', (e) => { out.net = e.code; console.log(JSON.stringify(out)); });\n"
    )
    with spawn_sandboxed([shutil.which("node"), "-e", script], SpawnConfig()) as proc:
        line = proc.stdout.readline().decode()
    assert '"write":"' in line and '"write":"ok"' not in line
    assert '"net":"' in line and '"net":"ok"' not in line
    assert '"uid":0' not in line
    assert not marker.exists() and _Recorder.hits == []


def test_worker_restarts_after_a_deadline_and_after_dying():
    with NodeWorker() as worker:
        code = read("sync_loop.jsx")
        with pytest.raises(WorkerError, match="no answer within"):
            worker.request({"op": "check", "code": code, "timeout_ms": 20000}, timeout_s=1.0)
        reply = worker.request({"op": "ping"}, timeout_s=30)
        assert reply["ok"] and worker.starts == 2
        from botgrpo.rewards.sandbox import isolation_modes

        assert worker.isolation == isolation_modes()[0]  # the strongest mode available
        os.killpg(worker._proc.pid, 9)  # the worker dies (as after a crash)
        worker._proc._proc.wait()
        reply = worker.request({"op": "ping"}, timeout_s=30)
        assert reply["ok"] and worker.starts == 3
        assert worker.startup_s is not None


def test_a_worker_that_breaks_after_serving_is_replaced_not_blamed_on_the_next_item():
    # A check can outlive its reply (a memory bomb dying after its verdict): the next item
    # finds the process still running but gone by the time it reads, and must get its own
    # verdict from a fresh process. Breaking the pipe makes that moment deterministic.
    with NodeWorker() as worker:
        assert worker.request({"op": "ping"}, timeout_s=30)["ok"]
        worker._proc.stdin.close()
        reply = worker.request({"op": "check", "code": read("valid.jsx")}, timeout_s=60)
        assert reply["ok"] and worker.starts == 2
    with NodeWorker() as fresh:  # a process that breaks on its first item: the item's fault
        fresh.start()
        fresh._proc.stdin.close()
        with pytest.raises(WorkerError, match="the worker died"):
            fresh.request({"op": "ping"}, timeout_s=30)
        assert fresh.starts == 1


# ---------------------------------------------------------------------------------------------
# The screenshot judge over a real OpenAI-compatible endpoint on loopback


class _VisionJudge(http.server.BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, str]] = {}  # task -> answer
    bodies: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        prompt = body["messages"][1]["content"][0]["text"]
        task = prompt.split("\n")[1]
        text = self.answers.get(task, "no score here")
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args):
        pass


@pytest.fixture()
def vision_url():
    _VisionJudge.answers, _VisionJudge.bodies = {}, []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _VisionJudge)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_screenshot_judge_scores_real_screenshots_and_fails_safe(pool, vision_url):
    from botgrpo.rewards.judges import JudgeConfig, ScreenshotJudge

    _VisionJudge.answers = {"a": "The page works.\nSCORE: 6", "b": "I cannot tell."}
    config = JudgeConfig(base_url=vision_url, model="vision", max_retries=0)
    tok = build_char_tokenizer()
    import botgrpo.rewards.recipes.react.checks as checks

    original, checks._pool = checks._pool, pool
    try:
        with ScreenshotJudge(config) as judge:
            reward = make_react_code_reward(tok, screenshot_judge=judge)
            texts = [f"```jsx\n{read('valid.jsx')}```", f"```jsx\n{read('typed.tsx')}```"]
            ids = [tok(t).input_ids for t in texts]
            scored, unparsed = reward(prompts=["a", "b"], completions=texts, completion_ids=ids)
            assert judge.metrics.failures == 1
    finally:
        checks._pool = original
    assert scored.outcome == pytest.approx(0.6)
    assert unparsed.outcome == pytest.approx(0.0)  # no score: the term is 0
    parts = _VisionJudge.bodies[0]["messages"][1]["content"]
    image = parts[1]["image_url"]["url"]
    assert image.startswith("data:image/png;base64,")
    assert png_size(base64.b64decode(image.split(",", 1)[1])) == (1280, 800)


@pytest.mark.parametrize(
    "module",
    [
        "botgrpo.rewards.recipes.react.recipe",
        "botgrpo.rewards.recipes.react.checks",
        "botgrpo.rewards.sandbox.spawn",
        "botgrpo.rewards.judges.screenshot",
    ],
)
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


# ---------------------------------------------------------------------------------------------
# The runnable recipe


def _parse_recipe(*flags: str):
    import warnings

    from botgrpo.trl.script import make_train_parser

    recipe = Path(__file__).parents[1] / "recipes" / "react_qwen2.5-3b.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_train_parser().parse_args_and_config(
            ["--config", str(recipe), "--bf16", "false", "--use_cpu", "true", *flags]
        )


def test_react_recipe_is_the_papers_setup_with_its_grpo_baseline(pool, tiny_tokenizer, monkeypatch):
    from botgrpo.trl.script import load_datasets, load_reward_funcs

    monkeypatch.chdir(Path(__file__).parents[1])  # the data path is relative to the checkout
    script, config, model = _parse_recipe()
    assert model.model_name_or_path == "Qwen/Qwen2.5-3B-Instruct"
    assert (config.preset, config.w_g, config.w_s) == ("bot", 3.0, 0.5)
    assert config.num_generations == 8 and config.generation_batch_size == 64
    train, held_out = load_datasets(script, config.seed)
    assert (len(train), len(held_out)) == (60, 20)
    assert "```jsx" in train[0]["prompt"] and train[0]["prompt"].endswith(train[0]["task"])
    assert not set(train["task"]) & set(held_out["task"])
    (bot,) = load_reward_funcs(script.reward_funcs, tiny_tokenizer, script.reward_func_kwargs)
    kwargs = '{"react_code_reward": {"config": {"line_penalties": false}}}'
    script_g, config_g, _ = _parse_recipe("--preset", "grpo", "--reward_func_kwargs", kwargs)
    (grpo,) = load_reward_funcs(script_g.reward_funcs, tiny_tokenizer, script_g.reward_func_kwargs)
    assert config_g.advantage_estimator == "grpo"
    text = f"```jsx\n{read('syntax_error.jsx')}```"
    ids = tiny_tokenizer(text).input_ids
    import botgrpo.rewards.recipes.react.checks as checks

    original, checks._pool = checks._pool, pool
    try:
        [b] = bot(prompts=["p"], completions=[text], completion_ids=[ids])
        [g] = grpo(prompts=["p"], completions=[text], completion_ids=[ids])
    finally:
        checks._pool = original
    assert b.outcome == g.outcome == -1.0
    assert b.local.min() == -1.0 and not g.local.any()


def test_a_worker_that_cannot_start_raises_instead_of_failing_items():
    from botgrpo.rewards.recipes.react import WorkerStartError

    with (
        WorkerPool(1, startup_timeout_s=0.001) as hopeless,
        pytest.raises(WorkerStartError, match="did not start"),
    ):
        check_components([read("valid.jsx")], pool=hopeless)


def test_spawn_in_each_isolation_mode_and_its_report():
    from botgrpo.rewards.sandbox import isolation_modes

    modes = isolation_modes()
    assert modes and modes[-1] == "rlimits"
    for mode in (modes[0], "rlimits"):
        with spawn_sandboxed(["/bin/cat"], SpawnConfig(), mode=mode) as proc:
            proc.stdin.write(b"ping\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == b"ping\n" and proc.isolation == mode
        report = proc.last_report  # stdin closed: cat ended, the supervisor reported
        assert report["isolation"] == mode and os.waitstatus_to_exitcode(report["wait_status"]) == 0
        assert "rlimits" in report["protections"] and "no-new-privs" in report["protections"]
    with pytest.raises(ValueError, match="absolute path"):
        spawn_sandboxed(["cat"])
    with pytest.raises(ValueError, match="memory_mb"):
        SpawnConfig(memory_mb=0)
