"""Runs that survive a kill (issue 14): SIGKILL after a checkpoint, then ``--resume``, equals a run never killed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rlvr.config import load_recipe
from rlvr.training.resume import STATE_FILE
from rlvr.training.run import train

SRC = Path(__file__).resolve().parents[1] / "src"
#: Trains the recipe given on the command line and SIGKILLs itself right after checkpoint N is saved
#: (after rlvr's own state is written: the kill comes from a callback added after rlvr's).
KILLED_RUN = """
import os, signal, sys
from transformers import TrainerCallback
from rlvr.config import load_recipe
from rlvr.training import resume
from rlvr.training.run import train

class KillAfterCheckpoint(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        if state.global_step == int(sys.argv[1]):
            os.kill(os.getpid(), signal.SIGKILL)

attach = resume.attach
def attach_then_arm(trainer, *args):
    state = attach(trainer, *args)
    trainer.add_callback(KillAfterCheckpoint())
    return state
resume.attach = attach_then_arm
train(load_recipe(None, sys.argv[2:]), quiet=True)
"""


def settings(model_dir: Path, output_dir: Path, db: Path) -> list[str]:
    return [
        f"model.name_or_path={model_dir}", "task.train_size=16", "task.shots=1", "grpo.max_steps=3",
        "grpo.per_device_train_batch_size=8", "grpo.num_generations=4", "grpo.max_completion_length=8",
        "grpo.save_strategy=steps", "grpo.save_steps=2", "grpo.report_to=[mlflow]", f"run.tracking_uri={db}",
        "run.eval_items=2", "run.eval_every_steps=0", "run.keep_best=false", "run.eval_max_new_tokens=8",
        f"run.output_dir={output_dir}",
    ]


def adapter(output_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(output_dir / "adapter" / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def runs(tiny_model_dir, tmp_path_factory):
    """A run never killed, and the same run SIGKILLed after checkpoint 2 and resumed, sharing one MLflow store."""
    root = tmp_path_factory.mktemp("kill-resume")
    db = root / "mlflow.db"
    whole, killed = root / "whole", root / "killed"
    train(load_recipe(None, settings(tiny_model_dir, whole, db)), quiet=True)
    done = subprocess.run([sys.executable, "-c", KILLED_RUN, "2", *settings(tiny_model_dir, killed, db)],
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "RLVR_CPU_BF16": "0"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == -9, done.stderr[-2000:]
    assert (killed / "checkpoint-2" / STATE_FILE).is_file() and not (killed / "summary.json").exists()
    killed_state = json.loads((killed / "checkpoint-2" / STATE_FILE).read_text())
    train(load_recipe(None, settings(tiny_model_dir, killed, db)), resume=True, quiet=True)
    return {"whole": whole, "resumed": killed, "db": db, "killed_state": killed_state}


def summary(output_dir: Path) -> dict:
    return json.loads((output_dir / "summary.json").read_text())


def test_resumed_adapter_equals_the_uninterrupted_one(runs):
    whole, resumed = adapter(runs["whole"]), adapter(runs["resumed"])
    assert whole.keys() == resumed.keys()
    for name in whole:
        torch.testing.assert_close(resumed[name], whole[name], rtol=0, atol=1e-6)


def test_resumed_metrics_equal_the_uninterrupted_ones(runs):
    whole, resumed = summary(runs["whole"]), summary(runs["resumed"])
    assert resumed["steps"] == whole["steps"] == 3
    assert resumed["rewards"] == pytest.approx(whole["rewards"])
    assert [(e["step"], e["accuracy"]) for e in resumed["evaluations"]] == [(e["step"], e["accuracy"]) for e in whole["evaluations"]]


def test_resumed_summary_keeps_the_step_zero_baseline_and_the_time_before_the_kill(runs):
    resumed = summary(runs["resumed"])
    assert resumed["evaluations"][0]["step"] == 0
    assert resumed["seconds"] > runs["killed_state"]["seconds"] > 0
    assert resumed["resumed_from"].endswith("checkpoint-2")


def test_mlflow_has_one_run_per_training_and_none_left_running(runs):
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{runs['db']}")
    experiment = client.get_experiment_by_name("rlvr")
    found = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.status for r in found) == ["FINISHED", "FINISHED"]
    resumed_id = runs["killed_state"]["mlflow_run_id"]
    steps = [m.step for m in client.get_metric_history(resumed_id, "reward")]
    assert steps == [1, 2, 3]


def test_a_fresh_run_after_a_kill_closes_the_killed_run(tiny_model_dir, tmp_path):
    import mlflow

    db, out = tmp_path / "mlflow.db", tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", KILLED_RUN, "2", *settings(tiny_model_dir, out, db), "grpo.max_steps=2", "run.eval_items=0"],
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "RLVR_CPU_BF16": "0"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == -9, done.stderr[-2000:]
    train(load_recipe(None, [*settings(tiny_model_dir, out, db), "grpo.max_steps=1", "run.eval_items=0"]), quiet=True)
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}")
    runs = {r.info.status: r for r in client.search_runs([client.get_experiment_by_name("rlvr").experiment_id])}
    assert set(runs) == {"KILLED", "FINISHED"}
    assert runs["KILLED"].data.tags["rlvr.replaced_by"] == runs["FINISHED"].info.run_id
