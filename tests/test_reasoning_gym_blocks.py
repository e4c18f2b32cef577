"""reasoning-gym datasets whose answers span lines (rotate_matrix) become tasks: the answer in a fenced block after
the answer line, judged by the dataset's own score_answer, with the audit and `rlvr probe`'s gold check."""

import pytest

from rlvr.audit.probe_sets import answer_line_probes
from rlvr.audit.runner import audit
from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.answer_line import BLOCK_STOP_PATTERNS, gold_as_answer_line
from rlvr.tasks.prompts import STOP_PATTERNS
from rlvr.training.probe import check_gold

SMALL = {"train_size": 30, "validation_size": 10, "test_size": 10, "shots": 1}
ROTATE = {"dataset": "rotate_matrix", "config": {"min_n": 2, "max_n": 3, "min_rotations": 1, "max_rotations": 3}, **SMALL}
CHAIN = {"dataset": "chain_sum", "config": {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1}, **SMALL}


@pytest.fixture(scope="module")
def rotate():
    return get_task("reasoning-gym", ROTATE)


def test_a_dataset_whose_answers_span_lines_takes_them_in_a_block(rotate):
    assert rotate.block_answers and rotate.stop_patterns == BLOCK_STOP_PATTERNS


def test_rotate_matrix_prompt_asks_for_the_block_and_shows_the_exemplars_answer_in_it(rotate):
    prompt = rotate.load("test")[0]["prompt"]
    exemplar = rotate._splits()["exemplars"][0]["answer"]
    assert "\n" in exemplar
    assert prompt.startswith("Answer the question. End with a line '#### The final answer is:', then a line '```', X, "
                             "and a line '```', where X is")
    assert f"Solution: Let's think step by step.\n#### The final answer is:\n```\n{exemplar}\n```\n\nQuestion: " in prompt


def test_rotate_matrix_chat_exemplar_gives_its_answer_in_the_block():
    messages = get_task("reasoning-gym", {**ROTATE, "chat": True}).load("test")[0]["prompt"]
    assert messages[1]["content"].startswith("Let's think step by step.\n#### The final answer is:\n```\n")
    assert messages[1]["content"].endswith("\n```")


def test_rotate_matrix_gold_in_its_block_scores_one_by_score_answer(rotate):
    rows = [dict(r) for r in rotate.load("test")]
    fenced = rotate.judge([gold_as_answer_line(r["final_answer"], block=True) for r in rows], rows)
    assert all(o.correct and o.score == 1.0 and o.well_formed for o in fenced)
    assert fenced[0].answer == rows[0]["final_answer"]
    inline = rotate.judge([gold_as_answer_line(r["final_answer"]) for r in rows], rows)  # no block: no answer
    assert not any(o.correct or o.well_formed for o in inline)
    form, correctness = rotate.reward_functions()
    completions = [gold_as_answer_line(rows[0]["final_answer"], block=True), gold_as_answer_line(rows[0]["final_answer"])]
    columns = {k: [rows[0][k]] * 2 for k in rows[0]}
    assert form(completions) == [1.0, 0.0] and correctness(completions, **columns) == [1.0, 0.0]


def test_score_answer_gets_the_blocks_lines_without_trailing_spaces(rotate, monkeypatch):
    seen = []

    class Spy:
        def score_answer(self, answer, entry):
            seen.append(answer)
            return 1.0

    monkeypatch.setitem(rotate.__dict__, "_scoring_dataset", Spy())
    rotate.judge(["Rotating.\n#### The final answer is:\n```\n1 2  \n3 4\t\n```\n"], [dict(rotate.load("test")[0])])
    assert seen == ["1 2\n3 4"]


def test_the_reference_completion_gives_the_most_common_gold_in_its_block(rotate):
    (completion,) = rotate.reference_completions().values()
    assert completion.startswith("Let's think step by step.\n#### The final answer is:\n```\n") and completion.endswith("\n```\n")


def test_a_single_line_dataset_keeps_the_answer_line():
    task = get_task("reasoning-gym", CHAIN)
    assert task.block_answers is False and task.stop_patterns is STOP_PATTERNS
    row = task.load("test")[0]
    exemplar = task._splits()["exemplars"][0]
    assert row["prompt"] == (
        "Answer the question. End with a line '#### The final answer is X', where X is the answer alone, in the form "
        f"the question asks for.\n\nQuestion: {exemplar['question']}\nSolution: Let's think step by step.\n"
        f"#### The final answer is {exemplar['answer']}\n\nQuestion: {row['question']}\nSolution: Let's think step by step.")


def test_answer_block_option_forces_the_form_either_way():
    assert get_task("reasoning-gym", {**CHAIN, "answer_block": True}).block_answers
    inline = get_task("reasoning-gym", {**ROTATE, "answer_block": False})
    assert inline.stop_patterns is STOP_PATTERNS
    with pytest.raises(RlvrError, match=r"judges only 0 of 8 gold answers correct when written as '#### The final answer is <gold>'"):
        check_gold(inline, [dict(r) for r in inline.load("train")][:8])
    with pytest.raises(RlvrError, match="answer_block"):
        get_task("reasoning-gym", {**CHAIN, "answer_block": "maybe"})


def test_probes_gold_check_accepts_rotate_matrix(rotate):
    rows = [dict(r) for r in rotate.load("train")][:16]
    assert check_gold(rotate, rows) == 16


def test_audit_passes_the_honest_block_answer_and_fails_the_block_hacks(rotate):
    result = audit(answer_line_probes(rotate), rotate.reward_functions(), rotate.reward_weights())
    assert result.passed
    by_name = {r.probe.name: r for r in result.results}
    assert by_name["honest_correct"].components == {"format": 0.5, "correctness": 1.0}
    assert by_name["honest_wrong"].components == {"format": 0.5, "correctness": 0.0}
    for name in ("answer_without_block", "unclosed_block", "format_only", "answer_in_prose_only"):
        assert by_name[name].reward == 0.0, name  # no answer at all: neither form nor correctness
    for name in ("several_blocks", "block_before_answer_line", "several_answer_lines", "answer_in_followup_question"):
        assert by_name[name].components["correctness"] == 0.0, name  # the first block counts, and it is wrong
