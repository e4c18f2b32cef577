"""Runs that survive a kill: what a checkpoint needs beyond the trainer's own state.

A run killed with SIGKILL leaves its checkpoints and nothing else: its MLflow run stays RUNNING,
the held-out evaluation of step 0 lives only in the dead process, and so does the time spent.
:class:`RunState` writes, with every checkpoint (``checkpoint-N/rlvr_state.json``), the training
seconds so far, the evaluations so far (with their per-item verdicts), the best-rewarded training completions
(the verdict's constant-completion candidates) and the MLflow run id; and
at the start of training ``rlvr_run.json`` in the output directory names the MLflow run.

``rlvr train --resume`` reads them back: the MLflow run of the checkpoint continues (same run id,
so MLflow shows one run, FINISHED at the end), the before/after table keeps its step-0 baseline,
and ``summary.json`` counts the time of every part. A fresh ``rlvr train`` in a directory whose
previous run was killed marks that MLflow run KILLED (tagged with the run that replaced it), so
no run is left RUNNING.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rlvr import atomic, faults, runlock
from rlvr.checkpoints import STATE_FILE, file_sizes
from rlvr.errors import RlvrError

RUN_FILE = "rlvr_run.json"


def load_state(checkpoint: str | Path | None) -> dict[str, Any]:
    """The state saved with ``checkpoint`` ({} when there is none, e.g. a checkpoint of an older rlvr)."""
    if not checkpoint:
        return {}
    path = Path(checkpoint) / STATE_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def previous_run_id(output_dir: Path) -> str | None:
    try:
        return json.loads((output_dir / RUN_FILE).read_text()).get("mlflow_run_id")
    except (OSError, ValueError):
        return None


def close_orphan(output_dir: Path, tracking_uri: str | None) -> str | None:
    """Mark the output directory's previous MLflow run KILLED if it is still RUNNING; its id, else None.

    Called before a fresh (not resumed) run: the previous process is gone, or it would not be
    starting again in the same directory.
    """
    try:
        previous = json.loads((output_dir / RUN_FILE).read_text())
    except (OSError, ValueError):
        return None
    run_id, pid = previous.get("mlflow_run_id"), previous.get("pid")
    if not run_id or (isinstance(pid, int) and pid != os.getpid() and atomic.pid_alive(pid)):
        return None  # nothing recorded, or that run's process is still training
    try:
        import mlflow

        client = mlflow.MlflowClient(tracking_uri=tracking_uri)
        if client.get_run(run_id).info.status != "RUNNING":
            return None
        client.set_tag(run_id, "rlvr.ended", "killed: the process died; a fresh run replaced it")
        client.set_terminated(run_id, status="KILLED")
        return run_id
    except Exception:  # another store, a deleted run: nothing to close
        return None


def link_replacement(orphan: str | None, tracking_uri: str | None) -> None:
    """Tag the killed run with the id of the run that replaced it (once that one has started)."""
    if not orphan:
        return
    try:
        import mlflow

        run = mlflow.active_run()
        if run is not None:
            mlflow.MlflowClient(tracking_uri=tracking_uri).set_tag(orphan, "rlvr.replaced_by", run.info.run_id)
            mlflow.set_tag("rlvr.replaces", orphan)
    except Exception:
        pass


def _flush_mlflow() -> None:
    """MLflow logs asynchronously: what is still queued dies with a killed process."""
    try:
        import mlflow

        if mlflow.active_run() is not None:
            mlflow.flush_async_logging()
    except Exception:
        pass


def _active_run_id() -> str | None:
    try:
        import mlflow

        run = mlflow.active_run()
        return run.info.run_id if run is not None else None
    except Exception:
        return None


class RunState(TrainerCallback):
    """Saves the run's own state with every checkpoint; knows the time and evaluations of earlier parts."""

    def __init__(self, trainer: Any, output_dir: Path, restored: dict[str, Any], orphan: str | None = None,
                 tracking_uri: str | None = None):
        self.trainer = trainer
        self.output_dir = output_dir
        self.prior_seconds = float(restored.get("seconds", 0.0))
        self.started = time.time()
        self.orphan = orphan
        self.tracking_uri = tracking_uri

    def seconds(self) -> float:
        """Training time of this run and every part before its checkpoint."""
        return self.prior_seconds + time.time() - self.started

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # After the MLflow callback (added with the trainer, before this one) has started its run.
        if not state.is_world_process_zero:
            return
        run_id = _active_run_id()
        link_replacement(self.orphan, self.tracking_uri)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        _write_json(self.output_dir / RUN_FILE, {"mlflow_run_id": run_id, "pid": os.getpid()})

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        from rlvr.training.evaluation import EvalCallback

        _flush_mlflow()  # metrics up to the checkpoint are stored before it counts as saved
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if checkpoint.is_dir():
            faults.point("checkpoint-save")
            _write_json(checkpoint / STATE_FILE, {  # last: its presence marks the checkpoint complete
                "step": state.global_step,
                "seconds": self.seconds(),
                "evaluations": EvalCallback.results_of(self.trainer),
                "test_evaluations": EvalCallback.results_of(self.trainer, "verdict"),  # the verdict's step-0 baseline
                "top_completions": _top_completions(self.trainer),  # the verdict's constant-completion candidates
                "mlflow_run_id": _active_run_id(),
                "files": file_sizes(checkpoint),
            })
        rotate = getattr(self.trainer, "rotate_checkpoints", None)
        if rotate is not None:
            rotate()  # only now may older checkpoints go: the newest is complete


