"""Console output for training: a progress bar plus one compact line per logging step."""

from __future__ import annotations

import sys
from typing import Any

from transformers import ProgressCallback, TrainerCallback

# (label, metric key, format) in the order shown.
_COLUMNS = [
    ("reward", "reward", "{:.3f}"),
    ("±", "reward_std", "{:.2f}"),
    ("acc", "health/accuracy", "{:.0%}"),
    ("zero-var groups", "zero_variance/share", "{:.0%}"),
    ("zero-var groups", "frac_reward_zero_std", "{:.0%}"),  # TRL's, when rlvr's own share is absent
    ("prompts seen", "selection/distinct_prompts", "{:.0f}"),  # run.prompt_selection: online
    ("level", "curriculum/level", "{:.3g}"),  # the task's curriculum: level/top and the window's pass rate
    ("adv±", "advantages/std", "{:.2f}"),
    ("tool used", "tools/used_share", "{:.0%}"),  # task.tools: completions that called one, and failed calls
    ("failed calls", "tools/failure_frequency", "{:.0%}"),
    ("len", "completions/mean_length", "{:.0f}"),
    ("stopped", "completions/stopped_at_answer_ratio", "{:.0%}"),
    ("truncated", "completions/clipped_ratio", "{:.0%}"),
    ("kl", "kl", "{:.3f}"),
    ("lr", "learning_rate", "{:.1e}"),
    ("s gen/rew/upd", "time/generation", "{:.1f}"),
]


def format_log(logs: dict[str, Any]) -> str:
    """One readable line from a TRL log dict: total reward, each component, health numbers."""
    parts = []
    for label, key, fmt in _COLUMNS[:2]:
        if key in logs:
            parts.append(f"{label} {fmt.format(logs[key])}")
    components = [
        f"{key.split('/')[1]} {logs[key]:.3f}" for key in sorted(logs) if key.startswith("rewards/") and key.endswith("/mean")
    ]
    if components:
        parts.append("(" + ", ".join(components) + ")")
    for label, key, fmt in _COLUMNS[2:]:
        if logs.get(key) is None or (key == "kl" and not logs[key]):
            continue
        if key == "frac_reward_zero_std" and "zero_variance/share" in logs:
            continue
        text = fmt.format(logs[key])
        if key == "time/generation":  # the step-time split: generation/reward scoring/update
            text += "".join(f"/{logs.get(k) or 0:.1f}" for k in ("time/rewards", "time/update"))
        if key == "curriculum/level":
            rate = logs.get("curriculum/pass_rate")
            text += f"/{logs.get('curriculum/top', 0):.3g}" + (f" {rate:.0%}" if rate is not None else "")
        parts.append(f"{label} {text}")
    return "  ".join(parts)


class ConsoleCallback(ProgressCallback):
    """The usual progress bar, with compact reward lines instead of raw metric dicts."""

    @classmethod
    def install(cls, trainer: Any) -> None:
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(cls())

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs:
            return
        line = format_log(logs)
        if line:
            message = f"step {state.global_step}/{state.max_steps}  {line}"
        elif "train_runtime" in logs:
            message = f"done in {logs['train_runtime']:.0f} s"
        else:
            return
        if self.training_bar is not None:
            self.training_bar.write(message)
        else:
            print(message, flush=True)


class SharedPromptCallback(TrainerCallback):
    """Records which path (shared prompt or TRL's per-row) rollouts and loss take, and the precision (the weights'
    dtype and why), as MLflow params."""

    def __init__(self, trainer: Any):
        self.trainer = trainer

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if "mlflow" not in sys.modules or not state.is_world_process_zero:
            return
        import mlflow

        if mlflow.active_run() is not None:
            paths = self.trainer.shared_prompt.summary()
            params = {f"rlvr.shared_prompt.{half}": path for half, path in paths.items()}
            precision = getattr(self.trainer, "rlvr_precision", None)
            if precision is not None:
                params.update({f"rlvr.precision.{key}": value for key, value in precision.summary().items()})
            mlflow.log_params(_not_yet_logged(mlflow, params))


def _not_yet_logged(mlflow: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` less those the active run already has (a resumed run continues its MLflow run, whose params cannot
    change); a value that did change (resumed on another machine, in another precision) is said in one line."""
    logged = mlflow.get_run(mlflow.active_run().info.run_id).data.params
    for key in sorted(k for k in params if k in logged and logged[k] != str(params[k])):
        print(f"rlvr: warning: {key} is {params[key]} in this part of the run, {logged[key]} in the part before "
              "(MLflow keeps the first).", file=sys.stderr, flush=True)
    return {key: value for key, value in params.items() if key not in logged}
