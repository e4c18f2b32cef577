"""Batched decoding that runs each distinct prompt once and drops each row from the batch when it finishes.

``model.generate`` keeps every row of a batch in every forward pass until the
last row stops: one completion that rambles to the token limit makes the whole
batch pay for it. :func:`decode` removes finished rows from the input, the
attention mask and the KV cache (``DynamicCache.batch_select_indices``), so the
remaining forward passes shrink with them.

It also avoids running the same prompt tokens twice:

* rows with the same prompt (GRPO's ``num_generations`` completions of one
  prompt, or ``n`` samples per item in ``rlvr eval``) are prefilled once and the
  prompt's KV cache is repeated for each of its rows;
* a run of tokens that several prompts share (the chat header, k-shot
  exemplars) is run once, for one row, and each prompt only runs what differs
  after it: a prefix tree (:mod:`rlvr.evaluation.prefill`).

Greedy decoding picks the same tokens as ``generate`` (up to float rounding of
different batch shapes); sampling applies transformers' own logits warpers
(temperature, top-k, top-p, min-p) in ``generate``'s order
(:func:`sampling_warpers`). Decoder-only models only; :func:`supports_compaction`
tells the caller when to fall back to ``generate``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from rlvr.evaluation.attention import NAME as ATTENTION
from rlvr.evaluation.attention import half_precision_attention
from rlvr.evaluation.kv_cache import reserve
from rlvr.evaluation.prefill import cache_argument, prefill

# generation_config settings that change which token generate() picks beyond what sampling_warpers applies;
# with any of them away from its neutral value, use generate().
_PROCESSORS = {"repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_repetition_penalty": 1.0,
               "bad_words_ids": None, "suppress_tokens": None, "begin_suppress_tokens": None,
               "forced_bos_token_id": None, "forced_eos_token_id": None, "min_new_tokens": None, "min_length": 0,
               "typical_p": 1.0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "top_h": None, "num_beams": 1,
               "penalty_alpha": None, "guidance_scale": 1.0, "sequence_bias": None, "watermarking_config": None,
               "exponential_decay_length_penalty": None, "renormalize_logits": False}


def supports_compaction(model: Any, generation_config: Any = None) -> bool:
    """Whether :func:`decode` can stand in for ``generate`` on ``model`` with ``generation_config``.

    True for decoder-only models whose generation config (default: the model's) adds no logits
    processor beyond temperature, top-k, top-p and min-p.
    """
    config = getattr(model, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return False
    generation = generation_config or getattr(model, "generation_config", None)
    return all(getattr(generation, key, neutral) in (neutral, None) for key, neutral in _PROCESSORS.items())


def eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every id that ends a row for ``generate``: the generation config's EOS id(s) and the tokenizer's."""
    found = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(found if isinstance(found, list) else [found])
    ids.add(tokenizer.eos_token_id)
    return {i for i in ids if i is not None}


def sampling_warpers(
    temperature: float | None = None, top_k: int | None = None, top_p: float | None = None, min_p: float | None = None
) -> Any:
    """transformers' logits warpers for sampling, in the order ``generate`` applies them."""
    from transformers import (
        LogitsProcessorList,
        MinPLogitsWarper,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    warpers = LogitsProcessorList()
    if temperature is not None and temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(temperature))
    if top_k:
        warpers.append(TopKLogitsWarper(top_k=top_k))
    if top_p is not None and top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=top_p))
    if min_p is not None:
        warpers.append(MinPLogitsWarper(min_p=min_p))
    return warpers


def warpers_for(generation_config: Any) -> Any:
    """The sampling warpers ``generate`` would use with ``generation_config``; None when it decodes greedily."""
    if not generation_config.do_sample:
        return None
    config = generation_config
    return sampling_warpers(config.temperature, config.top_k, config.top_p, config.min_p)


