"""Runs inside the sandbox: executes ``solution.py``, or runs test cases against it.

The sandbox starts the interpreter as ``python -s -B -c <this file's source> MODE [--block-network]``
in a working directory that holds ``solution.py``. Two modes:

- ``script``: run ``solution.py`` as ``__main__``, like ``python solution.py``, except that
  tracebacks name the file ``solution.py`` (relative), so line numbers map straight back to the
  candidate code.
- ``tests``: read a job (JSON) from stdin, then replace stdin with ``/dev/null``; import
  ``solution.py`` as the module ``solution``; run every test case in its own
  ``with __botgrpo_case__(i):`` block and report each outcome as one line, prefixed by the job's
  nonce, on the job's report file descriptor (not stdout, which the candidate controls).

:func:`plan_test_program` is also imported by :mod:`botgrpo.rewards.sandbox.run` to count the test
cases exactly as this harness will number them. Only the standard library may be used here,
and only ``os``, ``sys`` and ``types`` are imported up front: a plain script run should not pay
for importing ``ast``, ``json`` and ``traceback`` at every start.
"""

from __future__ import annotations

import os
import sys
import types

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import ast

SOLUTION_FILE = "solution.py"
"""Name of the candidate's file in the sandbox's working directory (and in its tracebacks)."""
TESTS_FILE = "tests.py"
"""File name given to a test program in tracebacks (the test source is never written to disk)."""
CASE_HOOK = "__botgrpo_case__"
"""Name of the context manager that wraps each test case in the rewritten test program."""

_BOOT_FILE = sys._getframe().f_code.co_filename
_MAX_TEXT = 4000


# ---------------------------------------------------------------------------------------------
# Test programs


def plan_test_program(source: str) -> tuple[ast.Module, list[int], int]:
    """Rewrite a test program so that every test case runs, and reports, on its own.

    A test case is a top-level statement that checks: it contains an ``assert`` or a
    ``raise`` (a bare assert, a loop or ``if`` holding asserts, ``try: ... else: raise``),
    expects an exception (``with pytest.raises(...)``), or calls a function of the program
    that asserts or raises (``assert_close(candidate(x), y)``), either at module level or in
    the body of a top-level ``def check(candidate)`` (the HumanEval layout). Other statements (imports, constants,
    helper definitions) run as they are. A body with no assert at all (a ``check`` that raises
    on failure, or a test script without ``check``) counts as one test case when it calls or
    raises something; imports, constants and definitions alone are no case. A script's
    ``if __name__ == "__main__":`` block runs in place. What pytest and unittest would collect
    is a case each, after the module's own (:func:`_collected_tests`): pytest's test functions
    and ``Test*`` classes, one case per parameter set of a written-out ``parametrize`` table,
    and every ``test*`` method of a ``TestCase`` class (run by its ``debug()``;
    ``unittest.main()`` is dropped); a test that needs a pytest fixture is refused. Cases are
    numbered module level first, then ``check``'s body, in source order.

    Returns the rewritten module, the first source line of each case, and how many of the
    cases sit at module level.

    >>> tree, lines, n_module = plan_test_program(
    ...     "def check(candidate):\\n    assert candidate(1) == 2\\n    assert candidate(2) == 3\\n"
    ... )
    >>> lines, n_module
    ([2, 3], 0)
    """
    import ast

    tree = ast.parse(source, TESTS_FILE)
    tree.body = _unwrap_main_guard(tree.body)
    check = find_check(tree)
    collected = _collected_tests(tree)
    if collected:
        tree.body = [s for s in tree.body if not _runs_unittest_main(s)]
    case_lines: list[int] = []
    whole = check is None and not collected
    helpers = _checking_helpers(tree)
    tree.body = _wrap_cases(tree.body, case_lines, whole_if_none=whole, helpers=helpers)
    for stmts in collected:  # pytest's tests, unittest's test methods: one case each
        tree.body.append(_case_block(stmts, case_lines))
    n_module = len(case_lines)
    if check is not None:
        check.body = _wrap_cases(check.body, case_lines, whole_if_none=True, helpers=helpers)
    ast.fix_missing_locations(tree)
    return tree, case_lines, n_module


