"""Run health: per-batch metrics, advantage histograms, and warnings when a GRPO run is not learning.

The trainer (:class:`rlvr.training.trainer.RlvrGRPOTrainer`) adds :func:`batch_metrics`
to TRL's own metrics each step, so they reach the console and every
``report_to`` tracker through ``Trainer.log``. :class:`HealthCallback` writes
them to ``<output_dir>/health/`` (``metrics.jsonl``, ``advantages.jsonl``,
``warnings.jsonl``, also logged as MLflow artifacts) and prints a warning,
naming the knob that usually helps, when a run looks unhealthy for several
logged steps in a row. ``docs/health.md`` lists every metric and warning.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

#: Fixed histogram bin edges for advantages, so histograms of different steps line up.
HISTOGRAM_EDGES = [round(-4.0 + 0.25 * i, 2) for i in range(33)]
HEALTH_DIR = "health"


def batch_metrics(rows: list[dict[str, Any]], task: Any, advantages: Any, dropped: Any) -> dict[str, float]:
    """Accuracy, format rate and the spread of the advantages that enter the update.

    The task reads whether each row is correct (and well formed) off its raw reward components
    (:meth:`rlvr.tasks.base.Task.correct_from_rewards`); a metric the task cannot read from the
    recipe's rewards is left out rather than guessed.
    """
    metrics: dict[str, float] = {}
    if task is not None and rows:
        for label, read in (("health/accuracy", task.correct_from_rewards),
                            ("health/format_rate", task.well_formed_from_rewards)):
            verdicts = [read(row["rewards"]) for row in rows]
            if None not in verdicts:
                metrics[label] = sum(verdicts) / len(verdicts)
    kept = advantages[~dropped.bool()] if dropped is not None else advantages
    if kept.numel():
        metrics["advantages/mean"] = kept.mean().item()
        metrics["advantages/std"] = kept.std().item() if kept.numel() > 1 else 0.0
        metrics["advantages/min"] = kept.min().item()
        metrics["advantages/max"] = kept.max().item()
    return metrics


def histogram(values: list[float], edges: list[float] = HISTOGRAM_EDGES) -> list[int]:
    """Counts per bin; values outside the edges land in the first or last bin."""
    counts = [0] * (len(edges) - 1)
    for value in values:
        index = 0
        while index < len(counts) - 1 and value >= edges[index + 1]:
            index += 1
        counts[index] += 1
    return counts


@dataclass
class HealthWarning:
    code: str
    message: str


@dataclass
class Rule:
    """A health check over the last ``patience`` logged steps (``window``) and the run's first ones (``start``)."""

    code: str
    check: Callable[[list[dict[str, Any]], list[dict[str, Any]]], bool]
    message: str


Window = list[dict[str, Any]]


def _all(key: str, test: Callable[[float], bool]) -> Callable[[Window, Window], bool]:
    return lambda window, start: all(key in logs and logs[key] is not None and test(logs[key]) for logs in window)


def _format_saturated(window: Window, start: Window) -> bool:
    """Format saturated while accuracy is flat in the window and no higher than when the run started.

    Flat within the window alone is not enough: batch accuracy swings by tens of points between steps
    (a few prompts each), so three close values happen by chance in a run that has learnt.
    """
    if not _all("health/format_rate", lambda v: v >= 0.95)(window, start):
        return False
    accuracy = [logs.get("health/accuracy") for logs in window]
    first = [logs.get("health/accuracy") for logs in start]
    if None in accuracy or None in first:
        return False
    return max(accuracy) - min(accuracy) < 0.05 and mean(accuracy) < mean(first) + 0.05


def _kl_exploding(window: Window, start: Window) -> bool:
    kl = [logs.get("kl") for logs in window]
    if None in kl or not kl:
        return False
    rising = all(b > a for a, b in zip(kl, kl[1:], strict=False)) and kl[-1] > 4 * max(kl[0], 1e-3)
    return kl[-1] > 0.5 and (rising or min(kl) > 0.5)


