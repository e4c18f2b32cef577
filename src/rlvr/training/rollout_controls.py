"""The controls and health metrics applied to each training rollout batch, before TRL's loss sees it.

:func:`controlled_batch` is :class:`rlvr.training.trainer.RlvrGRPOTrainer`'s rollout hook: TRL's rollout, then
the practitioners' advantage controls (:mod:`rlvr.training.controls`: zero-variance groups kept, dropped or
resampled, advantages clipped), the health metrics (:func:`rlvr.training.health.batch_metrics`) in TRL's metric
lists, the best-rewarded rollouts offered to the trainer's ``top_completions``, each rollout's judged completions
counted into the prompt estimates (``prompt_selection``), and the batch's rows kept as ``last_batch`` for samples
and histograms.
"""

from __future__ import annotations

from typing import Any

import torch

from rlvr.errors import RlvrError
from rlvr.training.controls import (
    clip_advantages,
    drop_rows,
    group_rows,
    splice_rows,
    unspliceable_keys,
    zero_variance_groups,
)
from rlvr.training.health import batch_metrics


def controlled_batch(trainer: Any, inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """``trainer``'s rollout of ``inputs`` with the controls applied and the health metrics logged (training only)."""
    batch = trainer.trl_rollout(trainer, inputs)
    if not trainer.model.training:
        return batch
    if getattr(trainer, "tools", None) and batch.get("tool_mask") is not None:  # TRL's tool loop ran (rlvr.tools)
        from rlvr.tools.stats import tool_batch_metrics

        for key, value in tool_batch_metrics(batch, trainer.processing_class, trainer.max_tool_calling_iterations).items():
            trainer.metric_lists["train"][key].append(value)
    size = trainer.num_generations
    rows = scored_rows(trainer)
    observe(trainer, inputs, rows)
    step = trainer.state.global_step + 1
    trainer.top_completions.offer(rows, step)  # every process's rows (rewards and completions are gathered)
    zero = zero_variance_groups(total_rewards(trainer), size)
    share_before = zero.float().mean().item()
    mode = trainer.controls.zero_variance_groups
    resampled = 0
    if mode == "resample" and bool(zero.any()):
        resampled = resample(trainer, batch, zero, rows)
    dropped = zero.clone() if mode != "keep" else torch.zeros_like(zero)
    # Rewards (hence groups and rows) span all processes; the batch holds this process's rows only.
    count = batch["advantages"].size(0)
    process = trainer.accelerator.process_index
    local = slice(process * count, (process + 1) * count)
    dropped_rows = dropped.repeat_interleave(size)[local].to(batch["advantages"].device)
    rows = rows[local]
    if bool(dropped_rows.any()):
        batch = drop_rows(batch, dropped_rows)
    batch["advantages"], clipped = clip_advantages(batch["advantages"], trainer.controls.advantage_clip)
    metrics = trainer.metric_lists["train"]
    metrics["zero_variance/share"].append(share_before)
    metrics["zero_variance/dropped_share"].append(dropped.float().mean().item())
    metrics["zero_variance/resampled_share"].append(resampled / max(1, len(zero)))
    metrics["advantages/clipped_share"].append(clipped)
    advantages = batch["advantages"].detach().float().cpu()
    for key, value in batch_metrics(rows, trainer.task, advantages, dropped_rows.cpu()).items():
        metrics[key].append(value)
    for row, advantage, drop in zip(rows, advantages.tolist(), dropped_rows.tolist(), strict=True):
        row["advantage"] = advantage
        row["dropped"] = bool(drop)
    trainer.last_batch = {"step": step, "rows": rows, "advantages": advantages.tolist()}
    return batch


def total_rewards(trainer: Any) -> torch.Tensor:
    """The weighted reward of each row of ``trainer``'s latest scored rollout (a missing reward counts 0)."""
    weights = trainer.reward_weights.to(trainer.scored.device)
    return (torch.nan_to_num(trainer.scored, nan=0.0) * weights.unsqueeze(0)).sum(dim=1)


def scored_rows(trainer: Any) -> list[dict[str, Any]]:
    """This batch's prompts, completions and per-component rewards (the tail of TRL's completion log)."""
    scored = trainer.scored
    count = scored.size(0)
    prompts = list(trainer.completion_log["prompt"])[-count:]
    completions = list(trainer.completion_log["completion"])[-count:]
    totals = total_rewards(trainer).tolist()
    rows = []
    for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=False)):
        rewards = {name: _number(scored[i, k].item()) for k, name in enumerate(trainer.reward_func_names)}
        rows.append({"prompt": prompt, "completion": completion, "rewards": rewards, "reward": totals[i]})
    return rows


def resample(trainer: Any, batch: dict[str, Any], zero: torch.Tensor, rows: list[dict[str, Any]]) -> int:
    """DAPO dynamic sampling: roll out fresh prompts in place of zero-variance groups. Returns groups replaced."""
    unknown = unspliceable_keys(batch)
    if unknown:
        raise RlvrError(f"run.zero_variance_groups=resample cannot move rollout rows holding {', '.join(unknown)} "
                        "(image or tool inputs); use 'drop'.")
    size, replaced = trainer.num_generations, 0
    for _ in range(trainer.controls.resample_attempts):
        todo = zero.nonzero().flatten().tolist()
        if not todo:
            break
        fresh_inputs = _fresh_inputs(trainer, len(todo))
        fresh = trainer.trl_rollout(trainer, fresh_inputs)
        fresh_rows = scored_rows(trainer)
        observe(trainer, fresh_inputs, fresh_rows)
        trainer.top_completions.offer(fresh_rows, trainer.state.global_step + 1)
        useful = (~zero_variance_groups(total_rewards(trainer), size)).nonzero().flatten().tolist()
        pairs = list(zip(todo, useful, strict=False))
        if not pairs:
            continue
        targets = group_rows([t for t, _ in pairs], size)
        sources = group_rows([s for _, s in pairs], size)
        splice_rows(batch, fresh, targets, sources, trainer.pad_token_id)
        for target, source in zip(targets, sources, strict=False):
            rows[target] = {**fresh_rows[source], "resampled": True}
        for target, _ in pairs:
            zero[target] = False
        replaced += len(pairs)
    return replaced


def _fresh_inputs(trainer: Any, groups: int) -> list[dict[str, Any]]:
    dataset = trainer.train_dataset
    selection = getattr(trainer, "prompt_selection", None)
    picks = selection.fresh_picks(groups) if selection is not None else None  # online: drawn by the estimates
    if picks is None:
        picks = [trainer.resample_rng.randrange(len(dataset)) for _ in range(groups)]
    return [dict(dataset[i]) for i in picks for _ in range(trainer.num_generations)]


def observe(trainer: Any, inputs: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """One rollout's judged completions into the prompt estimates (:mod:`rlvr.training.prompt_selection`)."""
    selection = getattr(trainer, "prompt_selection", None)
    if selection is not None:
        selection.observe(inputs, rows, trainer.task)


def _number(value: float) -> float | None:
    return None if value != value else value  # NaN (reward returned None) -> None
