"""Prefill a batch of distinct prompts as a prefix tree: a run of tokens several prompts share is computed once.

k-shot prompts share a chat header and, row by row, exemplars drawn from a pool: in one batch, the rows with the
same first exemplar share it, the rows with the same two exemplars share both, and the header is shared by all.
A causal model's keys and values for a token depend only on the tokens before it and on its position, so each
shared run is computed once, for one row, and the rows below it continue from its cache. The cache handed back
has the usual left-padded layout (``[padding][prompt]`` per row, positions from 0 at the first prompt token):
what one batched forward pass over the whole batch would have left, up to float rounding of other shapes.

A shared run gets its own forward pass only when it saves at least ``min_shared`` token computations
((prompts sharing it - 1) x its length); below that, the pass's overhead outweighs the tokens it saves.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: (keys, values), [rows, heads, tokens, head dim]


def prefill(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, cache: Any, cache_arg: str, min_shared: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(next-token logits, attention mask) per row of a left-padded batch of distinct prompts, ``cache`` filled."""
    prompts = [row[mask.bool()].tolist() for row, mask in zip(input_ids, attention_mask, strict=True)]
    tree = _Tree(model, prompts, input_ids.shape[1], cache_arg, min_shared, input_ids.device)
    try:
        tree.grow(list(range(len(prompts))), 0, None)
    except _NotPlainCache:  # sliding-window or recurrent layers: their cache cannot be cut and joined like this
        tree.whole_batch = True
    if tree.whole_batch:  # nothing shared was worth a pass of its own: one ordinary batched pass
        return _one_pass(model, input_ids, attention_mask, cache, cache_arg)
    for layer, (keys, values) in enumerate(tree.kv):
        cache.update(keys, values, layer)
    return torch.stack(tree.logits), attention_mask


class _Tree:
    """Runs the prefix tree of ``prompts``; afterwards ``kv`` holds the batch's cache, each row's prompt at the
    right end of ``width`` slots (left padding), and ``logits[row]`` each row's next-token logits."""

    def __init__(self, model: Any, prompts: list[list[int]], width: int, cache_arg: str, min_shared: int,
                 device: Any):
        self.model, self.prompts, self.width, self.cache_arg = model, prompts, width, cache_arg
        self.min_shared, self.device = max(1, min_shared), device
        self.kv: KV = []  # allocated at the first batched pass, which tells the shapes
        self.logits: list[torch.Tensor] = [torch.empty(0)] * len(prompts)
        self.whole_batch = False

    def grow(self, rows: list[int], start: int, parent: KV | None) -> None:
        """Fill ``rows``, whose first ``start`` tokens are in ``parent`` (one row's cache; None when ``start`` is 0)."""
        leaves: list[int] = []  # rows that run the rest of their prompt from ``parent`` in one batched pass
        self._visit(rows, start, parent, leaves)
        if parent is None and len(leaves) == len(self.prompts):
            self.whole_batch = True
        elif leaves:
            self._run_leaves(leaves, start, parent)

    def _visit(self, rows: list[int], start: int, parent: KV | None, leaves: list[int]) -> None:
        if len(rows) == 1:
            leaves.append(rows[0])
            return
        shared = common_prefix_length([self.prompts[row] for row in rows])
        if (len(rows) - 1) * (shared - start) >= self.min_shared:
            self.grow(rows, shared, self._run_shared(self.prompts[rows[0]][start:shared], start, parent))
            return
        groups: dict[int, list[int]] = {}
        for row in rows:
            groups.setdefault(self.prompts[row][shared], []).append(row)
        if len(groups) == 1:  # the shortest prompt ends where the others go on: no further split
            leaves.extend(rows)
            return
        for group in groups.values():
            self._visit(group, start, parent, leaves)

    def _run_shared(self, tokens: list[int], start: int, parent: KV | None) -> KV:
        """One row's cache after ``tokens`` at positions ``start``... on top of ``parent``."""
        cache = _cache_of(parent, 1)
        ids = torch.tensor([tokens], device=self.device)
        positions = torch.arange(start, start + len(tokens), device=self.device)[None]
        self._forward(ids, torch.ones((1, start + len(tokens)), dtype=torch.long, device=self.device), positions,
                      cache)
        return _kv_of(cache)

    def _run_leaves(self, rows: list[int], start: int, parent: KV | None) -> None:
        """The rest of each row's prompt, left-padded, in one pass on top of ``parent``; keeps each row's cache."""
        rests = [self.prompts[row][start:] for row in rows]
        width = max(len(rest) for rest in rests)
        ids = torch.tensor([[0] * (width - len(r)) + r for r in rests], device=self.device)
        rest_mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rests], device=self.device)
        mask = torch.cat([rest_mask.new_ones((len(rows), start)), rest_mask], dim=-1)
        positions = (start + rest_mask.cumsum(-1) - 1).clamp(min=start)
        cache = _cache_of(parent, len(rows))
        logits = self._forward(ids, mask, positions, cache)
        layers = _kv_of(cache)
        if not self.kv:
            self.kv = [(k.new_zeros((len(self.prompts), *k.shape[1:2], self.width, k.shape[3])),
                        v.new_zeros((len(self.prompts), *v.shape[1:2], self.width, v.shape[3]))) for k, v in layers]
        for slot, (row, rest) in enumerate(zip(rows, rests, strict=True)):
            self.logits[row] = logits[slot]
            kept = torch.cat([torch.arange(start), torch.arange(start + width - len(rest), start + width)])
            for (keys, values), (k, v) in zip(self.kv, layers, strict=True):  # the row's prompt, left-padded
                keys[row, :, self.width - len(kept):] = k[slot][:, kept]
                values[row, :, self.width - len(kept):] = v[slot][:, kept]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any) -> torch.Tensor:
        output = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                            **{self.cache_arg: cache}, **_keep_last(self.model, ids.shape[1]))
        return output.logits[:, -1, :].float()


