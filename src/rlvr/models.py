"""Load a recipe's model: tokenizer, weights in the chosen precision (LoRA / QLoRA / CPU fallback), LoRA settings,
and a trained adapter merged into a fresh base.

Where a model reference comes from (aliases, GGUF files, the cache) is :mod:`rlvr.model_sources`; the chat format
put on a base model is :mod:`rlvr.chat_format`.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlvr import atomic
from rlvr.errors import RlvrError
from rlvr.model_sources import cache_dir

if TYPE_CHECKING:
    from rlvr.config import Recipe
    from rlvr.precision import Precision


# ----------------------------------------------------------------------------- loading


def load_tokenizer(model_path: str) -> Any:
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    except OSError:
        raise RlvrError(not_found_message(model_path)) from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def not_found_message(model_path: str) -> str:
    return (
        f"model '{model_path}' not found: it is not a local directory and the Hugging Face Hub is unreachable "
        "or has no such model. Use a local model directory, a .gguf file, or the built-in 'smollm2-135m-instruct'."
    )


def model_precision(model: Any, evaluating: bool = False) -> Precision:
    """The precision a recipe's ``model`` section trains (or, ``evaluating``, evaluates) in on this machine."""
    import dataclasses

    from rlvr.precision import choose

    four_bit = bool(getattr(model, "load_in_4bit", False))
    chosen = choose(model.dtype, trains_base=not evaluating and not model.lora, four_bit=four_bit)
    return dataclasses.replace(chosen, adapters=None) if evaluating else chosen  # no optimizer to speak of


def load_model(model_path: str, recipe: Recipe, precision: Precision | None = None) -> Any:
    """The base model of ``recipe`` in ``precision`` (default: :func:`model_precision` of the recipe)."""
    from transformers import AutoModelForCausalLM

    four_bit = recipe.model.load_in_4bit and _four_bit_available(recipe)
    precision = precision or model_precision(recipe.model)
    kwargs = model_kwargs(recipe.model, four_bit=four_bit, zero3=deepspeed_zero3(), dtype=precision.torch_dtype())
    stored = model_path if four_bit else stored_in(model_path, precision.dtype)
    try:
        model = AutoModelForCausalLM.from_pretrained(stored, **kwargs)
    except OSError:
        raise RlvrError(not_found_message(stored)) from None
    if stored != model_path:  # the model's name, as an adapter records it, is the model's, not its bf16 copy's
        model.config._name_or_path = model.name_or_path = str(model_path)
    if four_bit:
        keep_cpu_4bit_layers_trainable(model)
    return model


def stored_in(model_path: str, dtype: str) -> str:
    """A copy of one of rlvr's cached models (a converted GGUF) with its weights stored in ``dtype``, made once.

    The cache holds a GGUF's weights dequantized to float32. Loaded as bf16, every weight would be read and
    narrowed at each start, and the float32 file's pages stay mapped beside the bf16 tensors (+0.7 GB resident
    while loading, measured on SmolLM2); a bf16 file is mapped as it is. Other models (a directory of the user's,
    a Hub id) are loaded where they are.
    """
    import json

    path = Path(model_path)
    if dtype == "float32" or path.parent != cache_dir() / "models" or not (path / "config.json").is_file():
        return model_path
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    if (config.get("dtype") or config.get("torch_dtype")) != "float32":
        return model_path
    target = path.with_name(f"{path.name}-{dtype}")
    if (target / "config.json").is_file():
        return str(target)
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    with atomic.replacing_dir(target) as building:  # two runs starting together each write their own, then rename
        model.save_pretrained(building)
    return str(target)


def keep_cpu_4bit_layers_trainable(model: Any) -> int:
    """Stop bitsandbytes repacking 4-bit CPU weights for inference; return the layers changed.

    On a CPU with AVX512-BF16, bitsandbytes (0.50) repacks a ``Linear4bit``'s weights the
    first time it runs in eval mode without gradients (as in GRPO's generation) and keeps
    them packed. Later training forwards then go through ``gemv_4bit``, which has no
    autograd kernel: the gradient through the frozen base weights is silently dropped, so
    the LoRA gradients of every layer below the last are wrong (measured: up to 50% off on
    a tiny Llama). With the repacking off, generation and training share the plain NF4 path.
    """
    import bitsandbytes as bnb

    layers = [m for m in model.modules() if isinstance(m, bnb.nn.Linear4bit)]
    for layer in layers:
        layer.support_avx512bf16_for_cpu = False
    return len(layers)