def decode_workers(rows: int) -> int:
    """How many threads :func:`decode` splits ``rows`` rows over: 2 when there are 2+ intra-op threads and 16+ rows.

    A decoding step of a small model is short matmuls between stretches of Python; one thread leaves
    the cores idle during the Python, two threads (each with half the cores) fill them. ``RLVR_DECODE_WORKERS``
    sets the number (1 turns the split off).
    """
    chosen = os.environ.get("RLVR_DECODE_WORKERS")
    if chosen is not None:
        return max(1, int(chosen))
    return 2 if torch.get_num_threads() >= 2 and rows >= 16 else 1


@torch.no_grad()
def decode(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    max_new_tokens: int,
    finished: Callable[[list[int]], bool],
    eos_token_ids: set[int],
    warpers: Any = None,
    min_shared: int = 32,
    workers: int | None = None,
) -> list[list[int]]:
    """New token ids per row of a left-padded batch.

    A row ends at EOS (included), when ``finished(its new ids)`` is true, or at
    ``max_new_tokens``. ``warpers`` (see :func:`sampling_warpers`) None means
    greedy. Rows with identical prompts share one prefill; a run of tokens
    that several distinct prompts share (k-shot exemplars) is run once when it
    saves ``min_shared`` or more token computations (:mod:`rlvr.evaluation.prefill`).

    The rows are split over ``workers`` threads (default :func:`decode_workers`), rows sharing a prompt
    kept together, each thread with its share of the intra-op threads. Greedy rows get the same tokens
    (up to float rounding of different batch shapes); sampled rows draw from one generator per part,
    seeded from torch's global generator in the calling thread, so a seeded run stays reproducible.
    """
    with half_precision_attention(model):  # bf16 / float16: grouped-matmul attention (rlvr.evaluation.attention)
        return _decode_parts(model, input_ids, attention_mask, max_new_tokens, finished, eos_token_ids, warpers,
                             min_shared, workers)


