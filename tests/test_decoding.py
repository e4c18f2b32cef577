"""Compacting decoding: rows leave the batch when they stop, and the tokens are those generate() picks."""

from __future__ import annotations

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from rlvr.evaluation.backends import HFBackend, Sampling
from rlvr.evaluation.decoding import decode, sampling_warpers, supports_compaction, warpers_for

PROMPTS = ["Question: 1\n", "Question: a longer one\n", "Q", "Question: seven plus five is what\n", "xyz"]
STOPS = ["[e-k]"]  # a random model writes these letters at different steps in different rows


@pytest.fixture(scope="module")
def model_and_tokenizer(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    return model, AutoTokenizer.from_pretrained(tiny_model_dir)


def texts(model, tokenizer, compact, sampling, stops=STOPS, batch_size=8):
    backend = HFBackend(model, tokenizer, stops, batch_size=batch_size, compact=compact)
    return [[(g.text, g.tokens, g.stopped) for g in row] for row in backend.generate(PROMPTS, sampling)]


def decode_recording_shapes(model, tokenizer, prompts, max_new_tokens, finished=lambda ids: False):
    """decode() on ``prompts``, with the input shape of every forward pass: (outputs, shapes, batch)."""
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    shapes = []
    hook = model.register_forward_pre_hook(lambda _m, _a, kwargs: shapes.append(tuple(kwargs["input_ids"].shape)),
                                           with_kwargs=True)
    try:
        outputs = decode(model, batch["input_ids"], batch["attention_mask"], max_new_tokens, finished, set(), None)
    finally:
        hook.remove()
    return outputs, shapes, batch


def test_greedy_compacting_decoding_gives_the_completions_of_generate(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    sampling = Sampling(max_new_tokens=12)
    assert texts(model, tokenizer, True, sampling) == texts(model, tokenizer, False, sampling)


def test_without_stops_every_row_runs_to_the_limit_as_with_generate(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    sampling = Sampling(max_new_tokens=6)
    compact = texts(model, tokenizer, True, sampling, stops=[])
    assert compact == texts(model, tokenizer, False, sampling, stops=[])
    assert all(row[0][1] == 6 for row in compact)


def test_stopped_rows_leave_the_batch(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    stop_after = {0: 1, 1: 3}  # rows 0 and 1 stop after 1 and 3 tokens; the others run to the limit of 6
    rows: dict[int, int] = {}

    def finished(ids):  # each row's list is checked in row order at the first step: number them then
        row = rows.setdefault(id(ids), len(rows))
        return len(ids) >= stop_after.get(row, 99)

    outputs, shapes, _ = decode_recording_shapes(model, tokenizer, PROMPTS, 6, finished)
    sizes = [shape[0] for shape in shapes]
    assert [len(o) for o in outputs] == [1, 3, 6, 6, 6]
    assert sizes == [5, 4, 4, 3, 3, 3]


def test_seeded_sampling_with_compaction_repeats(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    sampling = Sampling(n=2, temperature=1.0, max_new_tokens=8, seed=3)
    first = texts(model, tokenizer, True, sampling)
    assert first == texts(model, tokenizer, True, sampling)
    assert [len(row) for row in first] == [2] * len(PROMPTS)


def test_a_generation_config_with_a_repetition_penalty_falls_back_to_generate(model_and_tokenizer):
    model, _ = model_and_tokenizer
    assert supports_compaction(model)
    model.generation_config.repetition_penalty = 1.3
    try:
        assert not supports_compaction(model)
    finally:
        model.generation_config.repetition_penalty = 1.0


def test_eos_ends_a_row_and_is_kept(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = tokenizer(PROMPTS[:2], return_tensors="pt", padding=True, add_special_tokens=False)
    greedy = decode(model, batch["input_ids"], batch["attention_mask"], 4, lambda ids: False, set(), None)
    eos = greedy[0][1]  # pretend the second token of row 0 is the end of sequence
    outputs = decode(model, batch["input_ids"], batch["attention_mask"], 4, lambda ids: False, {eos}, None)
    assert outputs[0] == greedy[0][:2]


SHARED = "Question: an exemplar every prompt starts with, as k-shot prompts do?\nSolution: 2 + 2 = 4.\n\n"


def test_a_shared_prompt_prefix_is_run_once_and_gives_the_completions_of_generate(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    prompts = [SHARED + p for p in PROMPTS]
    sampling = Sampling(max_new_tokens=12)
    shared = [[(g.text, g.tokens) for g in row] for row in HFBackend(model, tokenizer, STOPS, 8).generate(prompts, sampling)]
    plain = HFBackend(model, tokenizer, STOPS, 8, compact=False).generate(prompts, sampling)
    assert shared == [[(g.text, g.tokens) for g in row] for row in plain]


def test_the_shared_prefix_pass_has_one_row_and_the_next_pass_only_the_rest(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    _, shapes, _ = decode_recording_shapes(model, tokenizer, [SHARED + p for p in PROMPTS], 2)
    longest = max(len(tokenizer(p, add_special_tokens=False)["input_ids"]) for p in PROMPTS)
    assert shapes[0] == (1, len(tokenizer(SHARED, add_special_tokens=False)["input_ids"]))
    assert shapes[1] == (len(PROMPTS), longest)


def test_prompts_sharing_fewer_tokens_than_the_threshold_are_prefilled_whole(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    _, shapes, batch = decode_recording_shapes(model, tokenizer, PROMPTS, 1)
    assert shapes == [tuple(batch["input_ids"].shape)]


def test_rows_with_the_same_prompt_are_prefilled_once_and_decode_as_generate(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    prompts = [PROMPTS[1], PROMPTS[0], PROMPTS[1], PROMPTS[1], PROMPTS[0]]  # two groups, as GRPO rollouts repeat them
    outputs, shapes, batch = decode_recording_shapes(model, tokenizer, prompts, 6)
    assert shapes[0] == (2, batch["input_ids"].shape[1])
    generated = model.generate(**batch, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    assert outputs == generated[:, batch["input_ids"].shape[1]:].tolist()


def test_sampling_with_top_k_1_picks_the_greedy_tokens(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = tokenizer(PROMPTS, return_tensors="pt", padding=True, add_special_tokens=False)
    greedy = decode(model, batch["input_ids"], batch["attention_mask"], 5, lambda ids: False, set(), None)
    warpers = sampling_warpers(temperature=0.7, top_k=1)
    assert decode(model, batch["input_ids"], batch["attention_mask"], 5, lambda ids: False, set(), warpers) == greedy


def test_sampling_applies_the_generation_configs_warpers_in_generates_order():
    from transformers import GenerationConfig

    config = GenerationConfig(do_sample=True, temperature=0.8, top_k=0, top_p=0.9, min_p=0.05)
    assert [type(w).__name__ for w in warpers_for(config)] == [
        "TemperatureLogitsWarper", "TopPLogitsWarper", "MinPLogitsWarper"]
    assert warpers_for(GenerationConfig(do_sample=False)) is None


def split_batch(tokenizer, count):
    prompts = [f"Question: {i} plus {i * 7 % 13} is\n" for i in range(count // 2)] * 2  # every prompt twice
    return tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)


def test_rows_split_over_two_threads_get_the_greedy_tokens_of_one_thread(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    batch = split_batch(tokenizer, 20)
    args = (model, batch["input_ids"], batch["attention_mask"], 8, lambda ids: False, set())
    assert decode(*args, workers=2) == decode(*args, workers=1)


def test_sampled_rows_split_over_threads_are_reproducible_under_one_seed(model_and_tokenizer):
    import torch

    model, tokenizer = model_and_tokenizer
    batch = split_batch(tokenizer, 20)
    args = (model, batch["input_ids"], batch["attention_mask"], 8, lambda ids: False, set(), sampling_warpers(1.0))
    runs = []
    for _ in range(2):
        torch.manual_seed(3)
        runs.append(decode(*args, workers=2))
    assert runs[0] == runs[1]


def test_rows_with_the_same_prompt_stay_in_one_thread(model_and_tokenizer):
    from rlvr.evaluation.decoding import _row_parts

    _, tokenizer = model_and_tokenizer
    batch = split_batch(tokenizer, 20)
    parts = _row_parts(batch["input_ids"], batch["attention_mask"], 2)
    assert len(parts) == 2 and sorted(parts[0] + parts[1]) == list(range(20))
    for row in range(10):  # row and row + 10 hold the same prompt
        assert (row in parts[0]) == (row + 10 in parts[0])


def test_batches_group_prompts_that_start_alike():
    from rlvr.evaluation.backends import batch_order

    prompts = [[1, 9, 5], [1, 2, 7, 7], [1, 9, 4, 4], [1, 2, 6]]
    assert batch_order(prompts) == [3, 1, 2, 0]  # the two "1, 2" prompts first, then the two "1, 9" ones


def test_prompts_that_share_exemplars_are_prefilled_once_per_batch(model_and_tokenizer):
    """Batched in prompt order, rows with the same exemplar share it in their batch; the results keep input order."""
    model, tokenizer = model_and_tokenizer
    exemplars = ["Question: one plus one\nAnswer: two\n\n" * 3, "Question: two plus one\nAnswer: tre\n\n" * 3]
    prompts = [exemplars[i % 2] + f"Question: item {i}\n" for i in range(6)]
    prefills = []
    hook = model.register_forward_pre_hook(lambda _m, _a, kwargs: prefills.append(kwargs["input_ids"].shape),
                                           with_kwargs=True)
    sampling = Sampling(max_new_tokens=3)
    try:
        together = HFBackend(model, tokenizer, STOPS, batch_size=3).generate(prompts, sampling)
    finally:
        hook.remove()
    shared_prefix_passes = [shape for shape in prefills if shape[0] == 1 and shape[1] > 20]
    assert len(shared_prefix_passes) == 2  # one per exemplar, not one per row
    alone = [HFBackend(model, tokenizer, STOPS, batch_size=1).generate([p], sampling)[0] for p in prompts]
    assert [row[0].text for row in together] == [row[0].text for row in alone]