def model_kwargs(model: Any, four_bit: bool, zero3: bool, dtype: Any = None) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments for a recipe's ``model`` section (``dtype``: the torch dtype of the
    weights; default: what :func:`model_precision` chooses)."""
    dtype = dtype if dtype is not None else model_precision(model).torch_dtype()
    kwargs: dict[str, Any] = {"dtype": dtype}
    if model.attn_implementation:
        kwargs["attn_implementation"] = model.attn_implementation
    if four_bit:
        kwargs["quantization_config"] = quantization_config(dtype, zero3)
    return kwargs


def quantization_config(compute_dtype: Any, zero3: bool) -> Any:
    """QLoRA's NF4 4-bit config, computing in ``compute_dtype``.

    Under DeepSpeed ZeRO-3 the 4-bit weights are also *stored* in ``compute_dtype``
    (``bnb_4bit_quant_storage``): ZeRO-3 partitions every parameter as a flat tensor of
    the model's floating dtype and cannot shard the default uint8 storage, so without it
    the quantized weights stay whole on every process or fail to load. The packed values
    are the same; only the container dtype changes.
    """
    from transformers import BitsAndBytesConfig

    options: dict[str, Any] = {
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
        "bnb_4bit_compute_dtype": compute_dtype,
    }
    if zero3:
        options["bnb_4bit_quant_storage"] = compute_dtype
    return BitsAndBytesConfig(**options)


def deepspeed_zero3(env: Any = None) -> bool:
    """Whether this process trains under DeepSpeed ZeRO-3.

    transformers knows once a TrainingArguments with a ZeRO-3 config exists (rlvr builds
    the GRPOConfig before loading the model); ``accelerate launch`` with a ZeRO-3 config
    also says so in the environment.
    """
    env = os.environ if env is None else env
    from transformers.integrations import is_deepspeed_zero3_enabled

    if is_deepspeed_zero3_enabled():
        return True
    use_deepspeed = str(env.get("ACCELERATE_USE_DEEPSPEED", "")).lower() in ("1", "true", "yes")
    return use_deepspeed and str(env.get("ACCELERATE_DEEPSPEED_ZERO_STAGE", "")) == "3"


def torch_dtype(name: str) -> Any:
    """The dtype a merged model is saved in: ``auto`` is the GPU's half precision, float32 on a CPU (merging a
    LoRA update into bf16 weights rounds much of it away)."""
    import torch

    if name == "auto":
        if torch.cuda.is_available():
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return getattr(torch, name)


def _four_bit_available(recipe: Recipe) -> bool:
    reason = four_bit_unavailable()
    if reason is None:
        return True
    if recipe.model.quantization_fallback == "error":
        raise RlvrError(f"model.load_in_4bit cannot run here: {reason}; set model.load_in_4bit=false.")
    print(f"rlvr: warning: 4-bit loading unavailable ({reason}); training plain LoRA instead.", file=sys.stderr)
    return False


def adapters_in_compute_dtype(model: Any) -> int:
    """Cast a 4-bit model's trainable (LoRA) weights to its 4-bit compute dtype; return how many were cast.

    TRL's GRPOTrainer casts them to bfloat16 for every quantized model, the QLoRA paper's GPU setting,
    where the compute dtype is bfloat16 too and this changes nothing. Where it is float32 (on CPU),
    bfloat16 adapters would run the LoRA path in bfloat16 and round Adam's small updates away.
    """
    import torch

    quantization = getattr(getattr(model, "config", None), "quantization_config", None)
    dtype = getattr(quantization, "bnb_4bit_compute_dtype", None)
    if not getattr(model, "is_loaded_in_4bit", False) or not isinstance(dtype, torch.dtype):
        return 0
    cast = [p for p in model.parameters() if p.requires_grad and p.dtype != dtype and p.is_floating_point()]
    for parameter in cast:
        parameter.data = parameter.data.to(dtype)
    return len(cast)


@functools.lru_cache(maxsize=1)
def four_bit_unavailable() -> str | None:
    """Why bitsandbytes cannot quantize to NF4 on this machine's device, or None when it can.

    bitsandbytes 0.50 quantizes on CUDA and on CPU (its CPU backend, computing in float32
    there); an older release, a broken install or an unsupported device fails this small
    quantization, and the reason names what failed.
    """
    import torch

    try:
        import bitsandbytes
        from bitsandbytes.functional import quantize_4bit
    except ImportError:
        return "bitsandbytes is not installed (pip install 'rlvr[qlora]')"
    except Exception as error:  # a broken native library raises anything at import
        return f"bitsandbytes does not load ({_first_line(error)})"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        quantize_4bit(torch.ones(64, 64, device=device), quant_type="nf4")
    except Exception as error:
        version = getattr(bitsandbytes, "__version__", "?")
        return f"bitsandbytes {version} cannot quantize to 4 bits on {device} ({_first_line(error)}); 0.50.2 can on CPU"
    return None


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def lora_config(recipe: Recipe) -> Any:
    from peft import LoraConfig

    m = recipe.model
    return LoraConfig(
        r=m.lora_r,
        lora_alpha=m.lora_alpha,
        lora_dropout=m.lora_dropout,
        target_modules=m.lora_target_modules,
        modules_to_save=m.lora_modules_to_save,
        task_type="CAUSAL_LM",
    )
