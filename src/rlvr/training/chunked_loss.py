"""GRPO's loss one prompt group at a time, each group back-propagated and freed before the next.

Why: TRL forwards a whole micro-batch (32 rows on the CPU default) at once and keeps every row's
activations, and the LM head's full-vocabulary intermediates, until the backward. On SmolLM2 (a
49k-token vocabulary) that is the largest memory peak of a run: plain TRL's loss phase adds ~11 GB
(``benchmarks/memory.py``). Here each group's share of the loss is computed by TRL's own
``_compute_loss`` on that group's rows, weighted, back-propagated at once and dropped, so only one
group's activations are alive at a time, and the gradients add up to TRL's whole-batch ones:

* ``dapo``, ``cispo``: TRL divides the token sum by ``num_items_in_batch``, a count over the whole
  generation batch that every group sees unchanged, so each group's loss enters with weight 1;
* ``grpo``, ``sapo``, ``dr_grpo``, ``luspo``: a mean over rows, so a group weighs its share of the rows;
* ``bnpo``: a mean over the micro-batch's tokens, so a group weighs its share of the tokens.

A group whose advantages are all zero, with no KL term (``beta`` 0), adds exactly nothing to the
loss or the gradient and is not forwarded at all. What does not split this way runs TRL's
whole-batch loss, and :func:`why_not_chunked` says why: an entropy bonus or a top-entropy mask (both
computed over the whole micro-batch), an MoE auxiliary loss, VESPO, FSDP, and DeepSpeed other than ZeRO-2/3
without offload or fp16 (see :func:`why_not_distributed`).

A group larger than ``run.loss_chunk_rows`` is cut into pieces, each back-propagated on its own. On the
shared-prompt loss path its prompt still runs once, forward and back, for all the pieces
(:class:`rlvr.training.shared_prompt.SplitGroupPrompt`): its KV cache, and the prompt's activations behind
it, stay alive until the group's last piece; on TRL's per-row path every piece runs the prompt again.

Running the pieces, in one process, under DDP and under DeepSpeed ZeRO-2/3, is :mod:`rlvr.training.piece_loop`.
"""

from __future__ import annotations

from typing import Any

import torch

#: How one group's loss is weighted so the groups add up to TRL's loss over the micro-batch.
CHUNK_WEIGHT = {
    "dapo": "one", "cispo": "one",
    "grpo": "rows", "sapo": "rows", "dr_grpo": "rows", "luspo": "rows",
    "bnpo": "tokens",
}


def why_not_distributed(trainer: Any) -> str | None:
    """None when ``trainer``'s engine lets the loss run piece by piece (one process, or plain DDP), else why not."""
    from accelerate.utils import DistributedType

    accelerator = trainer.accelerator
    if trainer.is_deepspeed_enabled:
        return why_not_deepspeed(accelerator.state.deepspeed_plugin, getattr(accelerator, "mixed_precision", "no"))
    if trainer.is_fsdp_enabled:
        return ("FSDP gathers the parameters in every forward, so every rank would have to run the same pieces, as "
                "under DeepSpeed; that loop is built and checked under DDP and DeepSpeed ZeRO-2/3 only (FSDP needs GPUs)")
    if accelerator.num_processes == 1:
        return None
    if not (accelerator.multi_device or accelerator.distributed_type == DistributedType.MULTI_CPU):
        return f"several processes under {accelerator.distributed_type}, not DDP"
    handler = getattr(accelerator, "ddp_handler", None)
    if handler is not None and getattr(handler, "static_graph", False):
        return "DDP static_graph expects the same backward every step"
    hook = getattr(handler, "comm_hook", None)
    if hook is not None and getattr(hook, "value", hook) not in (None, "no"):
        return f"DDP communication hook {getattr(hook, 'value', hook)!r}: gradients are averaged by DDP's backward only"
    return None


#: The DeepSpeed ZeRO stages the piece loop runs under (checked against TRL's step: tests/test_deepspeed_piecewise_loss.py).
DEEPSPEED_STAGES = (2, 3)


def why_not_deepspeed(plugin: Any, mixed_precision: str = "no") -> str | None:
    """None when the loss can run by pieces under this DeepSpeed plugin (ZeRO-2 or ZeRO-3, no offload, no fp16 loss
    scaling), else why not.

    Each piece is one of DeepSpeed's own micro-steps: a forward through the engine and ``engine.backward`` with the
    accumulation boundary off, the documented way to accumulate before one ``engine.step`` (how the pieces run, and
    why every process runs as many as the one with the most: :mod:`rlvr.training.piece_loop`).
    """
    config = dict(getattr(plugin, "deepspeed_config", None) or {})
    zero = dict(config.get("zero_optimization") or {})
    stage = int(zero.get("stage", getattr(plugin, "zero_stage", 0)) or 0)
    if stage not in DEEPSPEED_STAGES:
        return (f"DeepSpeed ZeRO stage {stage}: the piece loop (several engine backwards per micro-batch) is checked "
                "under ZeRO-2 and ZeRO-3 only")
    for part in ("offload_optimizer", "offload_param"):
        device = str((zero.get(part) or {}).get("device", "none")).lower()
        if device not in ("none", "", "auto"):
            return (f"DeepSpeed ZeRO-{stage} with {part} to {device}: the piece loop is checked without offload "
                    "(offload accumulates gradients on the host per backward)")
    fp16 = str((config.get("fp16") or {}).get("enabled", "")).lower()
    if mixed_precision == "fp16" or fp16 == "true":
        return "DeepSpeed fp16: the piece loop is checked in float32 and bfloat16 only (no loss scaling)"
    if config.get("managed_gradient_accumulation") is False:
        return "DeepSpeed managed_gradient_accumulation: false: the pieces rely on the engine's accumulation boundary"
    return None


