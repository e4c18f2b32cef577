"""GRPO's per-token log-probs with each group's prompt run once.

The ``num_generations`` completions of a group share their prompt, yet TRL
forwards prompt + completion row by row, so the prompt (most of each row's
tokens with k-shot prompts) goes through the model, and back, once per
completion. :func:`shared_token_logps` runs each distinct prompt of a
micro-batch once (with gradient when gradients are on), repeats its KV cache
for the rows that share it, and runs only the completions on top of it.

It is the same computation as TRL's, reordered: the same tokens at the same
positions (the padded column index, as TRL's single pass uses), the same
attention mask, and TRL's own fused LM head (temperature, entropy) on the
completion tokens. The gradient reaching a prompt's activations is the sum over
its rows, which is what the per-row computation adds up to. Rows with no
completion token left to score (dropped by ``run.zero_variance_groups: drop``)
are not forwarded at all: TRL's log-prob for them is 0 everywhere, and so is
this one's.

The prompt is run without its last token; that token is fed with each row's
completion, so the logits that predict the first completion token come from the
row pass like all the others.

When the loss cuts one group into several pieces (``run.loss_chunk_rows``, see
:mod:`rlvr.training.chunked_loss`), :class:`SplitGroupPrompt` runs that group's
prompt once for all its pieces, and back-propagates it once.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch

from rlvr.evaluation.decoding import cache_argument

SHARED = "shared prompt"
ONE_GROUP = "one group at a time"


@dataclass
class SharedPromptPlan:
    """Which path each half of a GRPO step takes: ``None`` means the shared-prompt one, a string why not.

    ``chunks`` is the same for the loss's batch: ``None`` when it runs one group at a time
    (:mod:`rlvr.training.chunked_loss`), else why TRL's whole micro-batch runs at once.
    """

    rollouts: str | None
    loss: str | None
    chunks: str | None = None
    piece_rows: int | None = None  # completions per piece when a group is cut (run.loss_chunk_rows), for the line

    def summary(self) -> dict[str, str]:
        paths = {half: SHARED if reason is None else f"trl per-row ({reason})"
                 for half, reason in (("rollouts", self.rollouts), ("loss", self.loss))}
        paths["loss_batch"] = ONE_GROUP if self.chunks is None else f"whole micro-batch ({self.chunks})"
        return paths

    def line(self) -> str:
        paths = self.summary()
        pieces = f" in pieces of {self.piece_rows} completions" if self.piece_rows and self.chunks is None else ""
        return f"rlvr: rollouts: {paths['rollouts']}; loss: {paths['loss']}, {paths['loss_batch']}{pieces}"


def shared_token_logps(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    compute_entropy: bool,
    autocast: Callable[[], AbstractContextManager],
    split_group: SplitGroupPrompt | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """(log-probs, entropies or None) of the last ``logits_to_keep`` tokens of each row, as TRL computes them.

    ``model`` must carry TRL's fused LM head (``GRPOTrainer`` adds it); ``autocast`` makes the mixed-precision
    context (``accelerator.autocast``). ``split_group``, when the batch is one piece of that group, gives the
    prompt's KV cache instead of a prompt forward here. Returns None when the batch has
    nothing to share or skip (every row has its own prompt and a completion to score): the caller runs
    TRL's per-row forward then.
    """
    rows, width = input_ids.shape
    prompt_width = width - logits_to_keep
    scored = attention_mask[:, prompt_width:].bool().any(dim=1).nonzero().squeeze(1)
    if prompt_width < 2 or scored.numel() == 0:
        return None
    prompts = torch.cat([input_ids[scored, :prompt_width], attention_mask[scored, :prompt_width]], dim=1)
    distinct, group = torch.unique(prompts, dim=0, return_inverse=True)
    cache = split_group.cache_for(model, distinct) if split_group is not None else None
    if cache is None:
        if len(distinct) == rows:
            return None
        cache = _prompt_cache(model, distinct[:, : prompt_width - 1], distinct[:, prompt_width:-1], autocast)
    cache.batch_select_indices(group)
    tail = input_ids[scored, prompt_width - 1 :]  # the prompt's last token, then the completion
    labels = tail.masked_fill(attention_mask[scored, prompt_width - 1 :] == 0, -100)
    labels[:, 0] = -100
    with autocast():
        output = model(input_ids=tail, attention_mask=attention_mask[scored], labels=labels, fused_lm_head=True,
                       **{cache_argument(model): cache})
    logps = output.log_probs.new_zeros((rows, logits_to_keep)).index_copy(0, scored, output.log_probs)
    if not compute_entropy:
        return logps, None
    return logps, output.entropy.new_zeros((rows, logits_to_keep)).index_copy(0, scored, output.entropy)


def _prompt_cache(model: Any, ids: torch.Tensor, mask: torch.Tensor, autocast: Callable[[], AbstractContextManager]) -> Any:
    """The KV cache of ``ids`` (one row per distinct prompt) through the model's backbone, no LM head."""
    from transformers import DynamicCache

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    backbone = base.base_model  # the decoder stack (LoRA layers, if any, are inside it)
    cache = DynamicCache(config=base.config)
    with autocast():
        backbone(input_ids=ids, attention_mask=mask, use_cache=True, **{cache_argument(backbone): cache})
    return cache