def _unwrap_main_guard(body: list[ast.stmt]) -> list[ast.stmt]:
    """A test script's ``if __name__ == "__main__":`` block runs, as ``python tests.py`` would
    run it (the test program is not ``__main__`` here): its statements take the block's place."""
    import ast

    out: list[ast.stmt] = []
    for stmt in body:
        test = stmt.test if isinstance(stmt, ast.If) else None
        guard = (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__"
        )
        out.extend(stmt.body if guard else [stmt])  # type: ignore[union-attr]
    return out


def _collected_tests(tree: ast.Module) -> list[list[ast.stmt]]:
    """What pytest and unittest would collect and the program does not run itself, as the
    statements of one case each:

    - every top-level ``def test*`` (``async def`` runs under ``asyncio.run``), called once per
      parameter set of its ``@pytest.mark.parametrize`` decorators (stacked ones multiply);
      a literal list of sets is one case per set, any other expression one case for all;
    - every ``test*`` method of a top-level ``class Test*`` without ``__init__`` (pytest's
      plain test classes: a new instance per test, ``setup_method``/``teardown_method`` around
      it), parametrized the same way;
    - ``Cls("test_m").debug()`` (set-up, the test, tear-down; a failure raises) for each
      ``test*`` method of a top-level class deriving from a ``...TestCase``;
    - class-level set-up (``setUpClass``, pytest's ``setup_class``) before a class's first
      case and tear-down after its last; module-level (``setUpModule``, ``setup_module``)
      before the first case and after the last;
    - a test or class marked to be skipped or expected to fail (``@pytest.mark.skip``,
      ``@pytest.mark.xfail``, ``@unittest.skip``, ``@unittest.expectedFailure``) is no case;
      a conditional skip (``skipif``, ``skipIf``) runs the test.

    A test that needs a pytest fixture (an argument neither parametrized nor defaulted) cannot
    run here and is refused with a ValueError naming it, rather than left out."""
    import ast

    called = {
        n.func.id
        for s in tree.body
        if not _is_definition(s)
        for n in ast.walk(s)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    cases: list[list[ast.stmt]] = []
    for stmt in tree.body:
        if _skipped(stmt):
            continue
        if _is_test_function(stmt) and stmt.name not in called:  # type: ignore[union-attr]
            cases += _function_cases(stmt, stmt.name, None)  # type: ignore[arg-type]
        elif isinstance(stmt, ast.ClassDef) and any(_is_test_case(b) for b in stmt.bases):
            mine = []
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                    if _skipped(item):
                        continue
                    make = ast.Call(ast.Name(stmt.name, ast.Load()), [ast.Constant(item.name)], [])
                    debug = ast.Call(ast.Attribute(make, "debug", ast.Load()), [], [])
                    mine.append([ast.copy_location(ast.Expr(debug), item)])
            cases += _around_class(mine, stmt, "setUpClass", "tearDownClass")
        elif isinstance(stmt, ast.ClassDef) and _is_pytest_class(stmt):
            mine = []
            for item in stmt.body:
                if _is_test_function(item) and not _skipped(item):
                    mine += _function_cases(item, item.name, stmt.name)  # type: ignore[arg-type]
            cases += _around_class(mine, stmt, "setup_class", "teardown_class")
    names = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    for setup, teardown in (("setUpModule", "tearDownModule"), ("setup_module", "teardown_module")):
        if cases and setup in names:
            cases[0] = [*_calls(setup, cases[0][0]), *cases[0]]
        if cases and teardown in names:
            cases[-1] = _with_finally(cases[-1], _calls(teardown, cases[-1][0]))
    return cases


#: Decorators after which pytest or unittest does not count a test as run or passed: skipped
#: unconditionally, or expected to fail. (A conditional skip, ``skipif``, runs the test.)
_SKIP_MARKS = frozenset({"skip", "xfail", "expectedFailure"})


def _skipped(stmt: ast.stmt) -> bool:
    """Whether a test function or class carries ``@pytest.mark.skip``, ``@pytest.mark.xfail``,
    ``@unittest.skip(...)`` or ``@unittest.expectedFailure``: it is no case."""
    import ast

    if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return False
    for dec in stmt.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if getattr(target, "attr", getattr(target, "id", "")) in _SKIP_MARKS:
            return True
    return False


def _calls(name: str, where: ast.AST, owner: str | None = None) -> list[ast.stmt]:
    """``owner.name()`` (or ``name()``) as statements placed at ``where``."""
    import ast

    stmts = ast.parse(f"{owner}.{name}()" if owner else f"{name}()").body
    for s in stmts:
        for node in ast.walk(s):
            ast.copy_location(node, where)
    return stmts


def _with_finally(body: list[ast.stmt], final: list[ast.stmt]) -> list[ast.stmt]:
    import ast

    return [ast.copy_location(ast.Try(body=body, handlers=[], orelse=[], finalbody=final), body[0])]


def _around_class(
    cases: list[list[ast.stmt]], cls: ast.ClassDef, setup: str, teardown: str
) -> list[list[ast.stmt]]:
    """A class's cases with its class-level set-up run before the first and its tear-down
    after the last, when the class defines them (unittest's ``setUpClass``, pytest's
    ``setup_class``); a failing set-up fails that first case."""
    import ast

    defined = {s.name for s in cls.body if isinstance(s, ast.FunctionDef)}
    if not cases:
        return cases
    if setup in defined:
        cases[0] = [*_calls(setup, cases[0][0], cls.name), *cases[0]]
    if teardown in defined:
        cases[-1] = _with_finally(cases[-1], _calls(teardown, cases[-1][0], cls.name))
    return cases


def _is_test_function(stmt: ast.stmt) -> bool:
    import ast

    return isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name.startswith("test")


def _is_pytest_class(cls: ast.ClassDef) -> bool:
    """pytest's rule: a class named ``Test*`` without ``__init__``."""
    import ast

    return cls.name.startswith("Test") and not any(
        isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in cls.body
    )


def _parametrize(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[list[str], ast.expr]]:
    """The (argument names, argument values) of each ``@...parametrize(...)`` decorator."""
    import ast

    out = []
    for dec in func.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else None
        name = getattr(target, "attr", getattr(target, "id", ""))
        if name != "parametrize" or not isinstance(dec, ast.Call):
            continue
        args = list(dec.args) + [
            k.value for k in dec.keywords if k.arg in ("argnames", "argvalues")
        ]
        if len(args) < 2:
            raise ValueError(f"{func.name}: a parametrize decorator needs argnames and argvalues")
        names_node, values = args[0], args[1]
        if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
            names = [n.strip() for n in names_node.value.split(",") if n.strip()]
        elif isinstance(names_node, ast.List | ast.Tuple) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names_node.elts
        ):
            names = [e.value for e in names_node.elts]  # type: ignore[attr-defined]
        else:
            raise ValueError(
                f"{func.name}: parametrize's argument names must be written out (a string or a "
                f"list of strings)"
            )
        out.append((names, values))
    return out