def common_prefix_length(prompts: list[list[int]]) -> int:
    """Tokens every prompt starts with, leaving at least one token of the shortest for the pass that follows."""
    shortest = min(len(p) for p in prompts)
    length = 0
    while length < shortest - 1 and all(p[length] == prompts[0][length] for p in prompts):
        length += 1
    return length


def _one_pass(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, cache: Any,
              cache_arg: str) -> tuple[torch.Tensor, torch.Tensor]:
    positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    output = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions, use_cache=True,
                   **{cache_arg: cache}, **_keep_last(model, input_ids.shape[1]))
    return output.logits[:, -1, :].float(), attention_mask


def _cache_of(kv: KV | None, rows: int) -> Any:
    """A fresh DynamicCache holding ``kv`` (one row) repeated for ``rows`` rows; empty for None."""
    from transformers import DynamicCache

    cache = DynamicCache()
    for layer, (keys, values) in enumerate(kv or []):
        cache.update(keys.expand(rows, -1, -1, -1), values.expand(rows, -1, -1, -1), layer)  # copied by the next pass
    return cache


class _NotPlainCache(Exception):
    """The model filled its cache with layers other than plain full-attention key/value ones."""


def _kv_of(cache: Any) -> KV:
    if not hasattr(cache, "layers"):  # transformers < 4.56
        return list(zip(cache.key_cache, cache.value_cache, strict=True))
    from transformers.cache_utils import DynamicLayer

    if not all(type(layer) is DynamicLayer and layer.is_initialized for layer in cache.layers):
        raise _NotPlainCache
    return [(layer.keys, layer.values) for layer in cache.layers]


def _keep_last(model: Any, width: int) -> dict[str, Any]:
    """Logits of the last position only. Given as an index, not ``1``: the slice ``hidden[:, -1:]`` is a strided
    view, for which the LM head's matmul took a path that copied the head's weights once per row (4 rows of
    SmolLM2: 0.24 s to copy 113M values, in a 0.8 s prefill); the index makes a small contiguous copy instead."""
    if not _accepts(model, "logits_to_keep"):
        return {}
    return {"logits_to_keep": torch.tensor([width - 1])}


def _signature(model: Any) -> Any:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        return inspect.signature(base.forward).parameters
    except (TypeError, ValueError):
        return {}


def _accepts(model: Any, name: str) -> bool:
    return name in _signature(model)


def cache_argument(model: Any) -> str:
    """``cache`` in transformers >= 5.x (``past_key_values`` is deprecated there), else ``past_key_values``."""
    return "cache" if _accepts(model, "cache") else "past_key_values"
