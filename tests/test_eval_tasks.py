"""rlvr eval for every task: code judged by its tests in the sandbox, keywords by the rubric, in the same records and summary."""

import json

import pytest

from rlvr.audit.keyword_probes import KEYWORD_PROBES
from rlvr.errors import RlvrError
from rlvr.evaluation.backends import Generation, Sampling
from rlvr.evaluation.evaluate import EvalResult, generate_and_score, load_items, summarize, write_outputs
from rlvr.tasks import get_task

MBPP = [
    {"task_id": 11, "text": "Write a function add(a, b) that adds two numbers.",
     "test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 0"]},
    {"task_id": 12, "text": "Write a function rev(s) that reverses a string.",
     "test_list": ["assert rev('ab') == 'ba'", "assert rev('') == ''", "assert rev('abc') == 'cba'"]},
    {"task_id": 13, "text": "Write a function biggest(xs) that returns the largest number in a list.",
     "test_list": ["assert biggest([1, 3, 2]) == 3", "assert biggest([-1]) == -1", "assert biggest([2, 2]) == 2"]},
]
PROGRAMS = {  # by the first words of the task: right, partly right, does not compile
    "Write a function add": "def add(a, b):\n    return a + b\n",
    "Write a function rev": "def rev(s):\n    return s[::-1] if s else 'x'\n",
    "Write a function biggest": "def biggest(xs)\n    return max(xs)\n",
}


class CannedBackend:
    """Answers each prompt with the completion whose key it contains (a stand-in for a model)."""

    tokenizer = None

    def __init__(self, answers, samples=None):
        self.answers, self.samples = answers, samples or answers

    def generate(self, prompts, sampling, progress=None):
        source = self.answers if sampling.n == 1 and sampling.temperature == 0 else self.samples
        out = []
        for prompt in prompts:
            text = next(t for key, t in source.items() if key in prompt)
            texts = text if isinstance(text, list) else [text] * sampling.n
            out.append([Generation(t, len(t.split()), True) for t in texts[: sampling.n]])
        return out


@pytest.fixture(scope="module")
def mbpp_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("mbpp") / "mbpp.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in MBPP))
    return str(path)


@pytest.fixture(scope="module")
def mbpp_records(mbpp_file):
    task = get_task("mbpp", {"data": mbpp_file, "timeout": 2.0})
    items = task.load("test")
    samples = {**PROGRAMS, "Write a function rev": [PROGRAMS["Write a function rev"], "def rev(s):\n    return s[::-1]\n"]}
    try:
        return generate_and_score(CannedBackend(PROGRAMS, samples), task, items, "m", 0, Sampling(), samples=2,
                                  progress=False)
    finally:
        task.close()


def test_code_records_keep_the_program_each_test_outcome_and_the_sandbox_status(mbpp_records):
    greedy = {r["id"]: r for r in mbpp_records if r["sample"] is None}
    assert greedy["mbpp-11"]["correct"] and greedy["mbpp-11"]["details"]["tests"] == [True, True, True]
    assert greedy["mbpp-11"]["extracted_answer"] == PROGRAMS["Write a function add"]
    assert greedy["mbpp-12"]["details"]["tests"] == [True, False, True] and not greedy["mbpp-12"]["correct"]
    assert greedy["mbpp-13"]["details"]["status"] == "syntax_error"
    assert "assert add(1, 2) == 3" in greedy["mbpp-11"]["ground_truth"]
    assert "reverses a string" in greedy["mbpp-12"]["question"]


