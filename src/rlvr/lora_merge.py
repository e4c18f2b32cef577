"""LoRA merged into base weights: while generating, and bf16 weights widened for a check, both given back exactly
(bit for bit in bf16) so training continues on the weights it had; and after training, a saved adapter merged into
a fresh full-precision base (``run.merge_adapter``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlvr import atomic
from rlvr.errors import RlvrError
from rlvr.memory import release_memory


@contextlib.contextmanager
def lora_merged(model: Any, in_place: bool = False) -> Iterator[bool]:
    """LoRA weights merged into the base weights for the block (yields whether they were), then taken out again.

    Generation then runs plain linear layers, without the per-layer adapter matmuls (faster on a CPU), on the
    weights ``PeftModel.merge_and_unload`` gives (what ``rlvr eval --adapter`` evaluates). In float32 peft merges in
    place and unmerges after: the sum and difference keep the update to about 1e-7 of a weight. Half-precision
    (bf16, float16) weights are given back bit for bit (only subtracting the update from a rounded bf16 sum would
    leave the rounding in the base weights, a little more at every merge): merged into copies, the originals put
    back after (fast; +212 MB for SmolLM2 while merged), or ``in_place`` (:func:`_merged_in_place_exactly`: ~0.4 s
    more for SmolLM2, ~20 MB). Not merged: models without LoRA, 4-bit weights (the update would be rounded into
    NF4), DoRA.
    """
    import torch
    from peft.tuners.lora import LoraLayer

    layers = [m for m in model.modules() if isinstance(m, LoraLayer)]
    if (not layers or not hasattr(model, "merge_adapter") or getattr(model, "is_loaded_in_4bit", False)
            or any(layer.merged or any(layer.use_dora.get(a) or getattr(layer, "lora_bias", {}).get(a)
                                       for a in layer.active_adapters) for layer in layers)):
        yield False
        return
    if all(layer.get_base_layer().weight.dtype in (torch.float32, torch.float64) for layer in layers):
        model.merge_adapter()
        try:
            yield True
        finally:
            model.unmerge_adapter()
        return
    with _merged_in_place_exactly(layers) if in_place else _merged_into_copies(layers):
        yield True


@contextlib.contextmanager
def float32_weights(model: Any) -> Iterator[None]:
    """``model``'s bf16 and float16 parameters and buffers in float32 for the block, then the originals back.

    For checks that compare two computations: in bf16 two equal computations in another order differ by bf16's
    rounding (~0.4% at each step), in float32 by ~1e-6. The widening is exact, and the original tensors are put
    back (not narrowed again), so the weights come back bit for bit.
    """
    import torch

    half = (torch.bfloat16, torch.float16)
    tensors = [t for t in [*model.parameters(), *model.buffers()] if t.dtype in half]
    originals = [t.data for t in tensors]
    try:
        for tensor in tensors:
            tensor.data = tensor.data.float()
        yield
    finally:
        for tensor, original in zip(tensors, originals, strict=True):
            tensor.data = original


@contextlib.contextmanager
def _merged_into_copies(layers: list[Any]) -> Iterator[None]:
    """Each layer's base weight replaced by a copy with its adapters' update added as peft's merge adds it
    (in float32, rounded once); the original tensors restored after."""
    import torch

    saved = []
    try:
        with torch.no_grad():
            for layer, weight, names in _marked_merged(layers, saved):
                original = weight.data
                weight.data = (original.float() + _delta(layer, names)).to(original.dtype)
                saved[-1] += (original,)
        release_memory()  # the float32 temporaries
        yield
    finally:
        for layer, weight, names, *original in saved:  # no original: stopped before this layer was merged
            if original:
                weight.data = original[0]
            _unmark(layer, names)


@contextlib.contextmanager
def _merged_in_place_exactly(layers: list[Any]) -> Iterator[None]:
    """Each layer's half-precision base weight ``W`` replaced in place by ``M = round(W + delta)`` (the update as
    peft's merge adds it: in float32, rounded once), and given back bit for bit afterwards.

    Subtracting the update again, ``round(M - delta)``, gives ``W`` back for all but ~2% of the weights (ties,
    and sums that crossed a power of two); those are found before merging and their values kept, ~20 MB for
    SmolLM2 where copies of the merged weights would take 212 MB. ``delta`` is computed again from the unchanged
    LoRA weights to restore, by the same matmul, so it is the same bits.
    """
    import torch

    saved = []
    try:
        with torch.no_grad():
            for layer, weight, names in _marked_merged(layers, saved):
                delta = _delta(layer, names)
                merged = (weight.float() + delta).to(weight.dtype)
                missed = ((merged.float() - delta).to(weight.dtype) != weight).flatten().nonzero().squeeze(1)
                saved[-1] += (missed, weight.flatten()[missed].clone())
                weight.copy_(merged)
        release_memory()  # the float32 temporaries: glibc keeps their pages otherwise (+0.3 GB for SmolLM2)
        yield
    finally:
        with torch.no_grad():
            for layer, weight, names, *kept in saved:  # nothing kept: stopped before this layer was merged
                if kept:
                    weight.copy_((weight.float() - _delta(layer, names)).to(weight.dtype))
                    weight.view(-1)[kept[0]] = kept[1]
                _unmark(layer, names)
        release_memory()


def _delta(layer: Any, names: list[str]) -> Any:
    delta = layer.get_delta_weight(names[0]).float()
    for name in names[1:]:
        delta = delta + layer.get_delta_weight(name).float()
    return delta


def _marked_merged(layers: list[Any], saved: list[tuple]) -> Iterator[tuple[Any, Any, list[str]]]:
    """Each LoRA layer with its base weight and active adapters, marked merged (peft's forward then runs the base
    layer alone) and recorded in ``saved`` (``(layer, weight, names)``, which the caller extends) to be undone."""
    for layer in layers:
        names = [a for a in layer.active_adapters if a in layer.lora_A]
        weight = layer.get_base_layer().weight
        layer.merged_adapters.extend(names)
        saved.append((layer, weight, names))
        yield layer, weight, names


def _unmark(layer: Any, names: list[str]) -> None:
    for name in names:
        layer.merged_adapters.remove(name)


# ----------------------------------------------------------------------------- a saved adapter, merged and saved


def merge_adapter(adapter_dir: str | Path, base_reference: str, dtype: str, output_dir: str | Path,
                  chat_format: str | None = None) -> Path:
    """Merge a saved LoRA adapter into a freshly loaded copy of its base model at full precision; save it.

    Not into the model that was trained: under QLoRA its base weights are 4-bit, so merging
    either rounds the LoRA update into NF4 or needs a lossy dequantization first, and under
    DeepSpeed ZeRO-3 its parameters are partitioned across processes. The fresh base loads
    in ``dtype`` (the checkpoint's own precision with ``auto`` on a GPU, float32 on CPU),
    without quantization and outside ZeRO-3's partitioned initialisation.
    """
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from rlvr.chat_format import adapter_tokenizer_dir, fit_model_to_tokenizer
    from rlvr.model_sources import resolve_model
    from rlvr.models import load_tokenizer, not_found_message, torch_dtype

    adapter_dir, output_dir = Path(adapter_dir), Path(output_dir)
    base_path = resolve_model(base_reference)
    tokenizer = load_tokenizer(adapter_tokenizer_dir(adapter_dir) or base_path)
    with _zero3_init_disabled():
        try:
            base = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch_dtype(dtype))
        except OSError:
            raise RlvrError(not_found_message(base_path)) from None
        if chat_format:
            fit_model_to_tokenizer(base, tokenizer)
        merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    with atomic.replacing_dir(output_dir) as building:  # complete or absent: a kill mid-save leaves no half model
        merged.save_pretrained(str(building))
        tokenizer.save_pretrained(str(building))
    return output_dir


@contextlib.contextmanager
def _zero3_init_disabled() -> Iterator[None]:
    """Load a whole model in this process even while a ZeRO-3 config is registered with transformers.

    Only the main process merges; a ZeRO-3 partitioned ``from_pretrained`` would wait for
    the other processes forever. transformers keeps the registered config in a module
    global (``_hf_deepspeed_config_weak_ref``); it is cleared for the load and restored.
    """
    from transformers.integrations import deepspeed as hf_deepspeed

    saved = getattr(hf_deepspeed, "_hf_deepspeed_config_weak_ref", None)
    hf_deepspeed.unset_hf_deepspeed_config()
    try:
        yield
    finally:
        hf_deepspeed._hf_deepspeed_config_weak_ref = saved
