"""TRL's GRPOTrainer plus what it lacks for verifiable-answer tasks: stopping at the answer,
shared-prompt rollouts and loss, health metrics, and the practitioners' advantage controls
(:mod:`rlvr.training.controls`). TRL's private extension points are reached through
:mod:`rlvr.training.trl_compat` only."""

from __future__ import annotations

import contextlib
import random
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from rlvr import faults
from rlvr.errors import RlvrError
from rlvr.evaluation.attention import half_precision_attention
from rlvr.evaluation.decoding import decode, supports_compaction, warpers_for
from rlvr.evaluation.stopping import AnswerStop
from rlvr.memory import release_memory
from rlvr.training.chunked_loss import (
    average_gradients,
    ddp_module,
    loss_chunks,
    loss_mask,
    select_rows,
    split_group_runs,
    why_not_chunked,
    why_not_distributed,
    zero_gradient_term,
)
from rlvr.training.controls import (
    Controls,
    clip_advantages,
    drop_rows,
    group_rows,
    splice_rows,
    unspliceable_keys,
    zero_variance_groups,
)
from rlvr.training.evaluation import merged_adapter
from rlvr.training.half_precision import half_precision_lora
from rlvr.training.health import batch_metrics
from rlvr.training.shared_prompt import (
    SharedPromptPlan,
    SplitGroupPrompt,
    has_active_dropout,
    shared_token_logps,
)
from rlvr.training.top_completions import TopCompletions
from rlvr.training.trl_compat import Float32Copies, TrlHooks, frozen_head_in_float32


