"""Training: recipe -> TRL ``GRPOTrainer`` (the one subclass), controls, health, callbacks, samples and
in-training evaluation.

The library entry point is :func:`train` (``rlvr train`` is a thin wrapper over it). Training may use the
public API of :mod:`rlvr.evaluation` (in-training evaluation); evaluation never imports training.
"""

from rlvr.training.run import build_trainer, train
from rlvr.training.run_outputs import TrainResult

__all__ = ["TrainResult", "build_trainer", "train"]
