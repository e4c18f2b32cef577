"""The checks of a recipe's sections: the ``model`` section with every field's default and meaning, the checks the
``run`` section makes of its values (its fields and their meaning are :class:`rlvr.config.RunConfig`), the ``grpo``
section against the installed TRL's ``GRPOConfig``, and the shape of ``run.sweep_variants``."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from rlvr.config_utils import check_keys, coerce
from rlvr.errors import RlvrError


@dataclass
class ModelConfig:
    #: Hub id, local directory, .gguf file, or the alias 'smollm2-135m-instruct'.
    name_or_path: str = "smollm2-135m-instruct"
    #: Weights dtype: auto (bfloat16 on a CPU with bf16 units or a GPU that has them, else float32; rlvr.precision),
    #: float32, bfloat16, float16.
    dtype: str = "auto"
    #: Train a LoRA adapter (true) or all weights (false).
    lora: bool = True
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    #: Modules LoRA wraps: 'all-linear' or a list of names such as [q_proj, v_proj].
    lora_target_modules: Any = "all-linear"
    #: Modules trained in full beside LoRA (e.g. [lm_head, embed_tokens]); usually none.
    lora_modules_to_save: Any = None
    #: QLoRA: load the base model in 4-bit (bitsandbytes, CUDA only).
    load_in_4bit: bool = False
    #: When 4-bit is asked without CUDA: 'lora' (warn and train plain LoRA) or 'error'.
    quantization_fallback: str = "lora"
    #: Attention implementation passed to transformers (e.g. sdpa, flash_attention_2); None: default.
    attn_implementation: str | None = None
    #: 'chatml': what trl 0.18's setup_chat_format did in the published code (ChatML template, <|im_end|> as the
    #: end and padding token); prompts stay plain text unless task.chat. None: the tokenizer as it comes.
    chat_format: str | None = None
    #: Only with task.tools: the chat template that renders them. auto: the model's own where it renders a tool
    #: call and its reply, else hermes (<tool_call> JSON, rlvr.tool_template); hermes; model (the model's own or stop).
    tool_template: str = "auto"

    def __post_init__(self) -> None:
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise RlvrError(f"model.dtype must be auto, float32, bfloat16 or float16, got {self.dtype!r}.")
        if self.quantization_fallback not in ("lora", "error"):
            raise RlvrError("model.quantization_fallback must be 'lora' or 'error'.")
        if self.chat_format is not None and self.chat_format != "chatml":
            raise RlvrError(f"model.chat_format must be chatml or null, got {self.chat_format!r}.")
        if self.tool_template not in ("auto", "hermes", "model"):
            raise RlvrError(f"model.tool_template must be auto, hermes or model, got {self.tool_template!r}.")
        if self.load_in_4bit and not self.lora:
            raise RlvrError("model.load_in_4bit needs model.lora: true (a 4-bit base model cannot be trained in full).")


def check_run_section(run: Any) -> None:
    """The checks a recipe's ``run`` section (:class:`rlvr.config.RunConfig`) makes of its own values; a whole-number
    string for ``loss_chunk_rows`` becomes the number."""
    if run.eval_split not in ("validation", "test"):
        raise RlvrError(f"run.eval_split must be validation or test (never train), got {run.eval_split!r}.")
    if run.max_prompt_tokens is not None and (not isinstance(run.max_prompt_tokens, int) or run.max_prompt_tokens < 1):
        raise RlvrError(f"run.max_prompt_tokens must be a positive integer or null, got {run.max_prompt_tokens!r}.")
    if not isinstance(run.sweep_shots, list) or not run.sweep_shots or any(
        isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= 8 for s in run.sweep_shots
    ):
        raise RlvrError(f"run.sweep_shots must be a non-empty list of shot counts 0-8, got {run.sweep_shots!r}.")
    if run.keep_best and not (run.eval_items and run.eval_every_steps):
        raise RlvrError("run.keep_best chooses the weights by validation accuracy: set run.eval_items and "
                        "run.eval_every_steps above 0, or run.keep_best=false.")
    if run.keep_best and run.eval_split != "validation":
        raise RlvrError("run.keep_best must choose on validation items (run.eval_split: validation): choosing on "
                        "test items would bias the test verdict.")
    rows = run.loss_chunk_rows
    if isinstance(rows, str) and rows.strip().isdigit():
        rows = run.loss_chunk_rows = int(rows)
    if rows != "auto" and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
        raise RlvrError(f"run.loss_chunk_rows must be an integer >= 0 or auto, got {rows!r}.")
    for name, least in (("test_items", 0), ("eval_items", 0), ("eval_every_steps", 0),
                        ("probe_items", 0), ("eval_max_new_tokens", 1),
                        ("eval_batch_size", 1), ("sweep_items", 1)):
        value = getattr(run, name)
        if not isinstance(value, int) or value < least:
            raise RlvrError(f"run.{name} must be an integer >= {least}, got {value!r}.")
    check_sweep_variants(run.sweep_variants)
    check_prompt_selection(run)
    from rlvr.timeouts import check_limit

    check_limit(run.user_code_timeout, "run.user_code_timeout")
    check_limit(run.task_load_timeout, "run.task_load_timeout")


def check_prompt_selection(run: Any) -> None:
    """``run.prompt_selection`` and its two settings (:mod:`rlvr.training.prompt_selection`)."""
    if run.prompt_selection not in ("uniform", "online"):
        raise RlvrError(f"run.prompt_selection must be uniform or online, got {run.prompt_selection!r}.")
    revisit = run.prompt_selection_revisit
    if isinstance(revisit, bool) or not isinstance(revisit, int | float) or not 0 < revisit <= 1:
        raise RlvrError(f"run.prompt_selection_revisit must be a number in (0, 1] (the least drawing weight of a prompt "
                        f"always right or always wrong; 1: no preference), got {revisit!r}.")
    prior = run.prompt_selection_prior
    if prior is not None and (not isinstance(prior, str) or not prior.strip()):
        raise RlvrError(f"run.prompt_selection_prior must be a file path (a `rlvr filter` JSONL or a probe.json) or "
                        f"null, got {prior!r}.")
    if prior is not None and run.prompt_selection != "online":
        raise RlvrError("run.prompt_selection_prior seeds online selection's estimates: set run.prompt_selection: "
                        "online, or leave the prior out.")


#: Keys of one ``run.sweep_variants`` entry.
VARIANT_KEYS = ["name", "task_options", "items", "max_new_tokens"]


def variant_slug(name: str) -> str:
    """The file-name form of a variant's name: ``3-digit addition`` -> ``3-digit-addition``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def check_sweep_variants(variants: Any) -> None:
    """The shape of ``run.sweep_variants``; the task options themselves are checked by the task
    (:func:`rlvr.experiment.variants.variant_settings`, before training)."""
    where = "run.sweep_variants"
    if not isinstance(variants, list):
        raise RlvrError(f"{where} must be a list of mappings like [{{name: 3-digit addition, task_options: "
                        f"{{...}}, items: 200}}], got {variants!r}.")
    slugs: dict[str, str] = {}
    for index, variant in enumerate(variants):
        if not isinstance(variant, dict):
            raise RlvrError(f"{where}[{index}] must be a mapping with name, task_options and (optional) items and max_new_tokens, "
                            f"got {variant!r}.")
        name = variant.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RlvrError(f"{where}[{index}] needs a name (a non-empty string), got {name!r}.")
        check_keys(variant, VARIANT_KEYS, f"{where} '{name}'")
        slug = variant_slug(name)
        if not slug:
            raise RlvrError(f"{where} '{name}': the name needs a letter or digit (it names the variant's files).")
        if slug in slugs:
            if slugs[slug] == name:
                raise RlvrError(f"{where}: two variants are named '{name}'; give each its own name.")
            raise RlvrError(f"{where}: '{slugs[slug]}' and '{name}' would share the files eval/*-variant-{slug}.jsonl; "
                            "give them names that differ in letters or digits.")
        slugs[slug] = name
        options = variant.get("task_options")
        if not isinstance(options, dict) or not options:
            raise RlvrError(f"{where} '{name}': task_options must be a mapping of the task options it changes, "
                            f"e.g. {{generator_config: {{min_digits: 3, max_digits: 3}}}}, got {options!r}.")
        items = variant.get("items")
        if items is not None and (isinstance(items, bool) or not isinstance(items, int) or items < 1):
            raise RlvrError(f"{where} '{name}': items must be a positive integer (default: the sweep's), got {items!r}.")
        tokens = variant.get("max_new_tokens")
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
            raise RlvrError(f"{where} '{name}': max_new_tokens must be a positive integer (default: the sweep's), "
                            f"got {tokens!r}.")



def check_grpo_types(grpo: dict[str, Any], where: str) -> dict[str, Any]:
    """Type-check scalar GRPOConfig fields: TRL accepts ``learning_rate: abc`` and fails mid-training."""
    import typing

    from trl import GRPOConfig

    try:
        hints = typing.get_type_hints(GRPOConfig)
    except Exception:  # noqa: BLE001 (unresolvable annotations: leave checking to TRL)
        return grpo
    return {key: coerce(value, hints.get(key, Any), f"{where}: grpo '{key}'") for key, value in grpo.items()}


def grpo_fields() -> list[str]:
    from trl import GRPOConfig

    return [f.name for f in dataclasses.fields(GRPOConfig) if f.init and f.name != "output_dir"]