def _top_completions(trainer: Any) -> list[dict[str, Any]]:
    kept = getattr(trainer, "top_completions", None)
    return kept.to_json() if kept is not None else []


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically: a kill mid-write leaves the previous file, never half of one."""
    atomic.write_json(path, data, indent=1)


@contextlib.contextmanager
def continuing(recipe: Any, output_dir: Path, checkpoint: Path | None) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Around building and training: (state restored from ``checkpoint``, previous run closed as KILLED).

    Resuming, the checkpoint's MLflow run id goes to ``MLFLOW_RUN_ID`` for the trainer's MLflow
    callback (which reattaches to that run) and is restored after training.
    """
    from rlvr.training.tracking import tracking_uri

    uri = tracking_uri(recipe.run.tracking_uri)
    restored = load_state(checkpoint)
    orphan = None if checkpoint else close_orphan(output_dir, uri)
    run_id = restored.get("mlflow_run_id") or (previous_run_id(output_dir) if checkpoint else None)
    saved = os.environ.get("MLFLOW_RUN_ID")
    if run_id:
        os.environ["MLFLOW_RUN_ID"] = run_id
    try:
        yield restored, orphan
    finally:
        if run_id:
            if saved is None:
                os.environ.pop("MLFLOW_RUN_ID", None)
            else:
                os.environ["MLFLOW_RUN_ID"] = saved


def attach(trainer: Any, recipe: Any, restored: dict[str, Any], orphan: str | None) -> RunState:
    """Add the :class:`RunState` callback; give the evaluation callbacks the evaluations restored and the trainer
    the best training rollouts restored."""
    from rlvr.training.evaluation import EvalCallback
    from rlvr.training.tracking import tracking_uri

    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, EvalCallback):
            key = "test_evaluations" if callback.role == "verdict" else "evaluations"
            callback.evaluations = list(restored.get(key, []))
    if hasattr(trainer, "top_completions"):  # the best training rollouts seen up to the checkpoint
        from rlvr.training.top_completions import TopCompletions

        trainer.top_completions = TopCompletions.from_json(restored.get("top_completions"))
    state = RunState(trainer, recipe.output_dir, restored, orphan, tracking_uri(recipe.run.tracking_uri))
    # Right after MLflow's callback (which starts the run at train begin) and before the evaluations of step 0:
    # a kill during those must still find the MLflow run named in rlvr_run.json, to close it.
    callbacks = trainer.callback_handler.callbacks
    after = [i for i, c in enumerate(callbacks) if type(c).__name__ == "MLflowCallback"]
    callbacks.insert(after[0] + 1 if after else len(callbacks), state)
    trainer.marks_checkpoints = True  # RunState marks each checkpoint complete, then rotates
    return state


def at_last_step(trainer: Any, checkpoint: Path | None) -> bool:
    """Whether ``checkpoint`` was saved at the run's last step (a kill after it: saving the outputs was left)."""
    if checkpoint is None or trainer.args.max_steps <= 0 or getattr(trainer, "is_deepspeed_enabled", False):
        return False  # under DeepSpeed the engine loads its own checkpoint inside train(): left to it
    try:
        step = json.loads((Path(checkpoint) / "trainer_state.json").read_text())["global_step"]
    except (OSError, ValueError, KeyError):
        return False
    return step >= trainer.args.max_steps


def finish_from_last_checkpoint(trainer: Any, checkpoint: Path, run_id: str | None) -> None:
    """Take the weights and state of a checkpoint saved at the last step, without the trainer's loop.

    Given a checkpoint at ``max_steps``, transformers' loop still runs one more step before it checks
    the step count, so the saved adapter would no longer be the one the restored verdict judged. Here the
    checkpoint's weights and trainer state are loaded as they are, and the MLflow run the kill left open
    is marked finished.
    """
    from transformers import TrainerState

    trainer.state = TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json"))
    trainer._load_from_checkpoint(str(checkpoint))  # transformers' Trainer (not TRL): the weights, LoRA or full
    print(f"rlvr: --resume: {Path(checkpoint).name} was saved at the last step; its weights are the result "
          "(no step is trained again).", file=sys.stderr, flush=True)
    if run_id:
        try:
            import mlflow

            mlflow.MlflowClient().set_terminated(run_id, status="FINISHED")
        except Exception:  # another store, a deleted run: nothing to close
            pass


def checkpoint_to_resume(output_dir: Path, resume: bool | str) -> Path | None:
    """The checkpoint ``resume`` names, if complete: ``True``/'latest' is the newest complete one in
    ``output_dir``, and each newer incomplete one (a save cut by a kill or a full disk) is set aside, in one
    line each."""
    from rlvr import checkpoints as saved

    if not resume:
        return None
    if isinstance(resume, str) and resume not in ("true", "latest"):
        if not Path(resume).is_dir():
            raise RlvrError(f"checkpoint to resume from not found: {resume}")
        why = saved.incomplete(Path(resume))
        if why:
            raise RlvrError(f"checkpoint {resume} is incomplete ({why}); resume from an earlier one or with --resume "
                            "for the latest complete one.")
        return Path(resume)
    found = saved.checkpoints(output_dir)
    if not found:
        raise RlvrError(f"--resume: no checkpoint-* directory in {output_dir}; train with grpo.save_steps set first.")
    for checkpoint in found:
        why = saved.incomplete(checkpoint)
        if not why:
            return checkpoint
        aside = saved.set_aside(checkpoint) if runlock.main_rank() else checkpoint
        print(f"rlvr: --resume: {checkpoint.name} is incomplete ({why}); set aside as {aside.name}, "
              "resuming from the one before.", file=sys.stderr, flush=True)
    raise RlvrError(f"--resume: no complete checkpoint in {output_dir} (every one was cut short and set aside); "
                    "run without --resume to start from step 0.")