RULES = [
    Rule(
        "zero_variance",
        _all("zero_variance/share", lambda v: v > 0.8),
        "more than 80% of groups have identical rewards, so they give no gradient. Usually helps: a larger "
        "grpo.num_generations or temperature, prompts of the right difficulty (rlvr filter), or "
        "run.zero_variance_groups=resample.",
    ),
    Rule(
        "format_only",
        _format_saturated,
        "the format reward is saturated while accuracy stays flat: the model learned the answer format, not the "
        "answers. Usually helps: a lower format weight, partial credit (the intermediate_steps reward), a higher "
        "learning rate, or easier prompts.",
    ),
    Rule(
        "truncated",
        _all("completions/clipped_ratio", lambda v: v > 0.5),
        "most completions hit grpo.max_completion_length before finishing. Usually helps: a larger "
        "max_completion_length, or grpo.mask_truncated_completions=true so cut-off text is not trained on.",
    ),
    Rule(
        "kl_exploding",
        _kl_exploding,
        "the KL to the reference model is large and rising: the policy is drifting fast. Usually helps: a larger "
        "grpo.beta, a lower learning_rate, or run.advantage_clip.",
    ),
]


class HealthMonitor:
    """Feeds logged steps through :data:`RULES`; each warning fires once until its condition clears."""

    def __init__(self, patience: int = 3, rules: list[Rule] | None = None):
        self.patience = max(1, patience)
        self.rules = RULES if rules is None else rules
        self.history: list[dict[str, Any]] = []
        self.active: set[str] = set()

    def update(self, logs: dict[str, Any]) -> list[HealthWarning]:
        self.history.append(dict(logs))
        window = self.history[-self.patience :]
        fired = []
        for rule in self.rules:
            unhealthy = len(window) >= self.patience and rule.check(window, self.history[: self.patience])
            if unhealthy and rule.code not in self.active:
                fired.append(HealthWarning(rule.code, f"{rule.message} (for {self.patience} logged steps)"))
            (self.active.add if unhealthy else self.active.discard)(rule.code)
        return fired


def log_artifact(path: Path, artifact_path: str) -> None:
    """Log ``path`` to the active MLflow run, if there is one."""
    if "mlflow" not in sys.modules:
        return
    import mlflow

    if mlflow.active_run() is None:
        return
    try:
        mlflow.log_artifact(str(path), artifact_path=artifact_path)
    except Exception as error:  # a tracking hiccup must never stop training
        print(f"rlvr: warning: could not log {path.name} to MLflow: {error}", file=sys.stderr)


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


try:
    from transformers import TrainerCallback
except ImportError:  # pragma: no cover - transformers is a core dependency
    TrainerCallback = object  # type: ignore[misc,assignment]


class HealthCallback(TrainerCallback):
    """Writes every logged step and an advantage histogram every ``histogram_steps``; prints health warnings."""

    def __init__(self, trainer: Any, histogram_steps: int = 5, patience: int = 3, warnings: bool = True):
        self.trainer = trainer
        self.histogram_steps = histogram_steps
        self.monitor = HealthMonitor(patience) if warnings else None
        self.directory = Path(trainer.args.output_dir) / HEALTH_DIR

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs or "reward" not in logs:
            return
        step = state.global_step
        metrics = self.directory / "metrics.jsonl"
        append_jsonl(metrics, {"step": step, **logs})
        if self.histogram_steps and step % self.histogram_steps == 0:
            self._write_histogram(step)
        if self.monitor is not None:
            for warning in self.monitor.update(logs):
                print(f"rlvr: health warning at step {step}: {warning.message}", file=sys.stderr, flush=True)
                append_jsonl(self.directory / "warnings.jsonl", {"step": step, "code": warning.code, "message": warning.message})
                log_artifact(self.directory / "warnings.jsonl", HEALTH_DIR)
        if self.histogram_steps and step % self.histogram_steps == 0:
            log_artifact(metrics, HEALTH_DIR)

    def _write_histogram(self, step: int) -> None:
        batch = self.trainer.last_batch
        if not batch:
            return
        values = batch["advantages"]
        record = {"step": step, "edges": HISTOGRAM_EDGES, "counts": histogram(values), "count": len(values)}
        path = self.directory / "advantages.jsonl"
        append_jsonl(path, record)
        log_artifact(path, HEALTH_DIR)
