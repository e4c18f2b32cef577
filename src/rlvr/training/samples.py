"""Sample logging: every N steps, what the model wrote and what each reward made of it.

Each logged row holds the prompt, the completion, the extracted answer and whether
it is correct (both as the task says: :meth:`rlvr.tasks.base.Task.shown_answer`,
:meth:`~rlvr.tasks.base.Task.correct_from_rewards`), every raw reward component,
the weighted total, the advantage, and whether the row was dropped or resampled by
the zero-variance control. Rows go to ``<output_dir>/samples.jsonl`` (one JSON
object per completion, with its step) and to MLflow as the artifact
``samples/samples.jsonl``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.rewards.base import completion_text
from rlvr.training.health import TrainerCallback, append_jsonl, log_artifact

SAMPLES_FILE = "samples.jsonl"


def sample_records(step: int, rows: list[dict[str, Any]], limit: int | None = None, task: Any = None) -> list[dict[str, Any]]:
    """JSON-ready sample rows for ``step`` (the first ``limit`` rows of the batch; None: all)."""
    chosen = rows if limit is None else rows[:limit]
    return [
        {
            "step": step,
            "prompt": _text(row["prompt"]),
            "completion": completion_text(row["completion"]),
            "extracted_answer": task.shown_answer(row["completion"]) if task is not None else None,
            "correct": task.correct_from_rewards(row["rewards"]) if task is not None else None,
            "rewards": row["rewards"],
            "reward": row["reward"],
            "advantage": row.get("advantage"),
            "dropped": row.get("dropped", False),
            "resampled": row.get("resampled", False),
        }
        for row in chosen
    ]


def _text(prompt: Any) -> str:
    if isinstance(prompt, list):
        return "\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in prompt if isinstance(m, dict))
    return str(prompt)


class SampleCallback(TrainerCallback):
    """Writes the latest training batch every ``every`` steps (``limit`` rows of it)."""

    def __init__(self, trainer: Any, every: int = 5, limit: int | None = 16, task: Any = None):
        self.trainer = trainer
        self.every = every
        self.limit = limit
        self.task = task
        self.path = Path(trainer.args.output_dir) / SAMPLES_FILE

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        batch = self.trainer.last_batch
        if not state.is_world_process_zero or not batch or not self.every or state.global_step % self.every:
            return
        for record in sample_records(state.global_step, batch["rows"], self.limit, self.task):
            append_jsonl(self.path, record)
        log_artifact(self.path, "samples")