def _row_source(names: list[str], row: ast.expr) -> str | None:
    """Keyword arguments for one literal parameter set, or None when it is not literal."""
    import ast

    if (
        isinstance(row, ast.Call)
        and getattr(row.func, "attr", getattr(row.func, "id", "")) == "param"
    ):
        values = list(row.args)
    elif len(names) == 1:
        values = [row]
    elif isinstance(row, ast.Tuple | ast.List):
        values = list(row.elts)
    else:
        return None
    if len(values) != len(names) or any(isinstance(v, ast.Starred) for v in values):
        return None
    return ", ".join(f"{n}=({ast.unparse(v)})" for n, v in zip(names, values, strict=True))


def _function_cases(
    func: ast.FunctionDef | ast.AsyncFunctionDef, name: str, cls: str | None
) -> list[list[ast.stmt]]:
    import ast
    import itertools

    params = _parametrize(func)
    given = {n for names, _ in params for n in names}
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    if cls is not None and positional:
        positional = positional[1:]  # self
    n_default = len(a.defaults)
    required = [p.arg for p in positional[: len(positional) - n_default]]
    required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    fixtures = [r for r in required if r not in given]
    if fixtures:
        what = "a pytest fixture" if len(fixtures) == 1 else "pytest fixtures"
        raise ValueError(
            f"the test {name} needs {', '.join(fixtures)}, {what} (an argument neither "
            f"parametrized nor given a default), and fixtures are not run here: drop the "
            f"argument, or parametrize it with @pytest.mark.parametrize"
        )
    rows = [
        [_row_source(names, r) for r in values.elts]
        if isinstance(values, ast.List | ast.Tuple)
        else [None]
        for names, values in params
    ]
    literal = all(None not in r for r in rows)
    calls: list[str] = []
    if literal:
        calls = [", ".join(combo) for combo in itertools.product(*rows)]
    else:  # one case, a loop over every parameter set
        loops, kwargs = [], []
        for i, (names, values) in enumerate(params):
            row = f"__botgrpo_row{i}"
            plain = f"({row},)" if len(names) == 1 else row
            loops.append(
                f"for {row} in ({ast.unparse(values)}):\n"
                f"    {row} = {row}.values if type({row}).__name__ == 'ParameterSet' else {plain}"
            )
            kwargs += [f"{n}={row}[{j}]" for j, n in enumerate(names)]
        calls = [", ".join(kwargs)]
    owner = f"{cls}()" if cls is not None else None
    cases = []
    for args in calls:
        target = f"__botgrpo_obj.{name}" if owner else name
        call = f"{target}({args})"
        if isinstance(func, ast.AsyncFunctionDef):
            call = f"__import__('asyncio').run({call})"
        if owner:
            body = (
                f"__botgrpo_obj = {owner}\n"
                f"getattr(__botgrpo_obj, 'setup_method', lambda m: None)({target})\n"
                f"try:\n    {call}\n"
                f"finally:\n    getattr(__botgrpo_obj, 'teardown_method', lambda m: None)({target})"
            )
        else:
            body = call
        if not literal:
            body = _nest(loops, body)
        stmts = ast.parse(body).body
        for s in stmts:
            for node in ast.walk(s):
                ast.copy_location(node, func)
        cases.append(stmts)
    return cases


