"""The sandbox: run untrusted, model-generated Python in an isolated, resource-limited
subprocess and report what happened (:mod:`~botgrpo.rewards.sandbox.run` holds the public
functions and the policy: isolation-mode fallback and concurrency; ``config`` and ``results``
the settings and result types; ``process`` starts one supervised process and drains its pipes;
``classify`` names its outcome; ``spawn`` starts a long-lived program (a Node worker, a
browser) under the same protections; ``seccomp`` compiles the system-call filter with
libseccomp; ``supervisor`` and ``bootstrap`` are the two scripts that run
as their own processes, isolating the program and executing it). Imports flow one way, run ->
classify -> process -> config, with results and bootstrap as leaves; the package uses the
standard library and ``pyseccomp`` (libseccomp's ctypes bindings) only and imports nothing
else of botgrpo, and ``supervisor.py`` and
``bootstrap.py`` import nothing of botgrpo at all (they run outside the caller's interpreter).
docs/rewards/sandbox.md describes the threat model and its gaps.

>>> run_python("print(sum(range(4)))").stdout
'6\\n'
"""

from botgrpo.rewards.sandbox.config import (
    ISOLATION_MODES,
    Isolation,
    SandboxConfig,
    SandboxError,
    Status,
)
from botgrpo.rewards.sandbox.results import SandboxResult, TestCaseResult, TestRunResult
from botgrpo.rewards.sandbox.run import (
    count_test_cases,
    max_concurrency,
    run_many,
    run_python,
    run_python_tests,
    run_python_tests_many,
    set_max_concurrency,
)
from botgrpo.rewards.sandbox.spawn import (
    SandboxedProcess,
    SpawnConfig,
    isolation_modes,
    spawn_sandboxed,
)

__all__ = [
    "ISOLATION_MODES",
    "Isolation",
    "SandboxConfig",
    "SandboxError",
    "SandboxResult",
    "SandboxedProcess",
    "SpawnConfig",
    "Status",
    "TestCaseResult",
    "TestRunResult",
    "count_test_cases",
    "isolation_modes",
    "max_concurrency",
    "run_many",
    "run_python",
    "run_python_tests",
    "run_python_tests_many",
    "set_max_concurrency",
    "spawn_sandboxed",
]
