"""What is evaluated: configurations (a model, optionally with a LoRA adapter, and its label), loaded for evaluation.

``--model`` and ``--adapter`` pair up into :class:`ModelSpec` values (:func:`model_specs`); an adapter is
checked before any model loads, flagged when it was trained on another base model, and merged into the
weights before generation.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rlvr.errors import RlvrError
from rlvr.evaluation.backends import warn


@dataclass
class ModelSpec:
    """One configuration to evaluate: a base model, optionally with a LoRA adapter, and its label."""

    model: str
    adapter: str | None = None
    label: str = ""
    note: str = ""  # a warning found while loading (adapter trained on another base model)

    def __post_init__(self) -> None:
        if not self.label:
            self.label = default_label(self.model, self.adapter)


def default_label(model: str, adapter: str | None) -> str:
    name = Path(model.rstrip("/")).name or model
    if not adapter:
        return name
    adapter_path = Path(adapter.rstrip("/"))
    # outputs/run/adapter -> "run"; a directory named after the run keeps its own name.
    tag = adapter_path.parent.name if adapter_path.name in ("adapter", "model") and adapter_path.parent.name else adapter_path.name
    return f"{name}+{tag}"


def model_specs(models: list[str], adapters: list[str] | None = None, labels: list[str] | None = None) -> list[ModelSpec]:
    """Pair ``--model`` and ``--adapter`` values into configurations.

    No adapters: one configuration per model. One model and several adapters:
    that model with each adapter. Otherwise the lists pair up in order. The
    adapter ``none`` means the model as it is.
    """
    adapters = list(adapters or [])
    if not models:
        raise RlvrError("give at least one --model (a Hub id, a local directory, a .gguf file or 'smollm2-135m-instruct').")
    if adapters and len(models) == 1:
        models = models * len(adapters)
    if adapters and len(adapters) != len(models):
        raise RlvrError(
            f"{len(models)} --model and {len(adapters)} --adapter values: give one --model for all adapters, "
            "or one --adapter (or 'none') per --model."
        )
    adapters = [None if a is None or a.lower() == "none" else a for a in adapters] or [None] * len(models)
    specs = [ModelSpec(m, a) for m, a in zip(models, adapters, strict=True)]
    labels = list(labels or [])
    if labels and len(labels) != len(specs):
        raise RlvrError(f"{len(labels)} --label values for {len(specs)} configurations: give one per configuration or none.")
    for spec, label in zip(specs, labels or [s.label for s in specs], strict=True):
        spec.label = label
    seen: dict[str, int] = {}
    for spec in specs:
        seen[spec.label] = seen.get(spec.label, 0) + 1
        if seen[spec.label] > 1:
            spec.label = f"{spec.label}#{seen[spec.label]}"
    return specs


def load_for_eval(spec: ModelSpec, dtype: str = "auto", chat_format: str | None = None) -> tuple[Any, Any, str]:
    """(model in eval mode with the adapter merged in, tokenizer, resolved base path). ``chat_format``: the run's
    ``model.chat_format``, put on a model evaluated without the tokenizer its run saved (the base model)."""
    from rlvr.chat_format import adapter_tokenizer_dir, apply_chat_format, fit_model_to_tokenizer
    from rlvr.model_sources import resolve_model
    from rlvr.models import load_model, load_tokenizer, model_precision
    from rlvr.recipe_sections import ModelConfig

    if spec.adapter:
        adapter_config(spec.adapter)  # a bad adapter path fails before the model loads
    path = resolve_model(spec.model)
    tokenizer = load_tokenizer(adapter_tokenizer_dir(spec.adapter) or path)
    config = ModelConfig(name_or_path=spec.model, dtype=dtype, lora=False)
    model = load_model(path, SimpleNamespace(model=config), model_precision(config, evaluating=True))
    if chat_format and not adapter_tokenizer_dir(spec.adapter):  # as training set up the base it started from
        apply_chat_format(model, tokenizer, chat_format)
    if spec.adapter:
        if adapter_tokenizer_dir(spec.adapter):  # trained with this tokenizer: its end token, any tokens it added
            fit_model_to_tokenizer(model, tokenizer)
        model = attach_adapter(model, spec, path)
    model.eval()
    return model, tokenizer, path


def adapter_config(adapter: str) -> dict[str, Any]:
    path = Path(adapter).expanduser()
    if not path.is_dir():
        raise RlvrError(f"adapter directory not found: {adapter}")
    config = path / "adapter_config.json"
    if not config.is_file():
        raise RlvrError(
            f"{adapter} is not a LoRA adapter (no adapter_config.json); a fully fine-tuned model goes in --model."
        )
    try:
        return json.loads(config.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise RlvrError(f"{config} is not valid JSON.") from None


def same_model(trained_on: str, base_path: str, reference: str) -> bool:
    """Whether an adapter's recorded base names the same model as ``reference`` (resolved to ``base_path``)."""
    if not trained_on:
        return True
    candidates = {reference.strip().lower(), str(Path(base_path).expanduser().resolve()).lower()}
    recorded = trained_on.strip()
    if recorded.lower() in candidates or str(Path(recorded).expanduser().resolve()).lower() in candidates:
        return True
    return Path(recorded.rstrip("/")).name.lower() == Path(base_path.rstrip("/")).name.lower()


def attach_adapter(model: Any, spec: ModelSpec, base_path: str) -> Any:
    from peft import PeftModel

    trained_on = adapter_config(spec.adapter).get("base_model_name_or_path") or ""
    if not same_model(trained_on, base_path, spec.model):
        spec.note = f"adapter {spec.adapter} was trained on '{trained_on}', evaluated here on '{spec.model}'."
        warn(spec.note)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peft_model = PeftModel.from_pretrained(model, str(Path(spec.adapter).expanduser()))
    except (RuntimeError, ValueError, KeyError, OSError) as error:
        detail = " ".join(str(error).split())[:200]
        raise RlvrError(
            f"adapter {spec.adapter} does not fit model '{spec.model}' (it was trained on '{trained_on or 'unknown'}'): "
            f"{detail}"
        ) from None
    return peft_model.merge_and_unload()