class SplitGroupPrompt:
    """One group's prompt KV cache, run once with gradient for all the pieces its loss is cut into.

    Without it each piece runs the group's prompt again, forward and back. Here the first piece runs it
    (the real cache, with its graph); every piece reads a fresh cache built on detached leaf copies of the
    real keys and values, so a piece's backward (as soon as its loss is known, freeing its activations) stops
    at the leaves and adds its share of the prompt's gradient there. After the group's last piece,
    :meth:`backward` sends the summed leaf gradients through the real cache once. By the chain rule that is
    the gradient every piece's own prompt pass would have given, added up. The leaves of a half-precision
    cache are kept in float32, so the pieces' gradients add up without rounding in between.

    ``prompt`` is the group's row of ``torch.cat([prompt_ids, prompt_mask], dim=1)``. A cache with layers
    other than plain ``DynamicLayer`` ones (sliding windows, linear attention) is used as is by the piece that
    computed it, and later pieces run their own prompt pass (:meth:`cache_for` returns None).
    """

    def __init__(self, model: Any, prompt: torch.Tensor, autocast: Callable[[], AbstractContextManager]):
        self.model, self.prompt, self.autocast = model, prompt, autocast
        self.real: list[torch.Tensor] = []  # keys and values of each layer, in the prompt's graph
        self.leaves: list[torch.Tensor] = []  # their detached copies, which the pieces' gradients reach
        self.unsupported = False

    def cache_for(self, model: Any, distinct: torch.Tensor) -> Any:
        """A fresh cache of the prompt when ``distinct`` (a batch's distinct prompts) is this group's alone, else None."""
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        if (self.unsupported or model is not self.model or not torch.is_grad_enabled() or len(distinct) != 1
                or not torch.equal(distinct[0], self.prompt.to(distinct.device, distinct.dtype))):
            return None
        if not self.real:
            width = distinct.size(1) // 2
            real = _prompt_cache(model, distinct[:, : width - 1], distinct[:, width:-1], self.autocast)
            if not all(type(layer) is DynamicLayer and layer.is_initialized for layer in real.layers):
                self.unsupported = True
                return real  # this piece reads it directly, as without a split group
            self.real = [tensor for layer in real.layers for tensor in (layer.keys, layer.values)]
            self.leaves = [tensor.detach().to(torch.promote_types(tensor.dtype, torch.float32)).requires_grad_()
                           for tensor in self.real]
        tensors = [leaf.to(real.dtype) for leaf, real in zip(self.leaves, self.real, strict=True)]
        return DynamicCache(ddp_cache_data=list(zip(tensors[0::2], tensors[1::2], strict=True)))

    def backward(self) -> None:
        """Back-propagate the pieces' summed gradients through the prompt, once; then drop the prompt's graph."""
        pairs = [(real, leaf.grad.to(real.dtype)) for real, leaf in zip(self.real, self.leaves, strict=True)
                 if leaf.grad is not None and real.requires_grad]
        self.real, self.leaves = [], []
        if pairs:
            torch.autograd.backward([real for real, _ in pairs], grad_tensors=[grad for _, grad in pairs])


def has_active_dropout(model: Any) -> bool:
    """Whether a forward in training mode would drop anything (then rows sharing one prompt pass would share a mask)."""
    if any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules()):
        return True
    config = getattr(model, "config", None)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return any(
        isinstance(value, float) and value > 0 and "dropout" in key
        for key, value in (vars(text).items() if text is not None else [])
    )
