"""Named kill points, for testing that a run survives being killed anywhere.

``RLVR_KILL_AT=NAME`` (or ``NAME:N``, the N-th time the point is reached) makes the process SIGKILL
itself when it reaches the point called NAME: no handler runs, no buffer is flushed, exactly as the
OOM killer or ``kill -9`` would end it. Unset (always, outside tests), a point costs one dictionary
look-up. ``benchmarks/kill_test.py`` and ``tests/test_kill_points.py`` use them; :data:`POINTS` lists
where they are.
"""

from __future__ import annotations

import os
import signal

ENV = "RLVR_KILL_AT"
POINTS = {
    "model-conversion": "GGUF -> safetensors: the converted model written aside, not yet renamed into the cache",
    "base-evaluation": "an evaluation before training (step 0) generated, not yet recorded",
    "mid-step": "a training step's rollouts generated and scored, before its update",
    "checkpoint-save": "a checkpoint's files written by the trainer, before rlvr marks it complete",
    "test-evaluation": "the final test evaluation generated, not yet recorded",
    "adapter-save": "the adapter written aside, not yet renamed into place",
    "summary-write": "summary.json about to be written",
    "eval-generation": "rlvr eval: one configuration generated, before its outputs are written",
    "experiment-stage": "rlvr experiment: a stage's outputs written, before it is recorded finished",
}
_reached: dict[str, int] = {}


def point(name: str) -> None:
    """SIGKILL this process here if ``RLVR_KILL_AT`` names this point (and its count is reached)."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    target, _, count = wanted.partition(":")
    if target != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] >= int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
