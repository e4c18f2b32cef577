"""TRL's ``GRPOConfig`` for a recipe on this machine: CPU settings (no mixed-precision autocast, gloo for DeepSpeed
without GPUs), YAML's quirks, MLflow's store, and the library notices nobody can act on kept quiet."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from rlvr.config import Recipe
from rlvr.errors import RlvrError
from rlvr.run_parts import set_env
from rlvr.training.tracking import prepare_store, tracking_uri


def grpo_config(recipe: Recipe, reward_weights: list[float] | None = None) -> Any:
    """TRL's GRPOConfig from the recipe's ``grpo`` section; ``reward_weights``: the recipe's reward weights."""
    import torch
    from trl import GRPOConfig

    values = dict(recipe.grpo)
    if reward_weights is not None:
        values["reward_weights"] = list(reward_weights)
    on_cpu = not torch.cuda.is_available()
    if on_cpu:
        for precision in ("bf16", "fp16"):
            if values.get(precision):
                print(f"rlvr: warning: grpo.{precision} (mixed-precision autocast) needs a GPU and is off on a CPU; a "
                      "CPU computes in bf16 with bf16 base weights instead (model.dtype: auto or bfloat16).",
                      file=sys.stderr)
            values[precision] = False
        if values.get("tf32"):
            print("rlvr: warning: tf32 needs an Ampere or newer GPU; ignored on CPU.", file=sys.stderr)
            values["tf32"] = None
        values["use_cpu"] = True
        if deepspeed_launched():
            join_deepspeed_on_cpu()
            values["use_cpu"] = False  # True would make Accelerate leave DeepSpeed out
            values["accelerator_config"] = {**(values.get("accelerator_config") or {}), "use_configured_state": True}
    quiet_library_deprecations()
    for strategy in ("save_strategy", "eval_strategy", "logging_strategy"):
        if values.get(strategy) is False:  # YAML reads a bare `no` as false
            values[strategy] = "no"
    values.setdefault("report_to", ["mlflow"])
    values.setdefault("run_name", recipe.name)
    values["output_dir"] = str(recipe.output_dir)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return GRPOConfig(**values)
    except (ValueError, TypeError) as error:
        raise RlvrError(f"grpo settings rejected by TRL: {str(error).splitlines()[0]}") from None


def deepspeed_launched(env: Any = None) -> bool:
    """Whether ``accelerate launch`` started this process with a DeepSpeed config."""
    env = os.environ if env is None else env
    return str(env.get("ACCELERATE_USE_DEEPSPEED", "")).lower() in ("1", "true", "yes")


def quiet_library_deprecations() -> None:
    """Hide deprecation notices that libraries trigger inside training, which no user can act on and which are
    printed again whenever a library resets the warning filters: torch's for the collectives DeepSpeed 0.19 calls
    (``all_gather_into_tensor``, ``reduce_scatter_tensor``: 220 lines in a 4-step ZeRO-3 run) and transformers'
    for ``is_gradient_checkpointing``, which TRL 1.16 reads around every generation."""
    warnings.filterwarnings("ignore", message=r"`torch\.distributed\.\w+` is deprecated", category=FutureWarning)
    warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)


def join_deepspeed_on_cpu() -> None:
    """Start Accelerate's process state for DeepSpeed on a machine without GPUs: gloo, all processes counted.

    Accelerate picks a communication backend for accelerator devices only (NCCL on CUDA, ...). On a CPU it
    picks none, counts one process, and DeepSpeed's batch check then fails ("2 != 2 * 1 * 2"). Started here
    with gloo, DeepSpeed's CPU accelerator joins the processes, and the GRPOConfig reuses this state
    (``accelerator_config.use_configured_state``) instead of resetting it.
    """
    from accelerate import PartialState

    PartialState(backend="gloo")


def configure_tracking(recipe: Recipe, args: Any) -> None:
    report_to = args.report_to or []
    if "mlflow" not in report_to:
        return
    uri = tracking_uri(recipe.run.tracking_uri)
    set_env("MLFLOW_TRACKING_URI", uri)
    set_env("MLFLOW_EXPERIMENT_NAME", recipe.run.experiment)
    prepare_store(os.environ["MLFLOW_TRACKING_URI"])  # a new SQLite store made once, even by runs starting together
