"""Training rollouts by transformers generation, each prompt prefilled once and cut after the task's answer line.

:func:`decode_rollouts` samples the completions with each distinct prompt prefilled once and its KV cache repeated
for the group's completions, finished rows leaving the batch (:func:`rlvr.evaluation.decoding.decode`), with
TRL's temperature, top-k, top-p and min-p, and the LoRA adapter merged into plain linear layers while it runs.
:func:`cut_at_answer` cuts each completion after the answer line, ending it with EOS, so TRL counts it as finished
(not clipped) and the policy learns to stop there.
"""

from __future__ import annotations

from typing import Any

import torch

from rlvr.evaluation.decoding import decode, warpers_for
from rlvr.training.evaluation import merged_adapter


def decode_rollouts(trainer: Any, prompt_ids: list[list[int]]) -> list[list[int]]:
    """Sampled completions, each distinct prompt prefilled once, finished rows leaving the batch."""
    from trl.models import unwrap_model_for_generation

    device = trainer.accelerator.device
    width = max(len(ids) for ids in prompt_ids)
    pad = trainer.pad_token_id
    padded = torch.tensor([[pad] * (width - len(ids)) + list(ids) for ids in prompt_ids], device=device)
    mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompt_ids], device=device)
    config = trainer.generation_config
    finished = trainer.answer_stop.stopped if trainer.answer_stop is not None else (lambda ids: False)
    with (
        unwrap_model_for_generation(
            trainer.model_wrapped, trainer.accelerator, gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
            generation_kwargs=trainer.generation_kwargs,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
        ) as model,
        torch.no_grad(),
        merged_adapter(model, trainer),  # plain linear layers: ~10% faster rollouts; unmerged for the loss
    ):
        return decode(model, padded, mask, config.max_new_tokens, finished, set(trainer.eos_token_ids),
                      warpers_for(config))


def cut_at_answer(trainer: Any, completion_ids: list[list[int]]) -> list[list[int]]:
    """``completion_ids`` cut by ``trainer.answer_stop``; the share stopped at the answer goes to the metrics."""
    cuts = [trainer.answer_stop.cut(ids) for ids in completion_ids]
    trainer.stopped_ratio.append(sum(stopped for _, stopped in cuts) / max(1, len(cuts)))
    mode = "train" if trainer.model.training else "eval"
    trainer.metric_lists[mode]["completions/stopped_at_answer_ratio"].append(trainer.stopped_ratio[-1])
    return [ids for ids, _ in cuts]