def _nest(loops: list[str], body: str) -> str:
    """``body`` inside the loops, each loop (a header and its first statement) one level in."""
    lines: list[str] = []
    for depth, loop in enumerate(loops):
        lines += ["    " * depth + line for line in loop.split("\n")]
    lines += ["    " * len(loops) + line for line in body.split("\n")]
    return "\n".join(lines)


def _is_test_case(base: ast.expr) -> bool:
    import ast

    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    return isinstance(base, ast.Attribute | ast.Name) and name.endswith("TestCase")


def _runs_unittest_main(stmt: ast.stmt) -> bool:
    """``unittest.main()`` (its runner exits the process): the collected cases replace it."""
    import ast

    call = stmt.value if isinstance(stmt, ast.Expr) else None
    func = call.func if isinstance(call, ast.Call) else None
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "main"
        and isinstance(func.value, ast.Name)
        and func.value.id == "unittest"
    )


def find_check(tree: ast.Module) -> ast.FunctionDef | None:
    """The last top-level ``def check(...)`` of a test program, or None."""
    import ast

    checks = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
    return checks[-1] if checks else None


def _is_definition(stmt: ast.stmt) -> bool:
    import ast

    return isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)


def _checking_helpers(tree: ast.Module) -> frozenset[str]:
    """Names of the program's top-level functions that check something (hold an ``assert`` or
    a ``raise``): calling one, as ``assert_close(candidate(x), y)``, is a test case."""
    import ast

    return frozenset(
        s.name
        for s in tree.body
        if isinstance(s, ast.FunctionDef)
        and s.name != "check"
        and any(isinstance(n, ast.Assert | ast.Raise) for n in ast.walk(s))
    )


def _is_case(stmt: ast.stmt, helpers: frozenset[str] = frozenset()) -> bool:
    """A statement that checks: it holds an ``assert`` or a ``raise`` (``try: ... else: raise
    AssertionError``), expects an exception (``with pytest.raises(...)``,
    ``self.assertRaises``), or calls a checking helper of the program."""
    import ast

    if _is_definition(stmt):
        return False
    if any(isinstance(n, ast.Assert | ast.Raise) for n in ast.walk(stmt)):
        return True
    if isinstance(stmt, ast.With) and any(_expects_raise(i.context_expr) for i in stmt.items):
        return True
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in helpers
    )


def _expects_raise(expr: ast.expr) -> bool:
    """``pytest.raises(...)``, ``raises(...)``, ``self.assertRaises(...)`` and the like."""
    import ast

    if not isinstance(expr, ast.Call):
        return False
    name = getattr(expr.func, "attr", getattr(expr.func, "id", ""))
    return name in ("raises", "warns", "assertRaises", "assertRaisesRegex", "assertWarns")


