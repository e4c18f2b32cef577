"""Outputs a rerun trusts are complete or absent; one run per output directory (issue 36, items 2, 3, 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr import atomic, runlock
from rlvr import checkpoints as saved
from rlvr.errors import RlvrError
from rlvr.evaluation.record_sink import RecordSink, records_in
from rlvr.experiment.stages import StageLog

SRC = Path(__file__).resolve().parents[1] / "src"


# ------------------------------------------------------------------ atomic writes


def test_an_atomic_write_that_fails_leaves_the_previous_file(tmp_path):
    path = tmp_path / "summary.json"
    atomic.write_json(path, {"run": 1})
    with pytest.raises(RuntimeError), atomic.open_atomic(path) as handle:
        handle.write('{"run": 2, "cut')
        raise RuntimeError("killed mid-write")
    assert json.loads(path.read_text()) == {"run": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_replaced_directory_is_whole_or_the_old_one(tmp_path):
    target = tmp_path / "adapter"
    with atomic.replacing_dir(target) as building:
        (building / "weights").write_text("old")
    with pytest.raises(RuntimeError), atomic.replacing_dir(target) as building:
        (building / "weights").write_text("half")
        raise RuntimeError("killed mid-save")
    assert (target / "weights").read_text() == "old"
    with atomic.replacing_dir(target) as building:
        (building / "weights").write_text("new")
    assert (target / "weights").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter"]


def test_a_stage_log_cut_mid_write_by_a_kill_keeps_its_finished_stages(tmp_path, monkeypatch):
    log = StageLog(tmp_path / "stages.json")
    log.finish("train", "k1", 10.0)

    def killed(path, mode="w", **kwargs):  # noqa: ANN001
        raise KeyboardInterrupt  # the write never completes

    monkeypatch.setattr(atomic, "open_atomic", killed)
    with pytest.raises(KeyboardInterrupt):
        log.finish("eval-base", "k2", 5.0)
    assert StageLog(tmp_path / "stages.json").recorded_key("train") == "k1"


# ------------------------------------------------------------------ checkpoints: complete or set aside


def _checkpoint(root: Path, step: int, complete: bool = True) -> Path:
    path = root / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "adapter_model.safetensors").write_bytes(b"x" * 100)
    (path / "optimizer.pt").write_bytes(b"y" * 50)
    if complete:
        (path / saved.STATE_FILE).write_text(json.dumps({"step": step, "files": saved.file_sizes(path)}))
    return path


def test_a_checkpoint_without_rlvrs_mark_is_incomplete(tmp_path):
    assert "did not finish" in saved.incomplete(_checkpoint(tmp_path, 4, complete=False))
    assert saved.incomplete(_checkpoint(tmp_path, 2)) == ""


def test_a_truncated_checkpoint_file_is_named(tmp_path):
    path = _checkpoint(tmp_path, 2)
    with open(path / "optimizer.pt", "r+b") as handle:
        handle.truncate(10)
    assert saved.incomplete(path) == "optimizer.pt is 10 bytes, 50 were written (truncated?)"


def test_latest_checkpoint_skips_incomplete_ones(tmp_path):
    _checkpoint(tmp_path, 2)
    _checkpoint(tmp_path, 4, complete=False)
    assert saved.latest_checkpoint(tmp_path).name == "checkpoint-2"


def test_resume_sets_an_incomplete_checkpoint_aside_in_one_line_and_uses_the_one_before(tmp_path, capsys):
    from rlvr.training.resume import checkpoint_to_resume

    _checkpoint(tmp_path, 2)
    _checkpoint(tmp_path, 4, complete=False)
    assert checkpoint_to_resume(tmp_path, "latest") == tmp_path / "checkpoint-2"
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "checkpoint-4 is incomplete" in lines[0] and "incomplete-checkpoint-4" in lines[0]
    assert (tmp_path / "incomplete-checkpoint-4" / "optimizer.pt").is_file()  # kept for a look, out of the trainer's way


def test_resume_from_a_named_incomplete_checkpoint_is_one_clear_error(tmp_path):
    from rlvr.training.resume import checkpoint_to_resume

    path = _checkpoint(tmp_path, 2)
    (path / "optimizer.pt").unlink()
    with pytest.raises(RlvrError, match="optimizer.pt is missing"):
        checkpoint_to_resume(tmp_path, str(path))


def test_resume_with_only_incomplete_checkpoints_says_to_start_over(tmp_path):
    from rlvr.training.resume import checkpoint_to_resume

    _checkpoint(tmp_path, 2, complete=False)
    with pytest.raises(RlvrError, match="no complete checkpoint.*without --resume"):
        checkpoint_to_resume(tmp_path, True)


# ------------------------------------------------------------------ one run per output directory

HOLD = """
import sys, time
from rlvr import runlock
with runlock.holding(sys.argv[1], "rlvr train"):
    print("held", flush=True)
    time.sleep(60)