class RlvrGRPOTrainer(TrlHooks):
    """GRPOTrainer with shared-prompt rollouts and loss, rollouts that stop at the task's answer line, and controls.

    * Rollouts (transformers generation): each group's prompt is prefilled once and its KV cache
      repeated for the group's completions, and finished rows leave the batch
      (:func:`rlvr.evaluation.decoding.decode`), sampling with TRL's temperature, top-k, top-p and min-p.
    * Stopping: completions are cut after the answer line and end with EOS, so TRL counts them as
      finished (not clipped) and the policy learns to stop there. vLLM rollouts are left to vLLM
      (pass ``stop`` through ``generation_kwargs``).
    * Loss: the policy's (and reference's) per-token log-probs run each group's prompt once
      (:mod:`rlvr.training.shared_prompt`), and the loss runs one group at a time, each group
      back-propagated before the next (:mod:`rlvr.training.chunked_loss`), so one group's activations
      are alive at a time; a group whose advantages are all zero, with ``beta`` 0, is not forwarded
      (its loss and gradient are exactly zero).
    * :attr:`shared_prompt` says which path each half takes, and why TRL's per-row path where it runs.

    Every training batch also gets health metrics (accuracy, format rate, advantage spread, time
    split; see :func:`rlvr.training.health.batch_metrics`) in TRL's metric lists, so every
    ``report_to`` tracker logs them, and the ``controls`` act on its advantages before TRL's loss.
    """

    def __init__(
        self, *args: Any, stop_patterns: list[str] | None = None, controls: Controls | None = None,
        task: Any = None, max_prompt_tokens: int | None = None, loss_chunk_rows: int = 0, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        self.loss_chunk_rows = loss_chunk_rows or self.num_generations  # most rows per piece of the loss
        self.task = task  # judges health accuracy from the reward components (rlvr.tasks.base.Task)
        self.max_prompt_tokens = max_prompt_tokens
        self.answer_stop = AnswerStop(self.processing_class, stop_patterns) if stop_patterns else None
        if self.answer_stop is not None:
            self.answer_stop.eos_token_id = self.eos_token_ids[0]
        self.stopped_ratio: list[float] = []
        self.controls = controls or Controls()
        if self.controls.zero_variance_groups == "resample" and self.accelerator.num_processes > 1:
            raise RlvrError("run.zero_variance_groups=resample needs a single process; use 'drop' when distributed.")
        self.shared_prompt = SharedPromptPlan(self._why_not_shared_rollouts(), self._why_not_shared_loss(),
                                              why_not_chunked(self))
        if self.loss_chunk_rows < self.num_generations:
            self.shared_prompt.piece_rows = self.loss_chunk_rows
        self._shared_loss_checked = False
        self._split_group: SplitGroupPrompt | None = None  # the prompt of the group whose pieces the loss is running
        self.last_batch: dict[str, Any] | None = None  # the latest training batch, for samples and histograms
        self._timings: dict[str, float] = defaultdict(float)
        self._scored: torch.Tensor | None = None
        self._resample_rng = random.Random(self.args.seed)
        self.top_completions = TopCompletions()  # the best-rewarded rollouts: the verdict's constant-completion candidates
        self._head_copies = Float32Copies()  # float32 copies of the frozen LM head's bf16 weight (loss backward, CPU)

    # --- which path: shared prompt or TRL's per-row one --------------------------------------------------------

    def _why_not_shared_rollouts(self) -> str | None:
        from transformers import ProcessorMixin

        if self.use_vllm:
            return "vLLM generates the rollouts"
        if self.use_transformers_continuous_batching:
            return "transformers continuous batching generates the rollouts"
        if self.is_fsdp_enabled:
            return "FSDP shards the parameters generation needs"
        if isinstance(self.processing_class, ProcessorMixin):
            return "multimodal processor"
        if not supports_compaction(self.accelerator.unwrap_model(self.model), self.generation_config):
            return "a generation setting rlvr.evaluation.decoding does not apply (e.g. repetition_penalty)"
        return None

    def _why_not_shared_loss(self) -> str | None:
        from transformers import ProcessorMixin

        if self.is_deepspeed_enabled:
            # ZeRO reduces gradients in every backward (and ZeRO-3 gathers parameters in every forward), so the
            # processes must run the same passes piece for piece; a group's prompt pass runs where each process's
            # groups put it.
            return ("DeepSpeed: every process must run the same forwards and backwards, piece for piece, and the "
                    "prompt passes follow each process's groups")
        if self.is_fsdp_enabled:
            return f"the prompt pass runs outside the engine's forward ({why_not_distributed(self)})"
        if self.accelerator.num_processes > 1 and why_not_chunked(self) is not None:
            # Under DDP the pieces run on the module DDP wraps; TRL's whole-batch forward runs through DDP's.
            return "several processes without the piecewise loss: the prompt pass would run outside DDP's forward"
        if isinstance(self.processing_class, ProcessorMixin):
            return "multimodal processor"
        if self.args.gradient_checkpointing:
            return "gradient checkpointing drops the KV cache the completions read; set grpo.gradient_checkpointing: false"
        if has_active_dropout(self.model):
            return "dropout is active, so rows sharing a prompt pass would share its dropout mask; set grpo.disable_dropout: true"
        if self.aux_loss_enabled:
            return "MoE auxiliary loss"
        return None

    # --- timing --------------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._timings[name] += time.perf_counter() - start

    def tokenize_prompts(self, trl: Callable[[], Any]) -> Any:
        """TRL's tokenization, then each prompt cut to its last ``max_prompt_tokens`` tokens (trl 0.18's
        ``max_prompt_length``: the same left truncation, for generation and the loss)."""
        prompt_ids, *rest = trl()
        if self.max_prompt_tokens:
            prompt_ids = [list(ids)[-self.max_prompt_tokens :] for ids in prompt_ids]
        return (prompt_ids, *rest)

    def generate_rollouts(self, trl: Callable[[], Any]) -> Any:
        with self._timed("generation"):
            rollouts = trl()
        release_memory()  # the KV caches of generation, before the loss allocates its activations
        return rollouts

    def score_rollouts(self, trl: Callable[[], Any]) -> Any:
        with self._timed("rewards"):
            self._scored = trl()
        faults.point("mid-step")
        return self._scored

    # --- checkpoints: complete or absent ---------------------------------------------------------------------------

    def save_checkpoint(self, trl: Callable[[], Any]) -> None:
        """The trainer's save without its rotation: older checkpoints may go only once rlvr has marked this one
        complete (``rlvr.training.resume.RunState.on_save`` then calls :meth:`rotate_checkpoints`)."""
        if not getattr(self, "marks_checkpoints", False):  # no RunState attached: the trainer's own order
            return trl()
        limit = self.args.save_total_limit
        self.args.save_total_limit = None
        try:
            trl()
        except Exception as error:
            self._checkpoint_failed(error)
            raise
        finally:
            self.args.save_total_limit = limit

    def _checkpoint_failed(self, error: Exception) -> None:
        """A full disk mid-save: remove the incomplete checkpoint (it frees space) and say so in one line."""
        from rlvr import atomic
        from rlvr.checkpoints import latest_checkpoint

        checkpoint = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
        if not atomic.out_of_space(error, self.args.output_dir):
            return
        shutil.rmtree(checkpoint, ignore_errors=True)
        kept = latest_checkpoint(Path(self.args.output_dir))
        raise RlvrError(f"disk full while saving {checkpoint.name} in {self.args.output_dir}: the incomplete "
                        f"checkpoint was removed and {kept.name if kept else 'no earlier checkpoint'} is intact; free "
                        "space, then rerun with --resume.") from None

    def rotate_checkpoints(self) -> None:
        from transformers.trainer_utils import rotate_checkpoints

        rotate_checkpoints(output_dir=self.args.output_dir, save_total_limit=self.args.save_total_limit,
                           best_model_checkpoint=self.state.best_model_checkpoint, use_mtime=True)

    def training_step(self, model, inputs, num_items_in_batch):  # noqa: ANN001, ANN201
        start = time.perf_counter()
        # bf16 on a CPU: the head's weight widened once, not per tile; attention by grouped matmuls, not SDPA's kernel
        try:
            with (frozen_head_in_float32(self._head_copies),
                  half_precision_attention(self.accelerator.unwrap_model(model))):
                output = super().training_step(model, inputs, num_items_in_batch)
        finally:
            self._head_copies.clear()  # kept for the step's loss pieces only, not through generation and evaluation
        self._timings["step"] += time.perf_counter() - start
        if self.micro_step % self.current_gradient_accumulation_steps == 0:
            split = self._timings
            metrics = self.metric_lists["train"]
            metrics["time/generation"].append(split["generation"])
            metrics["time/rewards"].append(split["rewards"])
            metrics["time/update"].append(max(0.0, split["step"] - split["generation"] - split["rewards"]))
            metrics["time/step"].append(split["step"])
            self._timings = defaultdict(float)
        release_memory()
        return output

    # --- rollouts: shared prompt, stopped at the answer ----------------------------------------------------------

    def generate_turn(self, prompt_ids, images, multimodal_fields, trl):  # noqa: ANN001, ANN201
        if self.shared_prompt.rollouts is None and not images and not multimodal_fields:
            completion_ids, logprobs = self._decode(prompt_ids), None  # TRL's generate() path has no logprobs either
        elif self.answer_stop is not None and not self.use_vllm:
            with self.answer_stop.installed(self.accelerator.unwrap_model(self.model)):
                completion_ids, logprobs = trl()
        else:
            return trl()
        if self.answer_stop is None:
            return completion_ids, logprobs
        cuts = [self.answer_stop.cut(ids) for ids in completion_ids]
        self.stopped_ratio.append(sum(stopped for _, stopped in cuts) / max(1, len(cuts)))
        mode = "train" if self.model.training else "eval"
        self.metric_lists[mode]["completions/stopped_at_answer_ratio"].append(self.stopped_ratio[-1])
        return [ids for ids, _ in cuts], logprobs

    def _decode(self, prompt_ids: list[list[int]]) -> list[list[int]]:
        """Sampled completions, each distinct prompt prefilled once, finished rows leaving the batch."""
        from trl.models import unwrap_model_for_generation

        device = self.accelerator.device
        width = max(len(ids) for ids in prompt_ids)
        padded = torch.tensor([[self.pad_token_id] * (width - len(ids)) + list(ids) for ids in prompt_ids], device=device)
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompt_ids], device=device)
        config = self.generation_config
        finished = self.answer_stop.stopped if self.answer_stop is not None else (lambda ids: False)
        with (
            unwrap_model_for_generation(
                self.model_wrapped, self.accelerator, gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                generation_kwargs=self.generation_kwargs,
                gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs,
            ) as model,
            torch.no_grad(),
            merged_adapter(model, self),  # plain linear layers: ~10% faster rollouts; unmerged for the loss
        ):
            return decode(model, padded, mask, config.max_new_tokens, finished, set(self.eos_token_ids),
                          warpers_for(config))

    # --- loss: shared prompt, nothing to learn skipped ------------------------------------------------------------

    def token_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy,  # noqa: ANN001, ANN201
                    extra_inputs, trl):
        if self.shared_prompt.loss is not None or extra_inputs:
            return trl()
        if not self._shared_loss_checked and not self._shared_loss_agrees(model, input_ids, attention_mask,
                                                                         logits_to_keep, trl):
            return trl()
        size = batch_size or input_ids.size(0)
        chunks = []
        for start in range(0, input_ids.size(0), size):
            rows = slice(start, start + size)
            shared = shared_token_logps(model, input_ids[rows], attention_mask[rows], logits_to_keep, compute_entropy,
                                        self.accelerator.autocast, self._split_group)
            if shared is None:
                return trl()
            chunks.append(shared)
        logps = torch.cat([c[0] for c in chunks])
        entropies = torch.cat([c[1] for c in chunks]) if compute_entropy else None
        return logps, entropies, None

    def _shared_loss_agrees(self, model, input_ids, attention_mask, logits_to_keep, trl) -> bool:  # noqa: ANN001
        """Once per run: compare the shared-prompt log-probs with TRL's on a real batch; fall back if they differ.

        Both run with the weights in float32 (bf16 ones widened for the check, exactly restored after): what is
        checked is that the two computations are the same one, which in bf16 would be hidden by its rounding
        (two orders of the same bf16 sums differ by up to ~0.5 in a log-prob)."""
        from rlvr.lora_merge import float32_weights

        with torch.no_grad(), float32_weights(model), torch.autocast(model.device.type, enabled=False):
            shared = shared_token_logps(model, input_ids, attention_mask, logits_to_keep, False,
                                        self.accelerator.autocast)
            if shared is None:
                return True  # nothing shared in this batch: check on a later one
            theirs = trl()[0]
        self._shared_loss_checked = True
        tolerance = 1e-3 if shared[0].dtype == torch.float32 else 5e-2
        if torch.allclose(shared[0].float(), theirs.float(), rtol=tolerance, atol=tolerance):
            return True
        gap = (shared[0].float() - theirs.float()).abs().max().item()
        self.shared_prompt.loss = f"its log-probs differ from TRL's by {gap:.2g} on this model"
        print(f"rlvr: warning: shared-prompt loss off: {self.shared_prompt.loss}; TRL's per-row path runs.",
              file=sys.stderr, flush=True)
        return False

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # noqa: ANN001, ANN201
        with half_precision_lora(self.accelerator.unwrap_model(model)):
            return self._loss(model, inputs, return_outputs, num_items_in_batch)

    def _loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # noqa: ANN001, ANN201
        learning = model.training and torch.is_grad_enabled()
        if learning and self.shared_prompt.chunks is None:
            return self._loss_by_group(model, inputs)
        if learning and self._nothing_to_learn(inputs):
            self.metric_lists["train"]["update/skipped_share"].append(1.0)
            # Exactly TRL's result (loss 0, gradient 0) without the forward: every trainable parameter gets a zero
            # gradient, so the optimizer steps as it would after TRL's zero backward.
            return zero_gradient_term(model)
        if learning:
            self.metric_lists["train"]["update/skipped_share"].append(0.0)
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    def _loss_by_group(self, model, inputs: dict[str, Any]) -> torch.Tensor:  # noqa: ANN001
        """TRL's loss and gradients, one group at a time (:mod:`rlvr.training.chunked_loss`).

        Each group's weighted loss is back-propagated here; the returned value is the micro-batch's loss,
        detached, plus a zero term whose backward (the Trainer's) adds nothing to the gradients. The pieces
        of a split group share one prompt pass on the shared-prompt path (:class:`SplitGroupPrompt`).

        Under DDP the pieces run on the module DDP wraps, with TRL's metric collectives kept to this process,
        so processes may run different numbers of pieces; then every process exchanges the pieces' metrics once
        and, at the accumulation boundary, averages the gradients once (:func:`average_gradients`). The
        Trainer's backward of the zero term does not go through DDP's forward, so DDP does not all-reduce again.
        Under DeepSpeed ZeRO-2/3 each piece is an engine micro-step instead (:meth:`_loss_by_deepspeed_pieces`).
        """
        chunks = loss_chunks(inputs, self.loss_type, self.loss_chunk_rows)
        # A chunk with all advantages 0 and beta 0 has loss 0 and gradient 0: it is not forwarded.
        learning = [(rows, weight) for rows, weight in chunks
                    if self.beta != 0.0 or bool(inputs["advantages"][rows].any())]
        if self.is_deepspeed_enabled:
            return self._loss_by_deepspeed_pieces(model, inputs, learning, len(chunks))
        ddp, module = ddp_module(model)
        if ddp is None and self.accelerator.num_processes > 1:
            raise RlvrError("the piecewise loss runs under several processes only with DDP or DeepSpeed; "
                            "the model is neither")
        zero = zero_gradient_term(model)
        total = zero.detach()
        with self._collectives_kept_local(ddp.no_sync() if ddp is not None else None):
            for prompt, run in split_group_runs(inputs, learning):
                split = None
                if prompt is not None and self.shared_prompt.loss is None:
                    split = SplitGroupPrompt(module, prompt, self.accelerator.autocast)
                self._split_group = split
                try:
                    for rows, weight in run:
                        loss = super().compute_loss(module, select_rows(inputs, rows)) * weight
                        self.accelerator.backward(loss)
                        total = total + loss.detach()  # stays on the device: no host sync per piece
                finally:
                    self._split_group = None
                if split is not None:
                    split.backward()  # the group's prompt, once, with all its pieces' gradient
            skipped = 1.0 - len(learning) / len(chunks) if chunks else 1.0
            self.metric_lists["train"]["update/skipped_share"].append(skipped)
        if ddp is not None and self.accelerator.sync_gradients:
            average_gradients([p for p in model.parameters() if p.requires_grad], self.accelerator.num_processes)
        return zero + total

    def _loss_by_deepspeed_pieces(self, engine, inputs: dict[str, Any], learning: list[tuple[torch.Tensor, float]],  # noqa: ANN001
                                  chunks: int) -> torch.Tensor:
        """The pieces under DeepSpeed ZeRO-2/3 (:func:`rlvr.training.chunked_loss.why_not_deepspeed`).

        Each piece is one of DeepSpeed's micro-steps: TRL's loss through the engine's forward, then
        ``engine.backward`` with the accumulation boundary off and no scaling by the engine's accumulation steps
        (TRL's loss is already scaled, as the Trainer's own DeepSpeed backward assumes). The last piece is
        returned, with the other pieces' losses added detached, for the Trainer's backward: accelerate sets the
        boundary there and steps the engine at the optimizer step's last micro-batch, as on TRL's path, so the
        engine sees one boundary backward and one step per optimizer step.

        ZeRO-2/3 reduce gradients in every backward, and ZeRO-3 gathers parameters in every forward, so every
        process runs the largest process's number of pieces: the extra pieces run a real row with weight 0 (their
        gradient is exactly 0) and their metrics are dropped. A process with nothing to learn runs only those.
        """
        import torch.distributed as dist

        if not (hasattr(engine, "backward") and hasattr(engine, "set_gradient_accumulation_boundary")):
            raise RlvrError("the piecewise loss under DeepSpeed needs the DeepSpeed engine as the model")
        count = torch.tensor([len(learning)], device=self.accelerator.device)
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(count, op=dist.ReduceOp.MAX)
        runs = max(1, int(count.item()))
        scored = loss_mask(inputs).any(dim=1).nonzero().flatten()
        padding = (scored[:1] if scored.numel() else torch.zeros(1, dtype=torch.long, device=scored.device), 0.0)
        pieces = learning + [padding] * (runs - len(learning))
        metrics = self.metric_lists["train"]
        total, last = None, None
        with self._collectives_kept_local(contextlib.nullcontext()):
            for index, (rows, weight) in enumerate(pieces):
                before = {key: len(values) for key, values in metrics.items()}
                loss = super().compute_loss(engine, select_rows(inputs, rows)) * weight
                if index >= len(learning):  # a padding piece: its metrics describe nothing learned
                    _truncate_metrics(metrics, before)
                if index == runs - 1:
                    last = loss
                    break
                engine.set_gradient_accumulation_boundary(False)
                engine.backward(loss, scale_wrt_gas=False)
                total = loss.detach() if total is None else total + loss.detach()
            skipped = 1.0 - len(learning) / chunks if chunks else 1.0
            metrics["update/skipped_share"].append(skipped)
        return last if total is None else last + total

    @contextlib.contextmanager
    def _collectives_kept_local(self, local: contextlib.AbstractContextManager | None) -> Iterator[None]:
        """Under several processes (``local``: entered around the pieces, e.g. ``ddp.no_sync()``): TRL's metric
        gathers and reductions in each piece's loss see this process only, and the metrics the pieces add are
        exchanged once afterwards (every process then holds every process's entries, one per piece, as one
        process's pieces log them). With ``local`` None: nothing."""
        if local is None:
            yield
            return
        from accelerate.utils import gather_object

        accelerator, metrics = self.accelerator, self.metric_lists["train"]
        before = {key: len(values) for key, values in metrics.items()}
        shadowed = {name: vars(accelerator)[name] for name in ("gather", "reduce") if name in vars(accelerator)}
        accelerator.gather = lambda tensor: tensor
        accelerator.reduce = lambda tensor, reduction="sum", scale=1.0: tensor
        try:
            with local:
                yield
        finally:
            for name in ("gather", "reduce"):
                if name in shadowed:
                    setattr(accelerator, name, shadowed[name])
                else:
                    delattr(accelerator, name)
        added = {}
        for key, values in metrics.items():
            added[key] = values[before.get(key, 0):]
            del values[before.get(key, 0):]
        for process in gather_object([added]):
            for key, values in process.items():
                metrics[key].extend(values)

    def _nothing_to_learn(self, inputs: dict[str, Any]) -> bool:
        """All advantages 0 and no term without them (KL, entropy bonus, MoE loss): the loss is 0, and so its gradient."""
        return (
            self.beta == 0.0
            and not bool(inputs["advantages"].any())
            and not self.entropy_bonus_on
            and not self.aux_loss_enabled
            and self.accelerator.num_processes == 1
            and not self.is_deepspeed_enabled
        )

    # --- controls and health, applied to each training rollout batch -------------------------------------------

    def rollout_batch(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        batch = self.trl_rollout(self, inputs)
        if not self.model.training:
            return batch
        size = self.num_generations
        rows = self._scored_rows()
        step = self.state.global_step + 1
        self.top_completions.offer(rows, step)  # every process's rows (rewards and completions are gathered)
        zero = zero_variance_groups(self._total_rewards(), size)
        share_before = zero.float().mean().item()
        mode = self.controls.zero_variance_groups
        resampled = 0
        if mode == "resample" and bool(zero.any()):
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
        metrics = self.metric_lists["train"]
        metrics["zero_variance/share"].append(share_before)
        metrics["zero_variance/dropped_share"].append(dropped.float().mean().item())
        metrics["zero_variance/resampled_share"].append(resampled / max(1, len(zero)))
        metrics["advantages/clipped_share"].append(clipped)
        advantages = batch["advantages"].detach().float().cpu()
        for key, value in batch_metrics(rows, self.task, advantages, dropped_rows.cpu()).items():
            metrics[key].append(value)
        for row, advantage, drop in zip(rows, advantages.tolist(), dropped_rows.tolist(), strict=True):
            row["advantage"] = advantage
            row["dropped"] = bool(drop)
        self.last_batch = {"step": step, "rows": rows, "advantages": advantages.tolist()}
        return batch

    def _total_rewards(self) -> torch.Tensor:
        weights = self.reward_weights.to(self._scored.device)
        return (torch.nan_to_num(self._scored, nan=0.0) * weights.unsqueeze(0)).sum(dim=1)

    def _scored_rows(self) -> list[dict[str, Any]]:
        """This batch's prompts, completions and per-component rewards (the tail of TRL's completion log)."""
        count = self._scored.size(0)
        prompts = list(self.completion_log["prompt"])[-count:]
        completions = list(self.completion_log["completion"])[-count:]
        totals = self._total_rewards().tolist()
        rows = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=False)):
            rewards = {name: _number(self._scored[i, k].item()) for k, name in enumerate(self.reward_func_names)}
            rows.append({"prompt": prompt, "completion": completion, "rewards": rewards, "reward": totals[i]})
        return rows

    def _resample(self, batch: dict[str, Any], zero: torch.Tensor, rows: list[dict[str, Any]]) -> int:
        """DAPO dynamic sampling: roll out fresh prompts in place of zero-variance groups. Returns groups replaced."""
        unknown = unspliceable_keys(batch)
        if unknown:
            raise RlvrError(f"run.zero_variance_groups=resample cannot move rollout rows holding {', '.join(unknown)} "
                            "(image or tool inputs); use 'drop'.")
        size, replaced = self.num_generations, 0
        for _ in range(self.controls.resample_attempts):
            todo = zero.nonzero().flatten().tolist()
            if not todo:
                break
            fresh = self.trl_rollout(self, self._fresh_inputs(len(todo)))
            fresh_rows = self._scored_rows()
            self.top_completions.offer(fresh_rows, self.state.global_step + 1)
            useful = (~zero_variance_groups(self._total_rewards(), size)).nonzero().flatten().tolist()
            pairs = list(zip(todo, useful, strict=False))
            if not pairs:
                continue
            targets = group_rows([t for t, _ in pairs], size)
            sources = group_rows([s for _, s in pairs], size)
            splice_rows(batch, fresh, targets, sources, self.pad_token_id)
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


def _truncate_metrics(metrics: dict[str, list[Any]], lengths: dict[str, int]) -> None:
    """Cut each metric list back to its length in ``lengths``; a list not there before, left empty, goes."""
    for key in list(metrics):
        del metrics[key][lengths.get(key, 0):]
        if key not in lengths:
            del metrics[key]


def _number(value: float) -> float | None:
    return None if value != value else value  # NaN (reward returned None) -> None