def _is_future_import(stmt: ast.stmt) -> bool:
    import ast

    return isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"


def _can_fail(stmt: ast.stmt) -> bool:
    """Whether a statement outside a definition can find a fault: it calls something or raises
    (imports, constants and definitions alone check nothing)."""
    import ast

    if _is_definition(stmt) or isinstance(stmt, ast.Import | ast.ImportFrom):
        return False
    return any(isinstance(n, ast.Call | ast.Raise | ast.Assert) for n in ast.walk(stmt))


def _wrap_cases(
    body: list[ast.stmt],
    case_lines: list[int],
    whole_if_none: bool,
    helpers: frozenset[str] = frozenset(),
) -> list[ast.stmt]:
    if any(_is_case(stmt, helpers) for stmt in body):
        return [_case_block([s], case_lines) if _is_case(s, helpers) else s for s in body]
    head = [s for s in body if _is_future_import(s)]
    rest = [s for s in body if not _is_future_import(s)]
    if not whole_if_none or not any(_can_fail(s) for s in rest):
        return body
    return [*head, _case_block(rest, case_lines)]


def _case_block(stmts: list[ast.stmt], case_lines: list[int]) -> ast.With:
    import ast

    index = len(case_lines)
    case_lines.append(stmts[0].lineno)
    hook = ast.Call(ast.Name(CASE_HOOK, ast.Load()), [ast.Constant(index)], [])
    block = ast.With(items=[ast.withitem(context_expr=hook)], body=stmts)
    return ast.copy_location(block, stmts[0])


# ---------------------------------------------------------------------------------------------
# Errors


def _strip_boot_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    while tb is not None and tb.tb_frame.f_code.co_filename == _BOOT_FILE:
        tb = tb.tb_next
    return tb


def _format_exception(exc: BaseException) -> str:
    """The traceback as Python prints it, without this harness's own leading frames; the test
    sources are in ``linecache`` only while it is formatted (never while candidate code runs)."""
    import linecache
    import traceback

    tb = _strip_boot_frames(exc.__traceback__)
    for filename, source in _SOURCES.items():
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        return "".join(traceback.format_exception(type(exc), exc, tb))
    except Exception:  # a hostile __str__ or __repr__
        return f"{type(exc).__name__}: <unprintable exception>\n"
    finally:
        for filename in _SOURCES:
            linecache.cache.pop(filename, None)


def _solution_lines(exc: BaseException) -> list[int]:
    """Line numbers in solution.py on the exception's traceback, outermost first."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    lines = [f.lineno for f in frames if f.filename == SOLUTION_FILE and f.lineno]
    if isinstance(exc, SyntaxError) and exc.filename == SOLUTION_FILE and exc.lineno:
        lines.append(exc.lineno)
    return lines


def _describe(exc: BaseException) -> dict[str, object]:
    text = _format_exception(exc)
    last = text.strip().splitlines()[-1] if text.strip() else type(exc).__name__
    return {
        "error": last[:_MAX_TEXT],
        "traceback": text[-_MAX_TEXT:],
        "solution_lines": _solution_lines(exc),
    }


# ---------------------------------------------------------------------------------------------
# Running


def _load_solution(module_name: str) -> types.ModuleType:
    """Execute solution.py as a fresh module registered under ``module_name``."""
    with open(SOLUTION_FILE, encoding="utf-8") as handle:
        source = handle.read()
    module = types.ModuleType(module_name)
    module.__file__ = SOLUTION_FILE
    sys.modules[module_name] = module
    exec(compile(source, SOLUTION_FILE, "exec", dont_inherit=True), module.__dict__)
    return module


def _run_script() -> int:
    sys.argv = [SOLUTION_FILE]
    try:
        _load_solution("__main__")
    except SystemExit:
        raise
    except BaseException as exc:
        sys.stdout.flush()
        sys.stderr.write(_format_exception(exc))
        return 1
    return 0


class _Reporter:
    """Writes nonce-prefixed JSON lines to the report file descriptor."""

    def __init__(self, fd: int, nonce: str) -> None:
        import json

        self.fd = fd
        self.nonce = nonce
        self.seen: set[int] = set()
        # taken before the candidate runs: replacing json.dumps or os.write later changes nothing
        self._dumps, self._write = json.dumps, os.write

    def emit(self, record: dict[str, object]) -> None:
        line = f"{self.nonce} {self._dumps(record)}\n".encode()
        while line:
            line = line[self._write(self.fd, line) :]

    def case(self, index: int) -> _Case:
        return _Case(self, index)


class _Case:
    """Context manager around one test case: reports pass/fail and swallows the failure."""

    def __init__(self, reporter: _Reporter, index: int) -> None:
        self.reporter = reporter
        self.index = index

    def __enter__(self) -> None:
        self.reporter.seen.add(self.index)

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> bool:
        record: dict[str, object] = {"case": self.index, "passed": exc is None}
        if exc is not None and _is_skip(exc):
            record = {"case": self.index, "skipped": True}  # not run: not counted
        elif exc is not None:
            record.update(_describe(exc))
        self.reporter.emit(record)
        return True


def _is_skip(exc: BaseException) -> bool:
    """A test skipped by its own program (``@unittest.skipIf``, ``pytest.skip(...)``), not
    by the candidate: raised with no frame of solution.py on its traceback."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"SkipTest", "Skipped"}) and not _solution_lines(exc)


