"""The pieces under a decoding step: the sampler, the KV cache with reserved room, and grouped bf16 attention."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.cache_utils import DynamicLayer

from rlvr.evaluation.attention import grouped_attention, half_precision_attention
from rlvr.evaluation.decoding import decode, sample
from rlvr.evaluation.kv_cache import ReservedLayer


def test_the_sampler_draws_each_token_as_often_as_its_probability():
    probabilities = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0])
    scores = probabilities.log().expand(20000, -1).contiguous()
    drawn = sample(scores, torch.Generator().manual_seed(0))
    shares = torch.bincount(drawn, minlength=5).float() / len(drawn)
    assert torch.allclose(shares, probabilities, atol=0.015)
    assert shares[4] == 0  # a token top-k or top-p masked out (probability 0) is never drawn


def test_the_sampler_repeats_under_one_seed_and_differs_under_another():
    scores = torch.randn(64, 100)
    first = sample(scores, torch.Generator().manual_seed(1))
    assert torch.equal(first, sample(scores, torch.Generator().manual_seed(1)))
    assert not torch.equal(first, sample(scores, torch.Generator().manual_seed(2)))


def test_a_near_certain_token_is_drawn_even_at_the_end_of_the_vocabulary():
    scores = torch.full((50, 1000), -1e4)
    scores[:, -1] = 0.0
    assert (sample(scores) == 999).all()


@pytest.mark.parametrize("transposed", [False, True])
def test_the_reserved_cache_holds_what_appending_would(transposed):
    torch.manual_seed(0)
    keys, values = torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 4)
    plain = DynamicLayer()
    plain.update(keys, values)
    reserved = ReservedLayer(keys, values, room=2, transposed_keys=transposed)
    for step in range(4):  # past the reserved room: it grows
        new_keys, new_values = torch.randn(3, 2, 1, 4), torch.randn(3, 2, 1, 4)
        expected = plain.update(new_keys, new_values)
        got = reserved.update(new_keys, new_values)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
        assert reserved.get_seq_length() == plain.get_seq_length() == 6 + step
    rows = torch.tensor([2, 0])
    plain.batch_select_indices(rows)
    reserved.batch_select_indices(rows)
    assert torch.equal(reserved.keys, plain.keys) and torch.equal(reserved.values, plain.values)


def _attention_inputs(rows, queries, keys, dtype=torch.bfloat16):
    torch.manual_seed(0)
    query = torch.randn(rows, 4, queries, 8).to(dtype)
    key, value = torch.randn(rows, 2, keys, 8).to(dtype), torch.randn(rows, 2, keys, 8).to(dtype)
    mask = torch.ones(rows, 1, queries, keys, dtype=torch.bool).tril(keys - queries)
    if keys - queries >= 2:
        mask[0, :, :, :2] = False  # a left-padded row
    return query, key, value, mask


class _Module:
    num_key_value_groups = 2
    is_causal = True
    training = False


@pytest.mark.parametrize("queries,keys", [(1, 9), (5, 12), (7, 7)])
def test_grouped_attention_computes_what_sdpa_computes(queries, keys):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    query, key, value, mask = _attention_inputs(3, queries, keys)
    ours = grouped_attention(_Module(), query, key, value, mask, scaling=0.3)[0]
    wide = [t.float() for t in (query, key, value)]
    exact = sdpa_attention_forward(_Module(), *wide, mask, scaling=0.3)[0]
    assert ours.shape == exact.shape and ours.dtype == torch.bfloat16
    assert (ours.float() - exact).abs().max() < 0.05  # bf16 rounding of scores and output


def test_grouped_attention_with_no_mask_is_causal_over_a_square_and_full_for_one_query():
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    for queries, keys in ((6, 6), (1, 6)):
        query, key, value, _ = _attention_inputs(2, queries, keys)
        ours = grouped_attention(_Module(), query, key, value, None)[0]
        exact = sdpa_attention_forward(_Module(), *[t.float() for t in (query, key, value)], None)[0]
        assert (ours.float() - exact).abs().max() < 0.05


def test_a_query_that_may_attend_nowhere_gets_numbers_not_nan():
    query, key, value, mask = _attention_inputs(2, 3, 3)
    mask[1] = False
    assert torch.isfinite(grouped_attention(_Module(), query, key, value, mask)[0]).all()


def test_float32_attention_is_left_to_sdpa(monkeypatch):
    from transformers.integrations import sdpa_attention

    called = []
    monkeypatch.setattr(sdpa_attention, "sdpa_attention_forward", lambda *a, **k: called.append(1) or (None, None))
    grouped_attention(_Module(), *_attention_inputs(1, 1, 4, torch.float32))
    assert called


@pytest.fixture(scope="module")
def bf16_model(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.bfloat16).eval()
    return model, AutoTokenizer.from_pretrained(tiny_model_dir)


def test_a_bf16_model_decodes_with_grouped_attention_and_goes_back_to_sdpa(bf16_model):
    model, tokenizer = bf16_model
    batch = tokenizer(["Question: 1\n", "Q"], return_tensors="pt", padding=True, add_special_tokens=False)
    seen = []
    hook = model.register_forward_pre_hook(lambda m, a: seen.append(m.config._attn_implementation))
    try:
        outputs = decode(model, batch["input_ids"], batch["attention_mask"], 5, lambda ids: False, set(), None)
    finally:
        hook.remove()
    assert set(seen) == {"rlvr_grouped_sdpa"} and model.config._attn_implementation == "sdpa"
    assert [len(o) for o in outputs] == [5, 5]


def test_greedy_bf16_decoding_matches_generate_on_most_tokens(bf16_model):
    model, tokenizer = bf16_model
    prompts = ["Question: 1\n", "Question: a longer one\n", "xyz"]
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    ours = decode(model, batch["input_ids"], batch["attention_mask"], 8, lambda ids: False, set(), None)
    theirs = model.generate(**batch, max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0)
    theirs = theirs[:, batch["input_ids"].shape[1]:].tolist()
    same = sum(a == b for row, other in zip(ours, theirs) for a, b in zip(row, other))
    assert same >= 0.8 * sum(len(row) for row in ours)  # bf16 rounds the scores: a near tie may go the other way


def test_the_attention_switch_leaves_float32_models_alone(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    with half_precision_attention(model) as switched:
        assert not switched and model.config._attn_implementation == "sdpa"
