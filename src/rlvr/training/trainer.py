"""TRL's GRPOTrainer plus what it lacks for verifiable-answer tasks: stopping at the answer,
health metrics, and the practitioners' advantage controls (:mod:`rlvr.training.controls`)."""

from __future__ import annotations

import contextlib
import random
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import torch
from trl import GRPOTrainer

from rlvr.errors import RlvrError
from rlvr.evaluation.stopping import AnswerStop
from rlvr.training.controls import (
    Controls,
    can_splice,
    clip_advantages,
    drop_rows,
    group_rows,
    splice_rows,
    zero_variance_groups,
)
from rlvr.training.health import batch_metrics


class RlvrGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose transformers-generate rollouts stop at the task's answer line.

    Stopped completions are cut after the answer line and end with EOS, so TRL
    counts them as finished (not clipped) and the policy learns to stop there.
    vLLM rollouts are left to vLLM (pass ``stop`` through ``generation_kwargs``).

    Every training batch also gets health metrics (accuracy, format rate,
    advantage spread, time split; see :func:`rlvr.training.health.batch_metrics`) in
    TRL's ``_metrics``, so every ``report_to`` tracker logs them, and the
    ``controls`` act on its advantages before TRL's loss.
    """

    def __init__(
        self, *args: Any, stop_patterns: list[str] | None = None, controls: Controls | None = None, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        self.answer_stop = AnswerStop(self.processing_class, stop_patterns) if stop_patterns else None
        if self.answer_stop is not None:
            self.answer_stop.eos_token_id = self.eos_token_ids[0]
        self.stopped_ratio: list[float] = []
        self.controls = controls or Controls()
        if self.controls.zero_variance_groups == "resample" and self.accelerator.num_processes > 1:
            raise RlvrError("run.zero_variance_groups=resample needs a single process; use 'drop' when distributed.")
        self.last_batch: dict[str, Any] | None = None  # the latest training batch, for samples and histograms
        self._timings: dict[str, float] = defaultdict(float)
        self._scored: torch.Tensor | None = None
        self._resample_rng = random.Random(self.args.seed)

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._timings[name] += time.perf_counter() - start

    def _generate(self, prompts):  # noqa: ANN001, ANN202
        with self._timed("generation"):
            return super()._generate(prompts)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # noqa: ANN001, ANN202
        with self._timed("rewards"):
            self._scored = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        return self._scored

    def training_step(self, model, inputs, num_items_in_batch):  # noqa: ANN001, ANN201
        start = time.perf_counter()
        output = super().training_step(model, inputs, num_items_in_batch)
        self._timings["step"] += time.perf_counter() - start
        if self._step % self.current_gradient_accumulation_steps == 0:
            split = self._timings
            metrics = self._metrics["train"]
            metrics["time/generation"].append(split["generation"])
            metrics["time/rewards"].append(split["rewards"])
            metrics["time/update"].append(max(0.0, split["step"] - split["generation"] - split["rewards"]))
            metrics["time/step"].append(split["step"])
            self._timings = defaultdict(float)
        return output

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs):  # noqa: ANN001
        if self.answer_stop is None or self.use_vllm:
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs)
        model = self.accelerator.unwrap_model(self.model)
        with self.answer_stop.installed(model):
            completion_ids, logprobs = super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs
            )
        cuts = [self.answer_stop.cut(ids) for ids in completion_ids]
        self.stopped_ratio.append(sum(stopped for _, stopped in cuts) / max(1, len(cuts)))
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["completions/stopped_at_answer_ratio"].append(self.stopped_ratio[-1])
        return [ids for ids, _ in cuts], logprobs

    # --- controls and health, applied to each training rollout batch -------------------------------------------

    def _generate_and_score_completions(self, inputs):  # noqa: ANN001, ANN202
        batch = super()._generate_and_score_completions(inputs)
        if not self.model.training:
            return batch
        size = self.num_generations
        rows = self._scored_rows()
        zero = zero_variance_groups(self._total_rewards(), size)
        share_before = zero.float().mean().item()
        mode = self.controls.zero_variance_groups
        resampled = 0
        if mode == "resample" and bool(zero.any()) and can_splice(batch):
            resampled = self._resample(batch, zero, rows)
        dropped = zero.clone() if mode != "keep" else torch.zeros_like(zero)
        # Rewards (hence groups and rows) span all processes; the batch holds this process's rows only.
        count = batch["advantages"].size(0)
        local = slice(self.accelerator.process_index * count, (self.accelerator.process_index + 1) * count)
        dropped_rows = dropped.repeat_interleave(size)[local].to(batch["advantages"].device)
        rows = rows[local]
        if bool(dropped_rows.any()):
            batch = drop_rows(batch, dropped_rows)
        batch["advantages"], clipped = clip_advantages(batch["advantages"], self.controls.advantage_clip)
        metrics = self._metrics["train"]
        metrics["zero_variance/share"].append(share_before)
        metrics["zero_variance/dropped_share"].append(dropped.float().mean().item())
        metrics["zero_variance/resampled_share"].append(resampled / max(1, len(zero)))
        metrics["advantages/clipped_share"].append(clipped)
        advantages = batch["advantages"].detach().float().cpu()
        for key, value in batch_metrics(rows, self.reward_func_names, advantages, dropped_rows.cpu()).items():
            metrics[key].append(value)
        for row, advantage, drop in zip(rows, advantages.tolist(), dropped_rows.tolist(), strict=True):
            row["advantage"] = advantage
            row["dropped"] = bool(drop)
        self.last_batch = {"step": self.state.global_step + 1, "rows": rows, "advantages": advantages.tolist()}
        return batch

    def _total_rewards(self) -> torch.Tensor:
        weights = self.reward_weights.to(self._scored.device)
        return (torch.nan_to_num(self._scored, nan=0.0) * weights.unsqueeze(0)).sum(dim=1)

    def _scored_rows(self) -> list[dict[str, Any]]:
        """This batch's prompts, completions and per-component rewards (the tail of TRL's ``_logs``)."""
        count = self._scored.size(0)
        prompts = list(self._logs["prompt"])[-count:]
        completions = list(self._logs["completion"])[-count:]
        totals = self._total_rewards().tolist()
        rows = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=False)):
            rewards = {name: _number(self._scored[i, k].item()) for k, name in enumerate(self.reward_func_names)}
            rows.append({"prompt": prompt, "completion": completion, "rewards": rewards, "reward": totals[i]})
        return rows

    def _resample(self, batch: dict[str, Any], zero: torch.Tensor, rows: list[dict[str, Any]]) -> int:
        """DAPO dynamic sampling: roll out fresh prompts in place of zero-variance groups. Returns groups replaced."""
        size, replaced = self.num_generations, 0
        for _ in range(self.controls.resample_attempts):
            todo = zero.nonzero().flatten().tolist()
            if not todo:
                break
            fresh = super()._generate_and_score_completions(self._fresh_inputs(len(todo)))
            fresh_rows = self._scored_rows()
            useful = (~zero_variance_groups(self._total_rewards(), size)).nonzero().flatten().tolist()
            pairs = list(zip(todo, useful, strict=False))
            if not pairs:
                continue
            targets = group_rows([t for t, _ in pairs], size)
            sources = group_rows([s for _, s in pairs], size)
            splice_rows(batch, fresh, targets, sources, self._tokenizer.pad_token_id)
            for target, source in zip(targets, sources, strict=False):
                rows[target] = {**fresh_rows[source], "resampled": True}
            for target, _ in pairs:
                zero[target] = False
            replaced += len(pairs)
        return replaced

    def _fresh_inputs(self, groups: int) -> list[dict[str, Any]]:
        dataset = self.train_dataset
        picks = [self._resample_rng.randrange(len(dataset)) for _ in range(groups)]
        return [dict(dataset[i]) for i in picks for _ in range(self.num_generations)]


def _number(value: float) -> float | None:
    return None if value != value else value  # NaN (reward returned None) -> None
