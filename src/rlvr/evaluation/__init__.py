"""Evaluation: held-out items, generation backends and decoding, scoring, statistics, figures and HTML.

The library entry point is :func:`evaluate` (``rlvr eval`` is a thin wrapper over it). Nothing here imports
:mod:`rlvr.training`.
"""

from rlvr.evaluation.evaluate import EvalConfig, EvalResult, ModelSpec, evaluate, model_specs, write_outputs

__all__ = ["EvalConfig", "EvalResult", "ModelSpec", "evaluate", "model_specs", "write_outputs"]
