"""Isolated execution of untrusted programs against unit tests (used by the code reward).

See docs/code-rewards.md for the isolation layers and the defences against reward hacks.
"""

from rlvr.sandbox.executor import (
    ALLOW_WEAKER_ENV,
    STATUSES,
    Limits,
    RunResult,
    Sandbox,
    SandboxRefused,
    isolation_used,
    weaker_allowed,
)
from rlvr.sandbox.testcases import TestSuite, Unit, from_asserts, from_check

__all__ = ["ALLOW_WEAKER_ENV", "STATUSES", "Limits", "RunResult", "Sandbox", "SandboxRefused", "TestSuite", "Unit",
           "from_asserts", "from_check", "isolation_used", "weaker_allowed"]
