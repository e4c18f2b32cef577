"""Stopping at the answer line: per-row stopping and cutting with EOS."""

from rlvr.evaluation.stopping import AnswerStop
from rlvr.tasks.prompts import STOP_PATTERNS
from rlvr.testing import build_tokenizer


def stop():
    return AnswerStop(build_tokenizer(), STOP_PATTERNS)


def test_completion_is_cut_after_the_answer_line_and_ends_with_eos():
    s = stop()
    ids = s.tokenizer("2 + 2 = 4.\n#### The final answer is 4\nQuestion: next one")["input_ids"]
    cut, stopped = s.cut(ids)
    assert stopped and cut[-1] == s.eos_token_id
    assert s.tokenizer.decode(cut, skip_special_tokens=True) == "2 + 2 = 4.\n#### The final answer is 4\n"


def test_a_new_question_without_an_answer_also_stops():
    s = stop()
    ids = s.tokenizer("I am not sure.\nQuestion: what")["input_ids"]
    cut, stopped = s.cut(ids)
    assert stopped and s.tokenizer.decode(cut, skip_special_tokens=True) == "I am not sure.\nQuestion:"


def test_an_unfinished_answer_line_is_left_alone():
    s = stop()
    ids = s.tokenizer("2 + 2 = 4.\n#### The final answer is 4")["input_ids"]
    assert s.cut(ids) == (ids, False)


def test_text_after_eos_is_dropped():
    s = stop()
    ids = s.tokenizer("abc")["input_ids"] + [s.eos_token_id] + s.tokenizer("#### 1\n")["input_ids"]
    cut, stopped = s.cut(ids)
    assert not stopped and cut[-1] == s.eos_token_id and len(cut) == 4


def test_generate_stops_each_row_early(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    s = AnswerStop(tokenizer, [r"\S"])  # any visible character ends a row
    inputs = tokenizer(["ab", "cd"], return_tensors="pt")
    with s.installed(model), torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=40, do_sample=True, pad_token_id=tokenizer.pad_token_id)
    assert out.shape[1] - inputs["input_ids"].shape[1] < 40
    assert "generate" not in vars(model)
