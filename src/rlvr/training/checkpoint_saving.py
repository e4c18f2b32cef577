"""Checkpoints complete or absent: how :class:`rlvr.training.trainer.RlvrGRPOTrainer` saves one.

With a :class:`rlvr.training.resume.RunState` attached (``trainer.marks_checkpoints``), the trainer's save runs
without its rotation: older checkpoints may go only once rlvr has marked the new one complete, and then
``RunState.on_save`` calls :func:`rotate_checkpoints`. A save that fills the disk removes its incomplete
checkpoint (it frees space) and says in one line which earlier one is intact.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError


def save_checkpoint(trainer: Any, trl: Callable[[], Any]) -> None:
    """The trainer's save (``trl``) without its rotation when rlvr marks checkpoints complete; else just ``trl``."""
    if not getattr(trainer, "marks_checkpoints", False):  # no RunState attached: the trainer's own order
        return trl()
    limit = trainer.args.save_total_limit
    trainer.args.save_total_limit = None
    try:
        trl()
    except Exception as error:
        _checkpoint_failed(trainer, error)
        raise
    finally:
        trainer.args.save_total_limit = limit


def _checkpoint_failed(trainer: Any, error: Exception) -> None:
    """A full disk mid-save: remove the incomplete checkpoint (it frees space) and say so in one line."""
    from rlvr import atomic
    from rlvr.checkpoints import latest_checkpoint

    checkpoint = Path(trainer.args.output_dir) / f"checkpoint-{trainer.state.global_step}"
    if not atomic.out_of_space(error, trainer.args.output_dir):
        return
    shutil.rmtree(checkpoint, ignore_errors=True)
    kept = latest_checkpoint(Path(trainer.args.output_dir))
    raise RlvrError(f"disk full while saving {checkpoint.name} in {trainer.args.output_dir}: the incomplete "
                    f"checkpoint was removed and {kept.name if kept else 'no earlier checkpoint'} is intact; free "
                    "space, then rerun with --resume.") from None


def rotate_checkpoints(trainer: Any) -> None:
    """Remove checkpoints beyond ``save_total_limit`` (the trainer's rotation, newest by modification time)."""
    from transformers.trainer_utils import rotate_checkpoints as rotate

    rotate(output_dir=trainer.args.output_dir, save_total_limit=trainer.args.save_total_limit,
           best_model_checkpoint=trainer.state.best_model_checkpoint, use_mtime=True)