def why_not_chunked(trainer: Any) -> str | None:
    """None when the loss can run one group at a time for ``trainer``, else why TRL's whole-batch loss runs."""
    reason = why_not_distributed(trainer)
    if reason is not None:
        return reason
    if trainer.loss_type not in CHUNK_WEIGHT:
        return f"loss_type {trainer.loss_type!r} is not split by group"
    if trainer.entropy_bonus_on:
        return "the entropy bonus is a mean over the whole micro-batch"
    if trainer.top_entropy_quantile < 1.0:
        return "top_entropy_quantile < 1 picks tokens over the whole micro-batch"
    if trainer.aux_loss_enabled:
        return "MoE auxiliary loss"
    return None


def loss_mask(inputs: dict[str, Any]) -> torch.Tensor:
    """The completion tokens TRL's loss counts (its ``mask``)."""
    mask = inputs["completion_mask"]
    return mask * inputs["tool_mask"] if "tool_mask" in inputs else mask


def loss_chunks(inputs: dict[str, Any], loss_type: str, rows_per_chunk: int) -> list[tuple[torch.Tensor, float]]:
    """(row indices, weight) per chunk of at most ``rows_per_chunk`` rows.

    Rows sharing a prompt (same ids and mask) form a group, in order of first appearance (TRL shuffles a
    generation batch before splitting it, so a group's rows need not be adjacent). A group larger than
    ``rows_per_chunk`` is cut into near-equal pieces (exact, since every row's term is its own; see
    :func:`split_group_runs` for its prompt); smaller pieces are packed together up to ``rows_per_chunk``. Chunks with no token to
    score are left out: their loss is zero.
    """
    prompts = torch.cat([inputs["prompt_ids"], inputs["prompt_mask"]], dim=1)
    _, group = torch.unique(prompts, dim=0, return_inverse=True)
    pieces = []
    for g in dict.fromkeys(group.tolist()):
        rows = (group == g).nonzero().flatten()
        pieces.extend(rows.tensor_split(-(-len(rows) // rows_per_chunk)))
    mask = loss_mask(inputs)
    total_rows, total_tokens = mask.size(0), mask.sum().clamp(min=1).item()
    chunks, current = [], []
    for rows in pieces:
        if current and sum(len(r) for r in current) + len(rows) > rows_per_chunk:
            chunks.append(torch.cat(current))
            current = []
        current.append(rows)
    if current:
        chunks.append(torch.cat(current))
    weighted = []
    for rows in chunks:
        tokens = mask[rows].sum().item()
        if tokens == 0:
            continue
        kind = CHUNK_WEIGHT[loss_type]
        weight = 1.0 if kind == "one" else len(rows) / total_rows if kind == "rows" else tokens / total_tokens
        weighted.append((rows, weight))
    return weighted


def split_group_runs(
    inputs: dict[str, Any], chunks: list[tuple[torch.Tensor, float]]
) -> list[tuple[torch.Tensor | None, list[tuple[torch.Tensor, float]]]]:
    """``chunks`` in order, as (prompt, run): a run of consecutive chunks that all hold rows of one prompt only,
    with that prompt's row of ``torch.cat([prompt_ids, prompt_mask], dim=1)``, when there are two or more of them
    (a split group, whose prompt :class:`rlvr.training.shared_prompt.SplitGroupPrompt` runs once); else
    ``(None, [chunk])``."""
    prompts = torch.cat([inputs["prompt_ids"], inputs["prompt_mask"]], dim=1)
    runs: list[tuple[torch.Tensor | None, list[tuple[torch.Tensor, float]]]] = []
    for rows, weight in chunks:
        own = prompts[rows]
        prompt = own[0] if bool((own == own[0]).all()) else None
        if prompt is not None and runs and runs[-1][0] is not None and torch.equal(runs[-1][0], prompt):
            runs[-1][1].append((rows, weight))
        else:
            runs.append((prompt, [(rows, weight)]))
    return [(prompt if len(run) > 1 else None, run) for prompt, run in runs]


def select_rows(inputs: dict[str, Any], rows: torch.Tensor) -> dict[str, Any]:
    """``inputs`` restricted to ``rows``: per-row tensors indexed, batch-wide values (``num_items_in_batch``) kept.

    The completion columns are cut after the chunk's last scored token: the model is causal, so the
    log-probs of the tokens kept do not change, and padding is not run through the model.
    """
    count = inputs["completion_ids"].size(0)
    picked = {
        key: value[rows] if torch.is_tensor(value) and value.dim() > 0 and value.size(0) == count else value
        for key, value in inputs.items()
    }
    scored = loss_mask(picked).any(dim=0).nonzero()
    width = int(scored.max().item()) + 1 if scored.numel() else 1
    for key, value in picked.items():
        if key in _COMPLETION_COLUMNS and torch.is_tensor(value) and value.dim() > 1:
            picked[key] = value[:, :width]
    return picked


#: Per-row, per-completion-token tensors of a rollout batch (cut together in :func:`select_rows`).
_COMPLETION_COLUMNS = {
    "completion_ids", "completion_mask", "tool_mask", "old_per_token_logps", "ref_per_token_logps",
    "sampling_per_token_logps", "importance_sampling_ratio",
}


def zero_gradient_term(model: Any) -> torch.Tensor:
    """A zero that reaches every trainable parameter: its backward gives each a zero gradient, as TRL's would."""
    trainable = [p.reshape(-1)[:1] for p in model.parameters() if p.requires_grad]
    return torch.cat(trainable).sum() * 0.0
