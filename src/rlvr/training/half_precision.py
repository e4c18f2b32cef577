"""LoRA's matrix products in bf16 while the loss runs, its weights and optimizer state still float32.

With bf16 base weights peft keeps the LoRA weights float32 (so Adam's small updates are not rounded away) and
computes the adapters in float32: each LoRA layer casts its bf16 input to float32 and returns a float32
``[tokens, outputs]`` product, twice the memory traffic of the base layer it sits on, and as many extra
operations; on SmolLM2's default the adapters took as long as in a float32 run while everything around them
ran twice as fast. :func:`half_precision_lora` runs the loss's forwards under ``torch.autocast`` in bf16 with
peft's input cast off: the adapters' products run in bf16 (their weights cast for each forward, which autocast
keeps for the block), their gradients arrive in the float32 parameters' ``.grad``, and the optimizer steps in
float32, as mixed-precision training does on a GPU. Float32 models and GPUs (whose recipes set their own
``grpo.bf16``) are left alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


def lora_over_half_weights(model: Any) -> bool:
    """Whether ``model`` is a LoRA model on a CPU whose frozen base weights are bf16 or float16."""
    if not hasattr(model, "peft_config"):
        return False
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    weight = getattr(embeddings, "weight", None)
    return weight is not None and weight.device.type == "cpu" and weight.dtype in (torch.bfloat16, torch.float16)


@contextlib.contextmanager
def half_precision_lora(model: Any) -> Iterator[bool]:
    """The block's forwards with LoRA in the base weights' half precision (autocast); yields whether it applies."""
    if not lora_over_half_weights(model) or torch.is_autocast_enabled("cpu"):
        yield False
        return
    from peft.helpers import disable_input_dtype_casting

    dtype = model.get_input_embeddings().weight.dtype
    with torch.autocast("cpu", dtype=dtype), disable_input_dtype_casting(model):
        yield True
