"""Isolated execution of untrusted programs against unit tests (used by the code reward).

See docs/code-rewards.md for the isolation layers and the defences against reward hacks.
"""

from rlvr.sandbox.executor import STATUSES, Limits, RunResult, Sandbox
from rlvr.sandbox.testcases import TestSuite, Unit, from_asserts, from_check

__all__ = ["STATUSES", "Limits", "RunResult", "Sandbox", "TestSuite", "Unit", "from_asserts", "from_check"]
