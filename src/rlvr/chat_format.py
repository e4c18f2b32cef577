"""The chat format a recipe puts on a base model (``model.chat_format``), and fitting a model to its tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError

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
