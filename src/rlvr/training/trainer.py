"""TRL's GRPOTrainer plus what it lacks for verifiable-answer tasks: stopping at the answer,
shared-prompt rollouts and loss, health metrics, and the practitioners' advantage controls
(:mod:`rlvr.training.controls`). TRL's private extension points are reached through
:mod:`rlvr.training.trl_compat` only."""

from __future__ import annotations

import contextlib
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import torch

from rlvr import faults
from rlvr.errors import RlvrError
from rlvr.evaluation.attention import half_precision_attention
from rlvr.evaluation.decoding import supports_compaction
from rlvr.evaluation.stopping import AnswerStop
from rlvr.memory import release_memory
from rlvr.training.checkpoint_saving import rotate_checkpoints, save_checkpoint
from rlvr.training.chunked_loss import why_not_chunked, why_not_distributed, zero_gradient_term
from rlvr.training.controls import Controls
from rlvr.training.half_precision import half_precision_lora
from rlvr.training.piece_loop import loss_by_pieces
from rlvr.training.rollout_controls import controlled_batch
from rlvr.training.rollout_generation import cut_at_answer, decode_rollouts
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
      (:mod:`rlvr.training.rollout_generation`), sampling with TRL's temperature, top-k, top-p and min-p.
    * Stopping: completions are cut after the answer line and end with EOS, so TRL counts them as
      finished (not clipped) and the policy learns to stop there. vLLM rollouts are left to vLLM
      (pass ``stop`` through ``generation_kwargs``).
    * Loss: the policy's (and reference's) per-token log-probs run each group's prompt once
      (:mod:`rlvr.training.shared_prompt`), and the loss runs one group at a time, each group
      back-propagated before the next (:mod:`rlvr.training.chunked_loss`; run in one process, under DDP or
      DeepSpeed ZeRO-2/3 by :mod:`rlvr.training.piece_loop`), so one group's activations are alive at a
      time; a group whose advantages are all zero, with ``beta`` 0, is not forwarded (its loss and gradient
      are exactly zero).
    * Checkpoints: complete or absent (:mod:`rlvr.training.checkpoint_saving`).
    * :attr:`shared_prompt` says which path each half takes, and why TRL's per-row path where it runs.

    Every training batch also gets health metrics (accuracy, format rate, advantage spread, time
    split; see :func:`rlvr.training.health.batch_metrics`) in TRL's metric lists, so every
    ``report_to`` tracker logs them, and the ``controls`` act on its advantages before TRL's loss
    (:mod:`rlvr.training.rollout_controls`).
    """

    def __init__(
        self, *args: Any, stop_patterns: list[str] | None = None, controls: Controls | None = None,
        task: Any = None, max_prompt_tokens: int | None = None, loss_chunk_rows: int = 0, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        self.loss_chunk_rows = loss_chunk_rows or self.num_generations  # most rows per piece of the loss
        self.task = task  # judges health accuracy from the reward components (rlvr.tasks.base.Task)
        self.max_prompt_tokens = max_prompt_tokens
        opener = getattr(task, "opener", "")
        self.tool_opener_ids = self.processing_class.encode(opener, add_special_tokens=False) if opener else []
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
        self.split_group: SplitGroupPrompt | None = None  # the prompt of the group whose pieces the loss is running
        self.last_batch: dict[str, Any] | None = None  # the latest training batch, for samples and histograms
        self._timings: dict[str, float] = defaultdict(float)
        self.scored: torch.Tensor | None = None  # the latest rollout's rewards (completions x reward functions)
        self.resample_rng = random.Random(self.args.seed)  # the prompts run.zero_variance_groups=resample rolls out
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
        if self.tool_opener_ids:  # task.tool_choice: required: the first turn opens a tool call (rlvr.tools)
            prompt_ids = [[*ids, *self.tool_opener_ids] for ids in prompt_ids]
        return (prompt_ids, *rest)

    def generate_rollouts(self, trl: Callable[[], Any]) -> Any:
        with self._timed("generation"):
            rollouts = trl()
        release_memory()  # the KV caches of generation, before the loss allocates its activations
        return rollouts

    def score_rollouts(self, trl: Callable[[], Any]) -> Any:
        with self._timed("rewards"):
            self.scored = trl()
        faults.point("mid-step")
        return self.scored

    # --- checkpoints: complete or absent (rlvr.training.checkpoint_saving) ------------------------------------------

    def save_checkpoint(self, trl: Callable[[], Any]) -> None:
        return save_checkpoint(self, trl)

    def rotate_checkpoints(self) -> None:
        rotate_checkpoints(self)

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

    # --- rollouts: shared prompt, stopped at the answer (rlvr.training.rollout_generation) ---------------------

    def generate_turn(self, prompt_ids, images, multimodal_fields, trl):  # noqa: ANN001, ANN201
        if self.shared_prompt.rollouts is None and not images and not multimodal_fields:
            # TRL's generate() path has no logprobs either
            completion_ids, logprobs = decode_rollouts(self, prompt_ids), None
        elif self.answer_stop is not None and not self.use_vllm:
            with self.answer_stop.installed(self.accelerator.unwrap_model(self.model)):
                completion_ids, logprobs = trl()
        else:
            return trl()
        if self.answer_stop is None:
            return completion_ids, logprobs
        return cut_at_answer(self, completion_ids), logprobs

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
                                        self.accelerator.autocast, self.split_group)
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
            return loss_by_pieces(self, model, inputs, super().compute_loss)  # rlvr.training.piece_loop
        if learning and self._nothing_to_learn(inputs):
            self.metric_lists["train"]["update/skipped_share"].append(1.0)
            # Exactly TRL's result (loss 0, gradient 0) without the forward: every trainable parameter gets a zero
            # gradient, so the optimizer steps as it would after TRL's zero backward.
            return zero_gradient_term(model)
        if learning:
            self.metric_lists["train"]["update/skipped_share"].append(0.0)
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

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

    # --- controls and health, applied to each training rollout batch (rlvr.training.rollout_controls) ----------

    def rollout_batch(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        return controlled_batch(self, inputs)

    def train_sampler(self, dataset: Any, trl: Callable[[], Any]) -> Any:  # run.prompt_selection
        selection = getattr(self, "prompt_selection", None)
        return trl() if selection is None else selection.sampler(self, dataset, trl)