"""


def _holder(directory: Path) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(SRC)})
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_second_run_on_a_held_directory_refuses_naming_the_other_process(tmp_path):
    holder = _holder(tmp_path)
    try:
        with pytest.raises(RlvrError, match=rf"in use by rlvr train \(pid {holder.pid}"), \
                runlock.holding(tmp_path, "rlvr train"):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_of_a_killed_run_is_taken_over_and_said(tmp_path, capsys):
    holder = _holder(tmp_path)
    holder.kill()
    holder.wait()
    with runlock.holding(tmp_path, "rlvr train"):
        pass
    err = capsys.readouterr().err
    assert f"taking over the lock of rlvr train (pid {holder.pid}" in err
    assert not (tmp_path / runlock.LOCK_FILE).exists()  # released cleanly: nothing left to take over


def test_a_run_that_ended_cleanly_leaves_nothing_to_take_over(tmp_path, capsys):
    with runlock.holding(tmp_path, "rlvr eval"):
        pass
    with runlock.holding(tmp_path, "rlvr eval"):
        pass
    assert capsys.readouterr().err == ""


def test_a_run_that_fails_before_writing_leaves_no_empty_folder(tmp_path):
    fresh = tmp_path / "outputs" / "run"
    with pytest.raises(RlvrError), runlock.holding(fresh, "rlvr train"):
        raise RlvrError("a bad option")
    assert not (tmp_path / "outputs").exists()


def test_an_existing_output_folder_is_kept_even_when_empty(tmp_path):
    with runlock.holding(tmp_path, "rlvr train"):
        pass
    assert tmp_path.is_dir()


def test_a_folder_the_run_wrote_into_is_kept(tmp_path):
    fresh = tmp_path / "run"
    with runlock.holding(fresh, "rlvr train"):
        (fresh / "summary.json").write_text("{}")
    assert (fresh / "summary.json").is_file()


def test_the_lock_is_reentrant_within_one_process(tmp_path):
    with runlock.holding(tmp_path, "rlvr experiment"), runlock.holding(tmp_path / ".", "rlvr train"):
        assert (tmp_path / runlock.LOCK_FILE).exists()


def test_only_the_main_rank_takes_the_lock(tmp_path, monkeypatch):
    holder = _holder(tmp_path)
    try:
        monkeypatch.setenv("RANK", "1")
        with runlock.holding(tmp_path, "rlvr train"):  # a second rank of the same launched run
            pass
    finally:
        holder.kill()
        holder.wait()


# ------------------------------------------------------------------ rlvr eval: records kept and reused


def test_a_rerun_reuses_the_configurations_an_interrupted_evaluation_finished(tmp_path, capsys):
    path = tmp_path / "samples.partial.jsonl"
    sink = RecordSink(path, "key-1")
    sink.add([{"id": 1, "model": "base"}, {"id": 2, "model": "base"}], "base", 0)
    with path.open("a") as handle:  # the next configuration was cut by the kill: records without their end line
        handle.write(json.dumps({"id": 1, "model": "trained"}) + "\n" + '{"id": 2, "mod')
    again = RecordSink(path, "key-1")
    assert again.done("base", 0) and not again.done("trained", 0)
    assert [r["id"] for r in again.reuse("base", 0)] == [1, 2]
    assert [r["model"] for r in records_in(path)] == ["base", "base"]
    assert "reusing 2 records of 1 configuration" in capsys.readouterr().err


def test_an_evaluation_with_other_settings_starts_empty(tmp_path):
    path = tmp_path / "samples.partial.jsonl"
    RecordSink(path, "key-1").add([{"id": 1}], "base", 0)
    assert not RecordSink(path, "key-2").done("base", 0)
    assert records_in(path) == []


# ------------------------------------------------------------------ a full disk

needs_mount = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB filesystem (tmpfs) at tmp_path/disk, unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@needs_mount
def test_a_full_disk_is_recognised_whatever_the_writer_raises(small_disk):
    import torch
    from safetensors.torch import save_file

    with pytest.raises(Exception) as caught:
        save_file({"w": torch.zeros(1 << 19)}, str(small_disk / "adapter_model.safetensors"))
    assert atomic.out_of_space(caught.value, small_disk)
    assert not atomic.out_of_space(RuntimeError("a bug"), Path("/"))


@needs_mount
def test_a_full_disk_mid_atomic_write_leaves_the_previous_file(small_disk):
    path = small_disk / "summary.json"
    atomic.write_json(path, {"run": 1})
    with pytest.raises(OSError):
        atomic.write_text(path, "x" * (2 << 20))
    assert json.loads(path.read_text()) == {"run": 1}


def test_safetensors_full_disk_error_is_one_line_from_the_cli(capsys, monkeypatch):
    from safetensors import SafetensorError

    from rlvr import cli

    def fail(args):  # noqa: ANN001
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(cli, "build_parser", lambda: _parser_running(fail))
    assert cli.main(["go"]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_an_evaluation_rewriting_its_outputs_first_removes_the_previous_summary(tmp_path, monkeypatch):
    from rlvr.evaluation import outputs
    from rlvr.evaluation.evaluate import EvalResult

    (tmp_path / "summary.json").write_text('{"from": "an earlier evaluation"}')
    (tmp_path / "report.html").write_text("earlier")

    def killed(path, data, indent=2):  # noqa: ANN001
        raise KeyboardInterrupt  # killed after the new samples, before the new summary

    monkeypatch.setattr(outputs.atomic, "write_json", killed)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_outputs(EvalResult([{"id": 1}], {}), tmp_path)
    assert (tmp_path / "samples.jsonl").read_text() == '{"id": 1}\n'
    assert not (tmp_path / "summary.json").exists() and not (tmp_path / "report.html").exists()


@needs_mount
def test_a_full_disk_is_one_line_from_the_cli(small_disk, capsys, monkeypatch):
    from rlvr import cli

    def fill(args):  # noqa: ANN001
        atomic.write_text(small_disk / "big", "x" * (2 << 20))

    monkeypatch.setattr(cli, "build_parser", lambda: _parser_running(fill))
    assert cli.main(["go"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "no space left on the device" in lines[0] and "--resume" in lines[0]


def _parser_running(function):  # noqa: ANN001, ANN202
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_subparsers(dest="command").add_parser("go").set_defaults(func=function)
    return parser


@needs_mount
def test_a_full_disk_mid_checkpoint_is_one_line_and_the_previous_checkpoint_resumes(tiny_model_dir, small_disk,
                                                                                     monkeypatch):
    from rlvr.config import load_recipe
    from rlvr.training.run import train
    from rlvr.training.trainer import RlvrGRPOTrainer

    ballast, filled = small_disk / "ballast", []
    save_optimizer = RlvrGRPOTrainer._save_optimizer_and_scheduler

    def disk_fills_up_during_the_second_checkpoint(self, output_dir):  # noqa: ANN001, ANN202
        if self.state.global_step == 4 and not ballast.exists() and not filled:  # weights written; no room left
            filled.append(True)
            with open(ballast, "wb") as handle, pytest.raises(OSError):
                while True:
                    handle.write(b"\0" * 65536)
                    handle.flush()
        return save_optimizer(self, output_dir)

    monkeypatch.setattr(RlvrGRPOTrainer, "_save_optimizer_and_scheduler", disk_fills_up_during_the_second_checkpoint)
    out = small_disk / "run"
    recipe = load_recipe(None, [
        f"model.name_or_path={tiny_model_dir}", "task.train_size=16", "task.shots=1", "grpo.max_steps=4",
        "grpo.per_device_train_batch_size=8", "grpo.num_generations=4", "grpo.max_completion_length=8",
        "grpo.save_strategy=steps", "grpo.save_steps=2", "grpo.report_to=[]", "run.eval_items=0",
        "run.keep_best=false", "run.test_items=0", f"run.output_dir={out}"])
    with pytest.raises(RlvrError) as caught:
        train(recipe, quiet=True)
    message = str(caught.value)
    assert "disk full while saving checkpoint-4" in message and "checkpoint-2 is intact" in message
    assert "\n" not in message
    assert not (out / "checkpoint-4").exists() and saved.incomplete(out / "checkpoint-2") == ""
    ballast.unlink()
    result = train(recipe, resume=True, quiet=True)
    assert result.steps == 4 and (out / "summary.json").is_file()
