"""Held-out evaluation during training: before the first step, every N steps, and after the last.

It runs the same generation and scoring as ``rlvr eval`` (greedy, stopped at
the answer line, judged by the task's rewards). Two instances can run:

* validation (``run.eval_items`` items of ``run.eval_split``, also every
  ``run.eval_every_steps``): a diagnostic, logged as ``eval/accuracy``;
* test (``run.test_items`` items of the test split, before and after training
  only): the run's verdict (:mod:`rlvr.training.verdict`), logged as ``test/accuracy``.

Each logs accuracy, format rate, mean tokens and seconds through the trainer's
``log`` so MLflow records them, and keeps every evaluation for the summary.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rlvr import atomic, faults
from rlvr.evaluation.stats import mcnemar_exact, paired_counts
from rlvr.memory import release_memory
from rlvr.tools.stats import tool_line


class EvalCallback(TrainerCallback):
    def __init__(self, trainer: Any, task: Any, items: Any, every_steps: int, max_new_tokens: int, batch_size: int,
                 split: str, output_dir: Path | None = None, role: str = "diagnostic"):
        self.trainer = trainer
        self.task = task
        self.items = items
        self.every_steps = every_steps
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.split = split
        self.output_dir = output_dir
        # "diagnostic" (validation, eval/*), "verdict" (the test evaluation, test/*) or "without_tool" (the test
        # items without the run's tools, before training only: the base model as it is without them)
        self.role = role
        self.prefix = {"verdict": "test", "without_tool": "test_without_tool"}.get(role, "eval")
        self.evaluations: list[dict[str, Any]] = []

    @classmethod
    def install(cls, trainer: Any, recipe: Any, task: Any) -> EvalCallback | None:
        """Add the validation callback when the recipe asks for it (``run.eval_items`` > 0)."""
        run = recipe.run
        if not run.eval_items:
            return None
        return cls._add(trainer, recipe, task, run.eval_split, run.eval_items, run.eval_every_steps, "diagnostic")

    @classmethod
    def install_test(cls, trainer: Any, recipe: Any, task: Any) -> EvalCallback | None:
        """Add the test-split callback, before and after training only, when ``run.test_items`` > 0."""
        if not recipe.run.test_items:
            return None
        callback = cls._add(trainer, recipe, task, "test", recipe.run.test_items, 0, "verdict")
        if getattr(task, "tools", None):  # the tool's worth: the same items, the base model without it
            cls._add(trainer, recipe, task.without_tools, "test", recipe.run.test_items, 0, "without_tool")
        return callback

    @classmethod
    def _add(cls, trainer: Any, recipe: Any, task: Any, split: str, count: int, every: int, role: str) -> EvalCallback:
        run = recipe.run
        items = task.load(split)
        items = items.select(range(min(count, len(items))))
        callback = cls(trainer, task, items, every, run.eval_max_new_tokens, run.eval_batch_size, split, recipe.output_dir, role)
        # Not trainer.add_callback: it warns when a second instance of a class is added, and the validation and
        # the test callbacks are two instances on purpose (one per split).
        trainer.callback_handler.callbacks.append(callback)
        return callback

    @staticmethod
    def of(trainer: Any, role: str = "diagnostic") -> EvalCallback | None:
        """The trainer's EvalCallback with ``role`` ("diagnostic" or "verdict"), if any."""
        for callback in trainer.callback_handler.callbacks:
            if isinstance(callback, EvalCallback) and callback.role == role:
                return callback
        return None

    @staticmethod
    def results_of(trainer: Any, role: str = "diagnostic") -> list[dict[str, Any]]:
        """The evaluations the trainer's EvalCallback with ``role`` made (empty without one)."""
        callback = EvalCallback.of(trainer, role)
        return callback.evaluations if callback else []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step and self.evaluations:  # resumed: the evaluations before the checkpoint were restored
            return
        self.evaluate(state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        step = state.global_step
        if self.role == "without_tool":
            return
        if step == state.max_steps or (self.every_steps and step % self.every_steps == 0):
            self.evaluate(step)

    def evaluate(self, step: int) -> dict[str, Any]:
        from rlvr.evaluation.backends import HFBackend, Sampling
        from rlvr.evaluation.evaluate import config_stats, generate_and_score
        from rlvr.evaluation.summary import item_scores

        if self.evaluations and self.evaluations[-1]["step"] == step:
            return self.evaluations[-1]
        start = time.time()
        trainer = self.trainer
        sampling = Sampling(max_new_tokens=self.max_new_tokens)
        shots = self.task.shots if self.task.takes_shots else None  # code tasks take no exemplars
        # In place (bf16: given back exactly, no copies): evaluation is the run's memory peak, rollouts its hot path.
        with whole_model(trainer) as model, merged_adapter(model, trainer, in_place=True):
            backend = HFBackend(model, trainer.processing_class, self.task.stop_patterns, self.batch_size,
                                stop_strings=self.task.stop_strings)
            if getattr(self.task, "tools", None):
                from rlvr.tools.turns import ToolBackend

                backend = ToolBackend(backend, self.task.tools, trainer.max_tool_calling_iterations, self.task.opener)
            records = generate_and_score(backend, self.task, self.items, f"step {step}", shots, sampling, progress=False)
        if step == 0:
            faults.point("base-evaluation")
        elif self.role == "verdict":
            faults.point("test-evaluation")
        release_memory(collect=True)  # the evaluation's KV caches, before training goes on
        stats = config_stats(f"step {step}", shots, records, [], 0)
        stats["accuracy_name"] = self.task.accuracy_name
        if getattr(self.task, "tools", None):
            from rlvr.tools.stats import tool_use_stats

            stats["tools"] = tool_use_stats(records)
        breakdown = self.task.breakdown([r.get("details") or {} for r in records])
        if breakdown:
            stats["breakdown"] = breakdown
        counts = _exemplar_counts(self.items)
        if len(counts) > 1:  # a shots_mix split (validation): the rows' own counts, not task.shots
            stats["shots"], stats["exemplar_counts"] = None, counts
        elif getattr(self.task, "shots_mix", None):  # test items keep task.shots; training saw the mix
            stats["training_exemplar_counts"] = sorted(set(self.task.shots_mix))
        seconds = time.time() - start
        evaluation = {"step": step, "split": self.split, "seconds": round(seconds, 1), **stats,
                      "verdicts": {r["id"]: r["correct"] for r in records},
                      "scores": {item: v["score"] for item, v in item_scores(records, []).items()}}
        flags = {r["id"]: self.task.item_flags(r.get("details") or {}) for r in records}
        if any(flags.values()):
            evaluation["flags"] = flags
        self.evaluations.append(evaluation)
        self._log(step, stats, seconds)
        self._save(records, step)
        return evaluation

    def _log(self, step: int, stats: dict[str, Any], seconds: float) -> None:
        trainer = self.trainer
        if trainer.accelerator.is_main_process:
            print(f"{self.prefix} step {step}: {stats['accuracy_name']} {stats['accuracy']:.1%} ({stats['correct']}/{stats['n']} {self.split} items), "
                  f"format {_share(stats['format_rate'])}, {seconds:.0f} s"
                  + (f"; {tool_line(stats['tools'])}" if stats.get("tools") else ""), flush=True)
        metrics = {"accuracy": stats["accuracy"], "format_rate": stats["format_rate"],
                   "mean_completion_tokens": stats["mean_completion_tokens"], "seconds": seconds}
        for key, value in (stats.get("tools") or {}).items():
            metrics[f"tools/{key}"] = value
        metrics = {f"{self.prefix}/{key}": value for key, value in metrics.items() if value is not None}  # no notion of form: not logged
        training = trainer.model.training
        trainer.model.eval()  # GRPOTrainer.log then leaves the training metrics of the current step alone
        try:
            trainer.log(metrics)
        finally:
            trainer.model.train(training)

    def _save(self, records: list[dict[str, Any]], step: int) -> None:
        if self.output_dir is None or not self.trainer.accelerator.is_main_process:
            return
        self.output_dir.mkdir(parents=True, exist_ok=True)
        path = self.output_dir / f"{self.prefix}_samples.jsonl"
        # Rewritten whole, keeping the rows of the evaluations this run holds (those restored from its checkpoint):
        # a killed run's later rows, or an earlier run's in the same directory, are not mixed in.
        earlier = {e["step"] for e in self.evaluations} - {step}
        kept = [row for row in _read_rows(path) if row.get("step") in earlier]
        with atomic.open_atomic(path) as handle:
            for row in kept + [{"step": step, **record} for record in records]:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def _read_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    with contextlib.suppress(FileNotFoundError), path.open(encoding="utf-8") as handle:
        for line in handle:
            with contextlib.suppress(ValueError):
                row = json.loads(line)
                if isinstance(row, dict):
                    rows.append(row)
    return rows


@contextlib.contextmanager
def whole_model(trainer: Any) -> Iterator[Any]:
    """The unwrapped model, with DeepSpeed ZeRO-3's partitioned parameters gathered once for the whole evaluation
    (as TRL gathers them for its rollouts): otherwise every forward of every generated token gathers each layer."""
    if getattr(trainer, "is_deepspeed_enabled", False):
        from trl.models import unwrap_model_for_generation

        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model:
            yield model
        return
    yield trainer.accelerator.unwrap_model(trainer.model)


@contextlib.contextmanager
def merged_adapter(model: Any, trainer: Any, in_place: bool = False) -> Iterator[None]:
    """LoRA weights merged into the base weights while evaluating or decoding rollouts, as ``rlvr eval`` merges a saved adapter.

    Generation then runs plain linear layers (no per-layer adapter matmuls: faster on CPU), and the weights
    equal those ``rlvr eval --adapter`` builds from the saved adapter. Taken out afterwards, so training goes on
    with the adapter separate, and bf16 base weights come back bit for bit (:func:`rlvr.lora_merge.lora_merged`;
    ``in_place``: without copies of the merged weights, a little slower).
    Left alone under DeepSpeed (partitioned weights), for models without LoRA, and for 4-bit models.
    """
    from rlvr.lora_merge import lora_merged

    if getattr(trainer, "is_deepspeed_enabled", False):
        yield
        return
    with lora_merged(model, in_place):
        yield


def before_after_table(evaluations: list[dict[str, Any]]) -> str:
    """A before/after table of the first and last evaluation, with the paired McNemar test."""
    if len(evaluations) < 2:
        return ""
    first, last = evaluations[0], evaluations[-1]
    ids = [i for i in first["verdicts"] if i in last["verdicts"]]
    _, only_before, only_after, _ = paired_counts([first["verdicts"][i] for i in ids], [last["verdicts"][i] for i in ids])

    def accuracy(e: dict[str, Any]) -> str:
        return f"{e['accuracy']:.1%} [{e['ci95'][0]:.0%}-{e['ci95'][1]:.0%}]"

    rows = [
        ("", f"before (step {first['step']})", f"after (step {last['step']})"),
        (f"{first.get('accuracy_name', 'accuracy')} [95% CI]", accuracy(first), accuracy(last)),
        ("format rate", _share(first["format_rate"]), _share(last["format_rate"])),
        ("mean tokens", f"{first['mean_completion_tokens']:.0f}", f"{last['mean_completion_tokens']:.0f}"),
    ]
    shots = f", {first['shots']}-shot" if first.get("shots") is not None else ""
    if first.get("exemplar_counts"):
        shots = f", {'/'.join(map(str, first['exemplar_counts']))} exemplars (task.shots_mix)"
    lines = [f"Held-out evaluation: {first['n']} {first['split']} items, greedy{shots}"]
    lines += [f"  {a:<18} {b:>22} {c:>22}" for a, b, c in rows]
    lines.append(f"  paired: {only_after} now right, {only_before} now wrong; "
                 f"McNemar exact p = {mcnemar_exact(only_before, only_after):.3g}")
    return "\n".join(lines)


def _share(value: float | None) -> str:
    """A rate as a percentage; "n/a" for tasks without a notion of answer form (keywords)."""
    return "n/a" if value is None else f"{value:.0%}"


def _exemplar_counts(items: Any) -> list[int]:
    """The distinct exemplar counts of evaluation items that record theirs (tasks with ``shots_mix``)."""
    names = getattr(items, "column_names", None) or []
    return sorted(set(items["exemplar_count"])) if "exemplar_count" in names else []
