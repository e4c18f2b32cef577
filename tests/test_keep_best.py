"""run.keep_best: the weights of the best validation step are the ones judged on test and saved."""

from types import SimpleNamespace

import pytest
import torch

from rlvr.errors import RlvrError
from rlvr.training.best import KeepBest
from rlvr.training.evaluation import EvalCallback


class FakeTrainer:
    """What KeepBest touches: the model behind the accelerator and the callback list."""

    def __init__(self):
        self.model = torch.nn.Linear(2, 1, bias=False)
        self.accelerator = SimpleNamespace(unwrap_model=lambda m: m)
        self.validation = EvalCallback.__new__(EvalCallback)
        self.validation.role, self.validation.evaluations = "diagnostic", []
        self.callback_handler = SimpleNamespace(callbacks=[self.validation])

    def add_callback(self, callback):
        self.callback_handler.callbacks.append(callback)


def run_steps(trainer, keep, accuracies, max_steps):
    """Step through training: weight = step; a validation result at each step in ``accuracies``."""
    state = SimpleNamespace(global_step=0, max_steps=max_steps)
    trainer.validation.evaluations.append({"step": 0, "accuracy": accuracies[0]})
    keep.on_train_begin(None, state, None)
    for step in range(1, max_steps + 1):
        trainer.model.weight.data.fill_(float(step))
        state.global_step = step
        if step in accuracies:
            trainer.validation.evaluations.append({"step": step, "accuracy": accuracies[step]})
        keep.on_step_end(None, state, None)


def test_the_weights_of_the_best_validation_step_are_restored_after_the_last_step():
    trainer = FakeTrainer()
    keep = KeepBest(trainer)
    run_steps(trainer, keep, {0: 0.30, 5: 0.42, 10: 0.38}, max_steps=10)
    assert torch.all(trainer.model.weight == 5.0)
    assert keep.summary() == {"step": 5, "validation_accuracy": 0.42, "last_step": 10, "restored": True}


def test_the_last_weights_stay_when_the_last_evaluation_is_the_best():
    trainer = FakeTrainer()
    keep = KeepBest(trainer)
    run_steps(trainer, keep, {0: 0.30, 5: 0.35, 10: 0.40}, max_steps=10)
    assert torch.all(trainer.model.weight == 10.0) and keep.summary()["restored"] is False


def test_the_base_model_is_kept_when_no_step_beats_it():
    trainer = FakeTrainer()
    trainer.model.weight.data.fill_(-1.0)
    keep = KeepBest(trainer)
    run_steps(trainer, keep, {0: 0.40, 5: 0.40, 10: 0.31}, max_steps=10)
    assert torch.all(trainer.model.weight == -1.0)  # a tie keeps the earlier, less trained weights
    assert "base model" in keep.line()


def test_keep_best_without_a_validation_schedule_is_a_one_line_error_at_recipe_load():
    from rlvr.config import load_recipe

    with pytest.raises(RlvrError, match="eval_every_steps above 0, or run.keep_best=false"):
        load_recipe(None, ["run.eval_every_steps=0"])


def test_keep_best_off_installs_nothing():
    trainer = FakeTrainer()
    recipe = SimpleNamespace(run=SimpleNamespace(keep_best=False, eval_items=100, eval_every_steps=5))
    assert KeepBest.install(trainer, recipe) is None and KeepBest.of(trainer) is None


def test_keep_best_refuses_to_choose_on_test_items():
    from rlvr.config import load_recipe

    with pytest.raises(RlvrError, match="must choose on validation items"):
        load_recipe(None, ["run.eval_split=test"])