def _decode_parts(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, max_new_tokens: int,
                  finished: Callable[[list[int]], bool], eos_token_ids: set[int], warpers: Any, min_shared: int,
                  workers: int | None) -> list[list[int]]:
    parts = _row_parts(input_ids, attention_mask, workers or decode_workers(input_ids.shape[0]))
    if len(parts) < 2:
        return _decode(model, input_ids, attention_mask, max_new_tokens, finished, eos_token_ids, warpers, min_shared)
    seeds = [int(torch.randint(0, 2**62, ())) for _ in parts] if warpers is not None else [None] * len(parts)
    threads = max(1, torch.get_num_threads() // len(parts))

    def run(rows: list[int], seed: int | None) -> list[list[int]]:
        torch.set_num_threads(threads)  # this thread's share (OpenMP's thread count is per calling thread)
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        return _decode(model, input_ids[rows], attention_mask[rows], max_new_tokens, finished, eos_token_ids,
                       warpers, min_shared, generator)  # _decode turns gradients off in its own thread

    with ThreadPoolExecutor(len(parts)) as pool:
        results = list(pool.map(run, parts, seeds))
    outputs: list[list[int]] = [[] for _ in range(input_ids.shape[0])]
    for rows, generated in zip(parts, results, strict=True):
        for row, ids in zip(rows, generated, strict=True):
            outputs[row] = ids
    return outputs


def _row_parts(input_ids: torch.Tensor, attention_mask: torch.Tensor, workers: int) -> list[list[int]]:
    """Row indices split into up to ``workers`` parts of about equal size, rows with the same prompt in one part."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for row, (ids, mask) in enumerate(zip(input_ids, attention_mask, strict=True)):
        groups.setdefault(tuple(ids[mask.bool()].tolist()), []).append(row)
    if workers < 2 or len(groups) < 2:
        return [list(range(input_ids.shape[0]))]
    parts: list[list[int]] = [[] for _ in range(min(workers, len(groups)))]
    target = input_ids.shape[0] / len(parts)
    index = 0
    for rows in groups.values():
        if len(parts[index]) >= target and index < len(parts) - 1:
            index += 1
        parts[index].extend(rows)
    return [part for part in parts if part]


@torch.inference_mode()
def _decode(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    max_new_tokens: int,
    finished: Callable[[list[int]], bool],
    eos_token_ids: set[int],
    warpers: Any = None,
    min_shared: int = 32,
    generator: torch.Generator | None = None,
) -> list[list[int]]:
    """:func:`decode` in the calling thread.

    Inference mode, not only ``no_grad``: no version counters or view tracking on the many small tensors of
    a decoding step (the default's test evaluation ~34 -> ~31 s). Nothing it makes leaves it but token ids.
    """
    from transformers import DynamicCache

    outputs: list[list[int]] = [[] for _ in range(input_ids.shape[0])]
    active = list(range(input_ids.shape[0]))  # original row index of each row still in the batch
    cache = DynamicCache()
    cache_arg = cache_argument(model)
    logits, mask = _prefill(model, input_ids, attention_mask, cache, cache_arg, min_shared)
    # Each step's keys and values written in place, not appended by copying the cache; transposed keys for the
    # grouped-matmul attention of half-precision models (rlvr.evaluation.attention).
    reserve(cache, max_new_tokens, transposed_keys=getattr(model.config, "_attn_implementation", None) == ATTENTION)
    for _ in range(max_new_tokens):
        chosen = _next_tokens(logits, warpers, generator).tolist()
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
        positions = mask.long().sum(-1, keepdim=True) - 1
        logits = model(input_ids=next_tokens, attention_mask=mask, position_ids=positions, use_cache=True,
                       **{cache_arg: cache}).logits[:, -1, :].float()
    return outputs


def _prefill(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, cache: Any, cache_arg: str, min_shared: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(next-token logits, attention mask) per row after filling ``cache`` with every row's prompt.

    Each distinct prompt is run once; its cache, logits and mask are then repeated for its rows.
    """
    prompts = [tuple(row[mask.bool()].tolist()) for row, mask in zip(input_ids, attention_mask, strict=True)]
    first_row: dict[tuple[int, ...], int] = {}
    for row, prompt in enumerate(prompts):
        first_row.setdefault(prompt, row)
    distinct = list(first_row.values())
    logits, mask = prefill(model, input_ids[distinct], attention_mask[distinct], cache, cache_arg, min_shared)
    if len(distinct) == len(prompts):
        return logits, mask
    slot = {prompt: i for i, prompt in enumerate(first_row)}
    index = torch.tensor([slot[prompt] for prompt in prompts], device=input_ids.device)
    cache.batch_select_indices(index)
    return logits[index], mask[index]


def _next_tokens(logits: torch.Tensor, warpers: Any, generator: torch.Generator | None = None) -> torch.Tensor:
    if warpers is None:
        return logits.argmax(dim=-1)
    return sample(warpers(None, logits), generator)


def sample(scores: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per row, drawn from ``softmax(scores)``, by inverting the cumulative distribution at a uniform draw.

    The same distribution ``torch.multinomial`` samples, for a tenth of its time on a CPU: multinomial draws an
    exponential variate for every vocabulary entry of every row (49,152 for SmolLM2), this one uniform per row.
    The cumulative sum is taken in float64, so each token's chance is exact to ~1e-16 (float32's ~3e-8 near the
    top of the sum would drop the rarest tokens). Tokens with zero probability (masked by top-k or top-p) are
    never drawn. Another random stream than multinomial's: a seed reproduces this sampler's draws, not
    ``generate()``'s.
    """
    cumulative = torch.softmax(scores, dim=-1, dtype=torch.float64).cumsum_(dim=-1)
    uniform = torch.rand((scores.shape[0], 1), generator=generator, dtype=torch.float64, device=scores.device)
    draw = (1.0 - uniform) * cumulative[:, -1:]  # in (0, total]: the first token whose sum reaches it has p > 0
    return torch.searchsorted(cumulative, draw).squeeze(-1).clamp_(max=scores.shape[-1] - 1)
