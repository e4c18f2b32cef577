"""Attention for bf16 (and float16) models on a CPU: grouped matmuls instead of SDPA's CPU kernels.

PyTorch's CPU SDPA kernel (the flash-attention one) is slow in bf16: one decoding step of SmolLM2 (32 rows x 9
heads over ~200 cached tokens) takes it ~3 ms per layer where two batched matmuls take 0.55 ms, and a training
piece's forward and backward (2 rows x 33 tokens over 193) 3.0 ms against 1.1 ms (BENCHMARKS.md, "bf16 on the
CPU's bf16 units"); in float32 the two are even. :func:`grouped_attention` is SDPA's computation done as
transformers' eager attention does it: the query heads that share a key-value head are grouped into one matmul
(no copy of the keys per head), the scores are rounded to the model's dtype by the matmul and softmaxed in float32.
Anything else (float32, dropout, soft-capping, a position bias, scores larger than :data:`SCORE_BUDGET`) goes to
transformers' own SDPA function.

:func:`half_precision_attention` switches a bf16 or float16 model with SDPA attention to it for a block; it is
registered with transformers under :data:`NAME`, with SDPA's mask.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

NAME = "rlvr_grouped_sdpa"
#: Most float32 scores (rows x heads x queries x keys) computed at once; beyond, SDPA's memory-efficient kernel.
SCORE_BUDGET = 1 << 23


def grouped_attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                      **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: ``query [rows, heads, queries, dim]``, ``key``/``value``
    ``[rows, kv_heads, keys, dim]``, a boolean mask ``[rows, 1, queries, keys]`` (True: attend) or None;
    returns ``[rows, queries, heads, dim]``."""
    rows, heads, queries, dim = query.shape
    kv_heads, keys = key.shape[1], key.shape[2]
    if not _usable(module, query, key, attention_mask, dropout, kwargs):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    group = heads // kv_heads
    scale = scaling if scaling is not None else dim ** -0.5
    # Head h reads key-value head h // group: [rows, kv_heads, group x queries, dim], as batched matrices.
    grouped = query.reshape(rows * kv_heads, group * queries, dim)
    # Keys as [dim, keys] matrices: a transposed view (rlvr.evaluation.kv_cache may store them so), not copied.
    scores = torch.bmm(grouped, key.transpose(-1, -2).reshape(rows * kv_heads, dim, keys)).float().mul_(scale)
    scores = scores.view(rows, kv_heads, group, queries, keys)
    allowed = _allowed(attention_mask, queries, keys, scores.device)
    if allowed is not None:
        # The float minimum, not -inf: a query that may attend nowhere (a padding position) gets finite weights.
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1).to(value.dtype).view(rows, kv_heads, group * queries, keys)
    output = torch.matmul(weights, value)  # [rows, kv_heads, group x queries, dim]
    return output.view(rows, heads, queries, dim).transpose(1, 2), None


def _usable(module: Any, query: torch.Tensor, key: torch.Tensor, attention_mask: torch.Tensor | None,
            dropout: float, kwargs: dict[str, Any]) -> bool:
    rows, heads, queries, _ = query.shape
    kv_heads, keys = key.shape[1], key.shape[2]
    mask_known = attention_mask is not None or queries == 1 or queries == keys  # else SDPA's is_causal alignment
    boolean = attention_mask is None or attention_mask.dtype == torch.bool
    return (query.dtype in (torch.bfloat16, torch.float16) and not dropout and heads % kv_heads == 0 and mask_known
            and boolean and kwargs.get("softcap") is None and kwargs.get("position_bias") is None
            and getattr(module, "is_causal", True) and rows * heads * queries * keys <= SCORE_BUDGET)


def _allowed(attention_mask: torch.Tensor | None, queries: int, keys: int, device: Any) -> torch.Tensor | None:
    """Which keys each query may attend, broadcastable to ``[rows, kv_heads, group, queries, keys]``."""
    if attention_mask is not None:
        return attention_mask[:, :, :, :keys].unsqueeze(2)  # [rows, 1, 1, queries, keys]
    if queries == 1:
        return None  # one new token after its whole cache: every key
    return torch.ones(queries, keys, dtype=torch.bool, device=device).tril()  # causal, queries == keys


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, grouped_attention)
        AttentionMaskInterface.register(NAME, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])


@contextlib.contextmanager
def half_precision_attention(model: Any) -> Iterator[bool]:
    """:func:`grouped_attention` in place of SDPA for the block, for a model whose weights are bf16 or float16 and
    whose attention is SDPA; yields whether it is in use (already switched by an enclosing block counts)."""
    config = getattr(model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    if current == NAME:
        yield True
        return
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    dtype = getattr(getattr(embeddings, "weight", None), "dtype", None)
    if current != "sdpa" or dtype not in (torch.bfloat16, torch.float16):
        yield False
        return
    _register()
    config._attn_implementation = NAME
    try:
        yield True
    finally:
        config._attn_implementation = current
