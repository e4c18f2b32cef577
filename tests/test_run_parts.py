"""One recipe means the same thing to every command: `rlvr probe`, `rlvr filter`, `rlvr train` and `rlvr eval` (from
the run's adapter) put the same chat template on the model, the same limits on the user's code and the same
sandbox policy in force, and say so in the same line (rlvr.run_parts)."""

from __future__ import annotations

import os

import pytest

from rlvr import chat_format, timeouts
from rlvr.cli import main
from rlvr.config import load_recipe
from rlvr.run_parts import build_parts, trl_defaults
from rlvr.sandbox import ALLOW_WEAKER_ENV

SETTINGS = ["model.chat_format=chatml", "run.sandbox_allow_weaker=true", "run.user_code_timeout=7",
            "run.task_load_timeout=90"]


def tiny_overrides(model_dir, out) -> list[str]:
    """tests/test_train.py's tiny run, one step, and this test's settings."""
    values = [
        f"model.name_or_path={model_dir}", "model.dtype=float32", "task.train_size=16", "task.test_size=4",
        "task.shots=1", "grpo.max_steps=1", "grpo.per_device_train_batch_size=8", "grpo.num_generations=4",
        "grpo.max_completion_length=8", "grpo.save_strategy=no", "grpo.report_to=[]", "run.eval_items=0",
        "run.keep_best=false", "run.test_items=4", "run.eval_max_new_tokens=8", f"run.output_dir={out}", *SETTINGS,
    ]
    return [arg for value in values for arg in ("--set", value)]


@pytest.fixture()
def fresh_policies(monkeypatch):
    """Each command starts from the defaults: no opt-in in the environment, the default limits."""
    monkeypatch.delenv(ALLOW_WEAKER_ENV, raising=False)
    timeouts.configure({})
    yield
    timeouts.configure({})
    os.environ.pop(ALLOW_WEAKER_ENV, None)


@pytest.fixture()
def templates(monkeypatch):
    """The chat formats each command put on a model, in order."""
    put: list[str] = []
    real = chat_format.apply_chat_format

    def spy(model, tokenizer, name):
        real(model, tokenizer, name)
        put.append(f"{name}:{tokenizer.eos_token}")

    monkeypatch.setattr(chat_format, "apply_chat_format", spy)
    return put


def parts_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith("rlvr: recipe ")]
    assert len(lines) == 1, out
    return lines[0]


def in_force() -> tuple[float | None, float | None, str | None]:
    return timeouts.user_code_timeout(), timeouts.task_load_timeout(), os.environ.get(ALLOW_WEAKER_ENV)


EXPECTED_LINE = ("rlvr: recipe cpu-default: chat template chatml (model.chat_format); limits: user code 7 s, "
                 "task load 90 s; sandbox: weaker isolation allowed (run.sandbox_allow_weaker)")
EXPECTED_IN_FORCE = (7.0, 90.0, "1")


def test_the_parts_line_names_template_limits_and_sandbox():
    recipe = load_recipe(None, SETTINGS)
    assert build_parts(recipe).line() == EXPECTED_LINE
    plain = build_parts(load_recipe(None, ["run.user_code_timeout=0"])).line()
    assert "chat template the model's own" in plain and "user code no limit" in plain and "full isolation" in plain


def test_sampling_settings_fall_back_to_trls_own_defaults():
    recipe = load_recipe(None, [])
    del recipe.grpo["seed"], recipe.grpo["max_completion_length"]
    parts = build_parts(recipe)
    assert parts.seed == trl_defaults()["seed"] and parts.max_completion_length == trl_defaults()["max_completion_length"]
    assert parts.sampling["temperature"] == recipe.grpo["temperature"]  # the recipe's value where it gives one


def test_probe_uses_the_recipes_template_limits_and_sandbox(tiny_model_dir, tmp_path, capsys, fresh_policies, templates):
    assert main(["probe", "--items", "2", *tiny_overrides(tiny_model_dir, tmp_path / "run")]) == 0
    assert parts_line(capsys.readouterr().out) == EXPECTED_LINE
    assert templates == ["chatml:<|im_end|>"] and in_force() == EXPECTED_IN_FORCE


def test_filter_uses_the_recipes_template_limits_and_sandbox(tiny_model_dir, tmp_path, capsys, fresh_policies,
                                                             templates):
    args = ["filter", "--limit", "2", "--samples", "2", *tiny_overrides(tiny_model_dir, tmp_path / "run")]
    assert main(args) == 0
    assert parts_line(capsys.readouterr().out) == EXPECTED_LINE
    assert templates == ["chatml:<|im_end|>"] and in_force() == EXPECTED_IN_FORCE


def test_train_then_eval_use_the_recipes_template_limits_and_sandbox(tiny_model_dir, tmp_path, capsys, fresh_policies,
                                                                     templates):
    run = tmp_path / "run"
    assert main(["train", *tiny_overrides(tiny_model_dir, run)]) == 0
    assert parts_line(capsys.readouterr().out) == EXPECTED_LINE
    assert templates == ["chatml:<|im_end|>"] and in_force() == EXPECTED_IN_FORCE

    timeouts.configure({})
    os.environ.pop(ALLOW_WEAKER_ENV, None)
    templates.clear()
    args = ["eval", "--adapter", "none", "--adapter", str(run / "adapter"), "--no-progress",
            "--output", str(tmp_path / "eval")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert parts_line(out) == EXPECTED_LINE and "chat template chatml" in out
    # The base gets the template put on it; the trained adapter brings the tokenizer its run saved, already chatml.
    assert templates == ["chatml:<|im_end|>"] and in_force() == EXPECTED_IN_FORCE


def test_experiment_uses_the_recipes_template_limits_and_sandbox(tiny_model_dir, tmp_path, fresh_policies, templates):
    from rlvr.experiment.run import ExperimentConfig, run_experiment

    run = tmp_path / "run"
    recipe = load_recipe(None, [value for value in tiny_overrides(tiny_model_dir, run) if value != "--set"]
                         + ["run.sweep_variants=[]", "run.test_items=0"])
    said: list[str] = []
    run_experiment(ExperimentConfig(recipe, tmp_path / "experiment", shots=[0], items=2, progress=False), say=said.append)
    assert said[0] == EXPECTED_LINE and in_force() == EXPECTED_IN_FORCE
    # Training's base, then the sweep's base; the trained adapter brings its run's tokenizer, already chatml.
    assert templates == ["chatml:<|im_end|>", "chatml:<|im_end|>"]
