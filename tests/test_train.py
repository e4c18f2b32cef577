"""A real GRPO run (TRL + peft) on a tiny random model built in the test."""

import json

import pytest

from rlvr.config import load_recipe
from rlvr.errors import RlvrError
from rlvr.training.run import train


def tiny_recipe(model_dir, output_dir, *extra):
    return load_recipe(
        None,
        [
            f"model.name_or_path={model_dir}",
            "task.train_size=16",
            "task.shots=1",
            "grpo.max_steps=2",
            "grpo.per_device_train_batch_size=8",
            "grpo.num_generations=4",
            "grpo.max_completion_length=8",
            "grpo.save_strategy=no",
            "grpo.report_to=[]",
            "run.eval_items=0",
            "run.keep_best=false",
            f"run.output_dir={output_dir}",
            *extra,
        ],
    )


def test_two_grpo_steps_train_and_save_an_adapter(tiny_model_dir, tmp_path):
    result = train(tiny_recipe(tiny_model_dir, tmp_path / "out"), quiet=True)
    assert result.steps == 2
    assert (result.adapter_dir / "adapter_config.json").is_file()
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["steps"] == 2 and len(summary["rewards"]) == 2
    for logs in (entry for entry in result.log_history if "reward" in entry):  # raw components, weighted total
        assert logs["reward"] == pytest.approx(0.5 * logs["rewards/format/mean"] + logs["rewards/correctness/mean"])


def test_trl_applies_the_recipe_weights_once(tiny_model_dir, tmp_path):
    from rlvr.training.run import build_trainer

    trainer = build_trainer(tiny_recipe(tiny_model_dir, tmp_path / "out"), quiet=True)
    assert trainer.reward_func_names == ["format", "correctness", "closeness"]
    assert trainer.reward_weights.tolist() == [0.5, 1.0, 0.5]


def test_merged_model_is_saved_on_request(tiny_model_dir, tmp_path):
    result = train(tiny_recipe(tiny_model_dir, tmp_path / "out", "run.merge_adapter=true", "grpo.max_steps=1"), quiet=True)
    assert (result.merged_dir / "config.json").is_file()
    assert not (result.merged_dir / "adapter_config.json").exists()


def test_reward_components_reach_mlflow(tiny_model_dir, tmp_path):
    import mlflow

    db = tmp_path / "mlflow.db"
    recipe = tiny_recipe(
        tiny_model_dir, tmp_path / "out", "grpo.report_to=[mlflow]", f"run.tracking_uri={db}", "grpo.max_steps=1"
    )
    train(recipe, quiet=True)
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("rlvr")
    run = client.search_runs([experiment.experiment_id])[0]
    assert {"reward", "rewards/format/mean", "rewards/correctness/mean"} <= set(run.data.metrics)


def test_resume_without_a_checkpoint_is_a_clear_error(tiny_model_dir, tmp_path):
    with pytest.raises(RlvrError, match="no checkpoint"):
        train(tiny_recipe(tiny_model_dir, tmp_path / "out"), resume=True, quiet=True)


def test_training_resumes_from_a_checkpoint(tiny_model_dir, tmp_path):
    out = tmp_path / "out"
    train(tiny_recipe(tiny_model_dir, out, "grpo.save_strategy=steps", "grpo.save_steps=1"), quiet=True)
    assert (out / "checkpoint-2").is_dir()
    result = train(tiny_recipe(tiny_model_dir, out, "grpo.max_steps=3", "grpo.save_strategy=no"), resume=True, quiet=True)
    assert result.steps == 3


@pytest.fixture
def no_4bit(monkeypatch):
    """A machine where bitsandbytes cannot be imported."""
    import sys

    from rlvr.models import four_bit_unavailable

    monkeypatch.setitem(sys.modules, "bitsandbytes", None)
    four_bit_unavailable.cache_clear()
    yield
    four_bit_unavailable.cache_clear()


def test_four_bit_without_bitsandbytes_falls_back_to_lora_with_a_warning(tiny_model_dir, tmp_path, capsys, no_4bit):
    result = train(tiny_recipe(tiny_model_dir, tmp_path / "out", "model.load_in_4bit=true", "grpo.max_steps=1"), quiet=True)
    assert result.steps == 1
    assert "training plain LoRA instead" in capsys.readouterr().err


def test_four_bit_without_bitsandbytes_can_be_an_error(tiny_model_dir, tmp_path, no_4bit):
    recipe = tiny_recipe(tiny_model_dir, tmp_path / "out", "model.load_in_4bit=true", "model.quantization_fallback=error")
    with pytest.raises(RlvrError, match=r"load_in_4bit cannot run here: bitsandbytes is not installed \(pip install 'rlvr\[qlora\]'\)"):
        train(recipe, quiet=True)


def test_keep_best_records_the_validation_step_it_kept(tiny_model_dir, tmp_path):
    recipe = tiny_recipe(tiny_model_dir, tmp_path / "out", "run.keep_best=true", "run.eval_items=4",
                         "run.eval_every_steps=1", "run.test_items=4")
    train(recipe, quiet=True)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    kept = summary["kept_best"]
    by_step = {e["step"]: e["accuracy"] for e in summary["evaluations"]}
    assert set(by_step) == {0, 1, 2} and kept["last_step"] == 2
    assert kept["validation_accuracy"] == by_step[kept["step"]] == max(by_step.values())
    assert kept["step"] == min(s for s, a in by_step.items() if a == kept["validation_accuracy"])


def test_deprecation_notices_libraries_raise_inside_training_do_not_flood_the_console():
    import warnings

    import torch.distributed

    from rlvr.training.grpo_args import quiet_library_deprecations

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_library_deprecations()
        for collective in (torch.distributed.all_gather_into_tensor, torch.distributed.reduce_scatter_tensor):
            try:
                collective(torch.zeros(2), torch.zeros(2))  # no process group: fails after its deprecation notice
            except (RuntimeError, ValueError):
                pass
        warnings.warn("`is_gradient_checkpointing` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
        warnings.warn("another library's notice", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["another library's notice"]
