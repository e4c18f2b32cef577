"""The TRL boundary: one module holds every private TRL name, checks the installed TRL, and fails in one line."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import torch
import trl
from trl import GRPOTrainer

from rlvr.errors import RlvrError
from rlvr.training import trl_compat
from rlvr.training.controls import unspliceable_keys

SOURCE = Path(trl_compat.__file__).parents[1]


def trl_private_names() -> set[str]:
    """Private attributes of TRL's GRPOTrainer: its own methods and what its __init__ sets on self."""
    methods = {name for name in vars(GRPOTrainer) if name.startswith("_") and not name.startswith("__")}
    assigned = set(re.findall(r"self\.(_[a-z]\w*)\s*=", inspect.getsource(GRPOTrainer.__init__)))
    return methods | assigned


def test_no_module_but_trl_compat_names_a_private_trl_attribute():
    names = trl_private_names()
    assert {"_metrics", "_logs", "_generate_single_turn"} <= names
    offenders = []
    for path in SOURCE.rglob("*.py"):
        if path.name == "trl_compat.py":
            continue
        # In training/ (the trainer and what it drives) any attribute; elsewhere attributes of a trainer.
        pattern = r"\.(_[a-z]\w*)\b" if path.parent.name == "training" else r"trainer\.(_[a-z]\w*)\b"
        used = set(re.findall(pattern, path.read_text())) & names
        offenders += [f"{path.relative_to(SOURCE)}: {name}" for name in sorted(used)]
    assert offenders == []


def test_another_trl_release_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(trl, "__version__", "1.17.0")
    monkeypatch.delenv("RLVR_ALLOW_TRL_VERSION", raising=False)
    with pytest.raises(RlvrError, match=r"found trl 1\.17\.0: pip install 'trl==1\.16\.0'") as error:
        trl_compat.check_trl()
    assert "\n" not in str(error.value)
    monkeypatch.setenv("RLVR_ALLOW_TRL_VERSION", "1")
    trl_compat.check_trl()  # the structural checks still pass on the installed code


def _rollout_with_a_new_key(self, inputs):  # stands in for a TRL release whose rollout dict grew a key
    output = {
        "prompt_ids": 0, "prompt_mask": 0, "completion_ids": 0, "completion_mask": 0,
        "advantages": 0, "num_items_in_batch": 0,
    }
    output["token_rewards"] = 0
    return output


def test_a_rollout_key_rlvr_does_not_know_is_refused(monkeypatch):
    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", _rollout_with_a_new_key)
    with pytest.raises(RlvrError, match="rollout dict has keys rlvr does not know .token_rewards."):
        trl_compat.check_trl()


def test_a_hooked_method_that_changed_its_parameters_is_refused(monkeypatch):
    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", lambda self, prompts: None)
    with pytest.raises(RlvrError, match="_generate_single_turn"):
        trl_compat.check_trl()


def test_the_installed_trl_rollout_keys_are_all_known():
    keys = trl_compat.rollout_keys(inspect.getsource(GRPOTrainer._generate_and_score_completions))
    assert set(trl_compat.REQUIRED_KEYS) <= keys <= trl_compat.KNOWN_KEYS


def test_resample_refuses_rollouts_whose_rows_it_cannot_move(tiny_model_dir, tmp_path):
    from rlvr.config import load_recipe
    from rlvr.training.rollout_controls import resample
    from rlvr.training.run import build_trainer

    recipe = load_recipe(None, [f"model.name_or_path={tiny_model_dir}", "task.train_size=8", "grpo.report_to=[]",
                                "grpo.num_generations=4", "grpo.per_device_train_batch_size=4",
                                "run.zero_variance_groups=resample", "run.eval_items=0", "run.keep_best=false",
                                f"run.output_dir={tmp_path}"])
    trainer = build_trainer(recipe, quiet=True)
    batch = {"advantages": torch.zeros(4), "pixel_values": torch.zeros(4, 3)}
    assert unspliceable_keys(batch) == ["pixel_values"]
    with pytest.raises(RlvrError, match="resample cannot move rollout rows holding pixel_values"):
        resample(trainer, batch, torch.tensor([True]), [{}] * 4)
