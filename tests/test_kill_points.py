"""A run killed anywhere finishes on rerun with nothing lost or silently wrong (issue 36, item 4; fast version).

Each test SIGKILLs ``rlvr train`` (or ``rlvr eval``) on a tiny model at a named point (``RLVR_KILL_AT``,
``rlvr.faults``), checks what the kill left, reruns as a user would and compares with a run never
killed. ``benchmarks/kill_test.py`` runs every point on the real default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlvr.checkpoints import STATE_FILE, checkpoints, incomplete

SRC = Path(__file__).resolve().parents[1] / "src"


def settings(model_dir: Path, output_dir: Path, db: Path) -> list[str]:
    sets = [f"model.name_or_path={model_dir}", "task.train_size=16", "task.test_size=6", "task.shots=1",
            "grpo.max_steps=4", "grpo.per_device_train_batch_size=8", "grpo.num_generations=4",
            "grpo.max_completion_length=8", "grpo.save_strategy=steps", "grpo.save_steps=2", "grpo.report_to=[mlflow]",
            f"run.tracking_uri={db}", f"run.experiment=kill-{output_dir.name}", "run.test_items=6",
            "run.eval_items=0", "run.keep_best=false", "run.eval_max_new_tokens=8", f"run.output_dir={output_dir}"]
    return [word for s in sets for word in ("--set", s)]


def rlvr(*words: str, kill_at: str | None = None) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(SRC), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HF_HUB_OFFLINE": "1",
           "HOME": os.environ.get("HOME", "/tmp"), **({"RLVR_KILL_AT": kill_at} if kill_at else {})}
    return subprocess.run([sys.executable, "-m", "rlvr", *words], env=env, capture_output=True, text=True, timeout=600)


def adapter(output_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(output_dir / "adapter" / "adapter_model.safetensors"))


def summary(output_dir: Path) -> dict:
    return json.loads((output_dir / "summary.json").read_text())


def mlflow_statuses(db: Path, experiment: str) -> list[str]:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}")
    return sorted(r.info.status for r in client.search_runs([client.get_experiment_by_name(experiment).experiment_id]))


@pytest.fixture(scope="module")
def uninterrupted(tiny_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("kills")
    done = rlvr("train", *settings(tiny_model_dir, root / "whole", root / "mlflow.db"))
    assert done.returncode == 0, done.stderr[-2000:]
    return root, root / "whole"


def killed_then_rerun(tiny_model_dir, root: Path, point: str, resume: bool) -> tuple[Path, str]:
    out = root / point.replace(":", "-")
    words = ["train", *settings(tiny_model_dir, out, root / "mlflow.db")]
    done = rlvr(*words, kill_at=point)
    assert done.returncode == -9, done.stderr[-2000:]
    assert not (out / "summary.json").exists()
    for checkpoint in checkpoints(out):  # a checkpoint that says it is complete is
        assert not (checkpoint / STATE_FILE).exists() or incomplete(checkpoint) == ""
    again = rlvr(*words, *(["--resume"] if resume else []))
    assert again.returncode == 0, again.stderr[-2000:]
    return out, again.stderr


def same_verdict(out: Path, whole: Path) -> bool:
    """The same test verdict, down to every completion of the test evaluations before and after training."""
    keys = ("now_right", "now_wrong", "both_right", "both_wrong", "items")
    first, second = summary(out)["test"], summary(whole)["test"]
    return [first[k] for k in keys] == [second[k] for k in keys] and completions_of_test_evaluations(out) == completions_of_test_evaluations(whole)


def completions_of_test_evaluations(output_dir: Path) -> list[tuple[int, str, str]]:
    rows = [json.loads(line) for line in (output_dir / "test_samples.jsonl").read_text().splitlines()]
    return [(r["step"], r["id"], r["completion"]) for r in rows]


def test_killed_in_the_base_evaluation_a_rerun_gives_the_same_verdict(tiny_model_dir, uninterrupted):
    root, whole = uninterrupted
    out, _ = killed_then_rerun(tiny_model_dir, root, "base-evaluation", resume=False)
    assert same_verdict(out, whole)
    assert mlflow_statuses(root / "mlflow.db", f"kill-{out.name}") == ["FINISHED", "KILLED"]
    rows = [json.loads(line) for line in (out / "test_samples.jsonl").read_text().splitlines()]
    assert sorted({r["step"] for r in rows}) == [0, 4] and len(rows) == 12  # the killed run's rows not mixed in


def test_killed_mid_checkpoint_resume_skips_it_in_one_line_and_finishes_equal(tiny_model_dir, uninterrupted):
    root, whole = uninterrupted
    out, err = killed_then_rerun(tiny_model_dir, root, "checkpoint-save:2", resume=True)
    said = [line for line in err.splitlines() if "incomplete" in line]
    assert len(said) == 1 and "checkpoint-4 is incomplete" in said[0]
    assert summary(out)["resumed_from"].endswith("checkpoint-2")
    assert same_verdict(out, whole)
    assert mlflow_statuses(root / "mlflow.db", f"kill-{out.name}") == ["FINISHED"]


def test_killed_while_saving_the_adapter_no_half_adapter_is_left(tiny_model_dir, uninterrupted):
    root, whole = uninterrupted
    out, err = killed_then_rerun(tiny_model_dir, root, "adapter-save", resume=True)
    assert "checkpoint-4 was saved at the last step" in err
    assert summary(out)["steps"] == 4 and not (out / "checkpoint-5").exists()  # no step trained past the end
    assert adapter(out).keys() == adapter(whole).keys()
    assert all(torch.equal(adapter(out)[k], adapter(whole)[k]) for k in adapter(whole))
    assert mlflow_statuses(root / "mlflow.db", f"kill-{out.name}") == ["FINISHED"]
    assert not list(out.glob("adapter.partial*"))
    assert same_verdict(out, whole)


def test_a_killed_evaluation_reruns_only_what_it_had_not_finished(tiny_model_dir, tmp_path, gsm8k_dir):
    words = ["eval", "--model", str(tiny_model_dir), "--model", str(tiny_model_dir), "--label", "first", "--label",
             "second", "--data", str(gsm8k_dir), "--shots", "0", "--max-new-tokens", "4", "--no-progress"]
    killed = rlvr(*words, "--output", str(tmp_path / "killed"), kill_at="eval-generation")
    assert killed.returncode == -9 and not (tmp_path / "killed" / "summary.json").exists()
    again = rlvr(*words, "--output", str(tmp_path / "killed"))
    assert again.returncode == 0 and "reusing 4 records of 1 configuration" in again.stderr
    whole = rlvr(*words, "--output", str(tmp_path / "whole"))
    assert whole.returncode == 0
    results = [[(r["model"], r["accuracy"]) for r in summary(tmp_path / name)["results"]] for name in ("killed", "whole")]
    assert results[0] == results[1]
    assert not (tmp_path / "killed" / "samples.partial.jsonl").exists()
