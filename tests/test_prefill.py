"""Prefix-tree prefill: every run of tokens that several prompts share is computed once, and the cache it leaves
is the one a single batched pass over the left-padded batch would leave."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from rlvr.evaluation.decoding import cache_argument, decode
from rlvr.evaluation.prefill import prefill

HEADER = "System: you answer arithmetic questions, one line each, and nothing else.\n"
EXEMPLARS = {"a": "Question: one plus one?\nAnswer: two.\n" * 2, "b": "Question: two plus two?\nAnswer: four.\n" * 2}
# Two levels of sharing, as a pool of exemplars gives: the header everywhere, then a first exemplar, then a second.
PROMPTS = [HEADER + EXEMPLARS[x] + EXEMPLARS[y] + f"Question: item {i}?\n"
           for i, (x, y) in enumerate(["ab", "ab", "aa", "ba", "ab", "bb", "aa", "ba"])]


@pytest.fixture(scope="module")
def model_and_tokenizer(tiny_model_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.padding_side = "left"
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval(), tokenizer


def batch_of(tokenizer, prompts):
    return tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)


def recorded_passes(model, run):
    """(result of run(), (input shape, prompt tokens in it) of every forward pass it made)."""
    passes = []

    def record(_module, _args, kwargs):
        ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
        passes.append((tuple(ids.shape), int(mask[:, -ids.shape[1]:].sum())))

    hook = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        return run(), passes
    finally:
        hook.remove()


@torch.no_grad()
def test_the_cache_and_logits_are_those_of_one_batched_pass(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = batch_of(tokenizer, PROMPTS)
    cache = DynamicCache()
    logits, mask = prefill(model, batch["input_ids"], batch["attention_mask"], cache, cache_argument(model), 8)
    positions = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    whole = model(**batch, position_ids=positions, use_cache=True)
    assert torch.equal(mask, batch["attention_mask"])
    assert torch.allclose(logits, whole.logits[:, -1].float(), atol=1e-4)
    real = batch["attention_mask"].bool()  # padded slots differ (zeros here) and are masked out
    for ours, theirs in zip(cache.layers, whole.past_key_values.layers, strict=True):
        assert torch.allclose(ours.keys.transpose(1, 2)[real], theirs.keys.transpose(1, 2)[real], atol=1e-4)
        assert torch.allclose(ours.values.transpose(1, 2)[real], theirs.values.transpose(1, 2)[real], atol=1e-4)


def test_each_shared_run_of_tokens_is_computed_once(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = batch_of(tokenizer, PROMPTS)
    _, passes = recorded_passes(model, lambda: prefill(model, batch["input_ids"], batch["attention_mask"],
                                                       DynamicCache(), cache_argument(model), 1))
    prompts = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    distinct_prefixes = {tuple(p[:end]) for p in prompts for end in range(1, len(p) + 1)}
    assert sum(tokens for _, tokens in passes) == len(distinct_prefixes) < sum(map(len, prompts)) / 3
    assert max(rows for (rows, _), _ in passes) > 1  # the rows' own questions run batched


def tree_and_generate(model, tokenizer, prompts, max_new_tokens):
    """(tokens decode() picks with the prefix tree, tokens generate() picks) for ``prompts``, greedy."""
    batch = batch_of(tokenizer, prompts)
    ours = decode(model, batch["input_ids"], batch["attention_mask"], max_new_tokens, lambda ids: False, set(), None,
                  min_shared=8)
    generated = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                               pad_token_id=tokenizer.pad_token_id)
    return ours, generated[:, batch["input_ids"].shape[1]:].tolist()


def test_greedy_decoding_from_the_tree_gives_the_tokens_of_generate(model_and_tokenizer):
    ours, generated = tree_and_generate(*model_and_tokenizer, PROMPTS, 6)
    assert ours == generated


def test_a_prompt_that_begins_another_is_decoded_as_generate_decodes_it(model_and_tokenizer):
    prompts = [PROMPTS[0], PROMPTS[0] + "Answer:", PROMPTS[0] + "Answer: it is"]
    ours, generated = tree_and_generate(*model_and_tokenizer, prompts, 4)
    assert ours == generated


def test_prompts_sharing_too_little_are_prefilled_in_one_batched_pass(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = batch_of(tokenizer, ["Question: 1\n", "Question: two\n", "xyz"])
    _, passes = recorded_passes(model, lambda: prefill(model, batch["input_ids"], batch["attention_mask"],
                                                       DynamicCache(), cache_argument(model), 32))
    assert [shape for shape, _ in passes] == [tuple(batch["input_ids"].shape)]


def test_a_model_whose_cache_is_not_plain_key_values_gets_one_batched_pass(model_and_tokenizer, monkeypatch):
    from transformers.cache_utils import DynamicLayer

    class SlidingLayer(DynamicLayer):  # stands for a sliding-window or recurrent layer
        pass

    plain_init = DynamicCache.__init__

    def init_with_other_layers(self, *args, **kwargs):
        plain_init(self, *args, **kwargs)
        self.layer_class_to_replicate = SlidingLayer

    model, tokenizer = model_and_tokenizer
    monkeypatch.setattr(DynamicCache, "__init__", init_with_other_layers)
    batch = batch_of(tokenizer, PROMPTS)
    (logits, _), passes = recorded_passes(model, lambda: prefill(model, batch["input_ids"], batch["attention_mask"],
                                                                 DynamicCache(), cache_argument(model), 8))
    assert passes[-1][0] == tuple(batch["input_ids"].shape)
    positions = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    whole = model(**batch, position_ids=positions).logits[:, -1].float()
    assert torch.allclose(logits, whole.detach(), atol=1e-4)
