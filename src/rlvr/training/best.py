"""Keep the best adapter by validation accuracy (``run.keep_best``).

RL on a small model can peak and then slide back (measured on the CPU default:
validation accuracy +14 points at step 10, +10 at step 20). With
``run.keep_best`` the trainable weights are copied after every validation
evaluation that beats the earlier ones (step 0, the base model, counts), and
restored after the last step, before the test verdict runs and the adapter is
saved. The choice uses validation items only, so the test verdict stays an
unbiased measure of the model that is kept; if no step beats the base model,
the base model is kept and the verdict shows no gain.

The copies live in memory (the trainable weights only: a LoRA adapter of the
135M default is ~20 MB). A resumed run chooses among the evaluations made
after it resumed. Under DeepSpeed ZeRO-3 the trainable weights are partitioned:
every process gathers them whole to copy them, and puts them back through the
same gathering (every process evaluates the same items, so all choose alike).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from transformers import TrainerCallback

from rlvr.training.evaluation import EvalCallback


class KeepBest(TrainerCallback):
    """Installed after the validation :class:`EvalCallback` and before the test one, so it sees each
    validation result of a step first and restores the best weights before the final test evaluation."""

    def __init__(self, trainer: Any):
        self.trainer = trainer
        self.best: dict[str, Any] | None = None  # step, accuracy
        self.weights: dict[str, Any] | None = None
        self.restored_step: int | None = None
        self.final_step: int | None = None

    @classmethod
    def install(cls, trainer: Any, recipe: Any) -> KeepBest | None:
        if not recipe.run.keep_best:
            return None
        callback = cls(trainer)
        trainer.add_callback(callback)
        return callback

    @staticmethod
    def of(trainer: Any) -> KeepBest | None:
        for callback in trainer.callback_handler.callbacks:
            if isinstance(callback, KeepBest):
                return callback
        return None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._consider(state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._consider(state.global_step)
        if state.global_step == state.max_steps:
            self.restore(state.global_step)

    def _consider(self, step: int) -> None:
        validation = EvalCallback.of(self.trainer)
        if validation is None or not validation.evaluations or validation.evaluations[-1]["step"] != step:
            return
        accuracy = validation.evaluations[-1]["accuracy"]
        if self.best is None or accuracy > self.best["accuracy"]:  # ties keep the earlier, less trained weights
            self.best = {"step": step, "accuracy": accuracy}
            trainable = self._trainable()
            with gathered([p for _, p in trainable]):
                self.weights = {name: p.detach().clone() for name, p in trainable}

    def restore(self, final_step: int) -> None:
        """Put the best weights back (no-op when the last evaluation is the best)."""
        self.final_step = final_step
        if self.best is None or self.best["step"] == final_step:
            return
        trainable = self._trainable()
        with gathered([p for _, p in trainable], modify=True):
            for name, parameter in trainable:
                parameter.data.copy_(self.weights[name])
        self.restored_step = self.best["step"]

    def _trainable(self) -> list[tuple[str, Any]]:
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        return [(name, p) for name, p in model.named_parameters() if p.requires_grad]

    def summary(self) -> dict[str, Any] | None:
        if self.best is None:
            return None
        return {"step": self.best["step"], "validation_accuracy": self.best["accuracy"], "last_step": self.final_step,
                "restored": self.restored_step is not None}

    def line(self) -> str:
        kept = self.summary()
        if kept is None:
            return "Kept the last weights: no validation evaluation ran."
        what = "the base model (no step beat it)" if kept["step"] == 0 else f"the adapter of step {kept['step']}"
        return (f"Kept {what}: validation accuracy {kept['validation_accuracy']:.1%}, the best of the run's validation "
                f"evaluations (run.keep_best); the test verdict and the saved adapter are of these weights.")


@contextlib.contextmanager
def gathered(parameters: list[Any], modify: bool = False) -> Iterator[None]:
    """Whole ZeRO-3 partitioned ``parameters`` inside the block (re-partitioned after it when ``modify``)."""
    if not any(hasattr(p, "ds_numel") for p in parameters):
        yield
        return
    import deepspeed

    with deepspeed.zero.GatheredParameters(parameters, modifier_rank=0 if modify else None):
        yield
