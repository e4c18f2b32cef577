"""Batched decoding that drops each row from the batch as soon as it has finished.

``model.generate`` keeps every row of a batch in every forward pass until the
last row stops: one completion that rambles to the token limit makes the whole
batch pay for it. In evaluation most rows stop at their answer line early and a
few run on, so :func:`decode` removes finished rows from the input, the
attention mask and the KV cache (``DynamicCache.batch_select_indices``) and the
remaining forward passes shrink with them. k-shot prompts also start with the
same exemplars: that shared prefix is run once, for one row, and its KV cache
repeated for every row, so the prompt pass only covers what differs. Greedy
decoding picks the same
tokens as ``generate`` (up to float rounding of different batch shapes);
sampling uses temperature and top-p like ``generate``.

Decoder-only models only; :func:`supports_compaction` tells the caller when to
fall back to ``generate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# generation_config settings that change which token generate() picks; with any of them set, use generate().
_PROCESSORS = {"repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_repetition_penalty": 1.0,
               "bad_words_ids": None, "suppress_tokens": None, "begin_suppress_tokens": None,
               "forced_bos_token_id": None, "forced_eos_token_id": None, "min_new_tokens": None, "min_length": 0,
               "typical_p": 1.0, "min_p": None, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0}


def supports_compaction(model: Any) -> bool:
    """Whether ``model`` is a decoder-only model whose generation_config adds no logits processors."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return False
    generation = getattr(model, "generation_config", None)
    return all(getattr(generation, key, neutral) in (neutral, None) for key, neutral in _PROCESSORS.items())


def eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every id that ends a row for ``generate``: the generation config's EOS id(s) and the tokenizer's."""
    found = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(found if isinstance(found, list) else [found])
    ids.add(tokenizer.eos_token_id)
    return {i for i in ids if i is not None}


@torch.no_grad()
def decode(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    max_new_tokens: int,
    finished: Callable[[list[int]], bool],
    eos_token_ids: set[int],
    temperature: float | None = None,
    top_p: float = 1.0,
    min_shared: int = 32,
) -> list[list[int]]:
    """New token ids per row of a left-padded batch.

    A row ends at EOS (included), when ``finished(its new ids)`` is true, or at
    ``max_new_tokens``. ``temperature`` None means greedy. When the rows' prompts
    start with the same ``min_shared`` or more tokens (k-shot exemplars), that
    prefix is run once and its KV cache shared by every row.
    """
    from transformers import DynamicCache

    rows = input_ids.shape[0]
    outputs: list[list[int]] = [[] for _ in range(rows)]
    active = list(range(rows))  # original row index of each row still in the batch
    cache = DynamicCache()
    cache_arg = _cache_argument(model)
    tokens, mask, positions = _prefill_shared_prefix(model, input_ids, attention_mask, cache, cache_arg, min_shared)
    for _ in range(max_new_tokens):
        logits = model(input_ids=tokens, attention_mask=mask, position_ids=positions, use_cache=True,
                       **{cache_arg: cache}).logits[:, -1, :]
        chosen = _next_tokens(logits.float(), temperature, top_p).tolist()
        keep = []
        for slot, (row, token) in enumerate(zip(active, chosen, strict=True)):
            outputs[row].append(token)
            done = token in eos_token_ids or len(outputs[row]) >= max_new_tokens or finished(outputs[row])
            if not done:
                keep.append(slot)
        if not keep:
            break
        next_tokens = torch.tensor([[chosen[slot]] for slot in keep], device=input_ids.device)
        if len(keep) < len(active):
            index = torch.tensor(keep, device=input_ids.device)
            cache.batch_select_indices(index)
            mask = mask[index]
            active = [active[slot] for slot in keep]
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
        tokens, positions = next_tokens, mask.long().sum(-1, keepdim=True) - 1
    return outputs


def _prefill_shared_prefix(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, cache: Any, cache_arg: str, min_shared: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(tokens, mask, positions) for the first forward pass, after filling ``cache`` with the shared prefix.

    Row layout afterwards: ``[shared prefix][left padding][rest of the prompt]``; the attention mask
    hides the padding and positions continue from the prefix, so each row sees exactly its prompt.
    """
    prompts = [row[mask.bool()].tolist() for row, mask in zip(input_ids, attention_mask, strict=True)]
    shared = _common_prefix_length(prompts)
    if shared < max(1, min_shared):
        return input_ids, attention_mask, (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    device = input_ids.device
    prefix = torch.tensor([prompts[0][:shared]], device=device)
    model(input_ids=prefix, attention_mask=torch.ones_like(prefix), position_ids=torch.arange(shared, device=device)[None],
          use_cache=True, **{cache_arg: cache})
    cache.batch_repeat_interleave(len(prompts))
    width = max(len(p) for p in prompts) - shared
    pad = int(input_ids[0, 0]) if attention_mask[0, 0] == 0 else 0
    tokens = torch.tensor([[pad] * (width - len(p) + shared) + p[shared:] for p in prompts], device=device)
    rest = torch.tensor([[0] * (width - len(p) + shared) + [1] * (len(p) - shared) for p in prompts], device=device)
    mask = torch.cat([attention_mask.new_ones((len(prompts), shared)), rest.to(attention_mask.dtype)], dim=-1)
    positions = (shared + rest.cumsum(-1) - 1).clamp(min=shared)
    return tokens, mask, positions


def _common_prefix_length(prompts: list[list[int]]) -> int:
    """Tokens every prompt starts with, leaving at least one token per prompt for the first pass."""
    shortest = min(len(p) for p in prompts)
    length = 0
    while length < shortest - 1 and all(p[length] == prompts[0][length] for p in prompts):
        length += 1
    return length


def _cache_argument(model: Any) -> str:
    """``cache`` in transformers >= 5.x (``past_key_values`` is deprecated there), else ``past_key_values``."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        parameters = inspect.signature(base.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in parameters else "past_key_values"


def _next_tokens(logits: torch.Tensor, temperature: float | None, top_p: float) -> torch.Tensor:
    if temperature is None:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / max(temperature, 1e-6), dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        outside = sorted_probs.cumsum(-1) - sorted_probs > top_p  # keep the smallest set reaching top_p
        sorted_probs = sorted_probs.masked_fill(outside, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return torch.multinomial(probs, 1).squeeze(-1)
