"""A tiny randomly initialised causal LM with a character-level tokenizer, built offline.

Used by the test suite and the GPU check to exercise real training code paths
(TRL, peft, generation) in seconds, without any download.
"""

from __future__ import annotations

import string
from pathlib import Path

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]


def build_tokenizer():  # noqa: ANN201
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(string.printable) - {"\x0b", "\x0c"})
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS + chars)}
    core = Tokenizer(models.WordPiece(vocab=vocab, unk_token="<unk>", max_input_chars_per_word=10**6))
    core.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    tokenizer.chat_template = TINY_CHAT_TEMPLATE
    return tokenizer


#: A short chat template (one letter per role), so chat recipes such as the CPU default run on the tiny model.
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'][0] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}a: {% endif %}"
)


def build_tiny_model(path: str | Path, hidden_size: int = 32, layers: int = 2, seed: int = 0) -> Path:
    """Save a tiny Llama model and its tokenizer to ``path`` and return it."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