def test_code_summary_reports_pass_at_1_and_unbiased_pass_at_k(mbpp_records):
    (result,) = summarize(mbpp_records, task=get_task("mbpp"))["results"]
    assert (result["n"], result["correct"]) == (3, 1)
    assert result["mean_score"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    # samples: add right twice, rev right once in two, biggest never: pass@1 = (1 + 0.5 + 0) / 3, pass@2 = 2 / 3
    assert result["pass_at_k"] == {"1": pytest.approx(0.5), "2": pytest.approx(2 / 3)}
    assert result["breakdown"]["sandbox status"] == {"ok": pytest.approx(2 / 3), "syntax_error": pytest.approx(1 / 3)}


def test_code_models_are_compared_on_the_same_problems(mbpp_records):
    fixed = [dict(r, model="fixed", correct=True, score=1.0) if r["id"] != "mbpp-13" else dict(r, model="fixed")
             for r in mbpp_records if r["sample"] is None]
    base = [r for r in mbpp_records if r["sample"] is None]
    (comparison,) = summarize(base + fixed)["comparisons"]
    assert (comparison["only_first"], comparison["only_second"], comparison["both_correct"]) == (0, 1, 1)
    assert comparison["score_difference"] == pytest.approx(1 / 9)


def test_tasks_without_exemplars_are_evaluated_at_zero_shots_and_refuse_others(mbpp_file):
    assert list(load_items("mbpp", {"data": mbpp_file}, "test", None, 2)) == [0]
    with pytest.raises(RlvrError, match="takes no exemplars"):
        load_items("mbpp", {"data": mbpp_file}, "test", [2], None)


# ------------------------------------------------------------------ keywords

PROBES = {p.name: p.completion for p in KEYWORD_PROBES}


@pytest.fixture(scope="module")
def keyword_records():
    task = get_task("keywords", {"chat": False})  # plain prompts: the canned backend has no chat template
    items = task.load("test").select(range(4))
    good, poor = PROBES["honest_correct"], PROBES["honest_wrong"]
    answers = {"": good}  # every prompt: the full-credit answer
    records = generate_and_score(CannedBackend(answers), task, items, "good", 0, Sampling(), progress=False)
    mixed = [poor, good, poor, good]
    for index, record in enumerate(generate_and_score(CannedBackend({"": poor}), task, items, "mixed", 0, Sampling(),
                                                      progress=False)):
        if mixed[index] is good:
            record = next(r for r in records if r["id"] == record["id"]) | {"model": "mixed"}
        records.append(record)
    return records


def test_keywords_summary_has_the_mean_rubric_score_with_an_interval_and_the_share_at_full_credit(keyword_records):
    good, mixed = summarize(keyword_records, task=get_task("keywords"))["results"]
    assert good["accuracy"] == 1.0 and good["mean_score"] == 1.0
    assert mixed["accuracy"] == 0.5 and 0 < mixed["mean_score"] < 1
    low, high = mixed["mean_score_ci95"]
    assert 0 <= low < mixed["mean_score"] < high <= 1
    assert mixed["format_rate"] is None  # keywords have no notion of answer form


def test_keywords_summary_shows_coverage_per_rubric_group(keyword_records):
    good, mixed = summarize(keyword_records, task=get_task("keywords"))["results"]
    coverage = good["breakdown"]["rubric group coverage"]
    assert coverage and set(coverage.values()) == {1.0}
    assert min(mixed["breakdown"]["rubric group coverage"].values()) == 0.5


def test_keywords_models_are_compared_on_rubric_scores_and_full_credit(keyword_records):
    (comparison,) = summarize(keyword_records)["comparisons"]
    assert (comparison["only_first"], comparison["only_second"]) == (2, 0)
    assert comparison["score_difference"] < 0 and 0 < comparison["score_p_value"] <= 1


def test_keyword_and_code_outputs_are_written_with_figure_and_report(keyword_records, mbpp_records, tmp_path):
    for name, records in (("keywords", keyword_records), ("mbpp", mbpp_records)):
        task = get_task(name)
        summary = summarize(records, task=task)
        summary.update(task=name, accuracy_name=task.accuracy_name, takes_shots=task.takes_shots, split="test")
        paths = write_outputs(EvalResult(records, summary), tmp_path / name)
        page = paths["report"].read_text()
        assert task.accuracy_name in page and "Breakdown" in page and "extracted answer" in page


def test_mbpp_data_may_be_the_directory_holding_mbpp_jsonl(mbpp_file):
    from pathlib import Path

    directory = str(Path(mbpp_file).parent)
    assert get_task("mbpp", {"data": directory}).load("test")["id"] == ["mbpp-11", "mbpp-12", "mbpp-13"]