def _read_job() -> dict:
    import json

    job = json.loads(sys.stdin.buffer.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return job


def _run_tests(job: dict) -> int:
    reporter = _Reporter(job["report_fd"], job["nonce"])
    try:
        module = _load_solution("solution")
    except BaseException as exc:
        reporter.emit({"load_error": _describe(exc)})
        return 1
    import builtins

    # the solution's functions and imports, but not its own `abs` or `len` in the tests' place
    shadows = set(vars(builtins))
    namespace = {k: v for k, v in vars(module).items() if k not in shadows}
    namespace["__name__"] = "__tests__"
    namespace[CASE_HOOK] = reporter.case
    if job.get("entry_point"):
        candidate = getattr(module, job["entry_point"], None)
        if not callable(candidate):
            message = f"solution.py does not define a function named {job['entry_point']!r}"
            reporter.emit({"load_error": {"error": message, "traceback": "", "solution_lines": []}})
            return 1
        namespace["candidate"] = candidate
    if "snippets" in job:
        _run_snippets(job["snippets"], namespace, reporter)
    else:
        _run_program(job["tests"], namespace, reporter)
    reporter.emit({"done": True})
    return 0


_SOURCES: dict[str, str] = {}


def _remember_source(filename: str, source: str) -> None:
    """Let tracebacks quote lines of a test file that exists only in memory (put into
    ``linecache`` by :func:`_format_exception` only while it formats one)."""
    _SOURCES[filename] = source


def _run_snippets(snippets: list[str], namespace: dict, reporter: _Reporter) -> None:
    for index, snippet in enumerate(snippets):
        filename = f"test_{index}.py"
        _remember_source(filename, snippet)
        with reporter.case(index):
            exec(compile(snippet, filename, "exec", dont_inherit=True), namespace)


def _run_program(source: str, namespace: dict, reporter: _Reporter) -> None:
    """Run the rewritten test program, then ``check(candidate)`` unless it already ran."""
    _remember_source(TESTS_FILE, source)
    tree, case_lines, n_module = plan_test_program(source)
    try:
        exec(compile(tree, TESTS_FILE, "exec", dont_inherit=True), namespace)
        check_ran = any(i in reporter.seen for i in range(n_module, len(case_lines)))
        if find_check(tree) is not None and not check_ran:
            namespace["check"](namespace.get("candidate"))
    except BaseException as exc:
        reporter.emit({"setup_error": _describe(exc)})


def _block_network() -> None:
    """Refuse to create any socket but AF_UNIX (an audit hook; used when no network namespace)."""
    import socket

    def hook(event: str, args: tuple) -> None:
        if event == "socket.__new__" and args[1] != socket.AF_UNIX:
            raise PermissionError("network access is disabled in this sandbox")

    sys.addaudithook(hook)


def main(args: list[str]) -> int:
    """Entry point inside the sandbox; ``args`` are the interpreter's arguments after ``-c``."""
    if "--block-network" in args:
        _block_network()
        args = [a for a in args if a != "--block-network"]
    if args and args[0] == "script":
        return _run_script()
    if args and args[0] == "tests":
        return _run_tests(_read_job())
    sys.stderr.write(f"sandbox bootstrap: unknown mode {args!r}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
