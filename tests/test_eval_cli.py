"""``rlvr eval`` on the command line: outputs written, bad input answered with one line."""

import json

import pytest

from rlvr.cli import main
from rlvr.evaluation.evaluate import recount
from rlvr.testing import build_tiny_model

PROBLEMS = [
    ("Nora packs 5 boxes with 2 toys each. How many toys?", "5 * 2 = 10.", "10"),
    ("A pond has 8 ducks; 3 fly away. How many remain?", "8 - 3 = 5.", "5"),
    ("Leo has 1,200 stamps and gets 300 more. How many stamps?", "1200 + 300 = 1500.", "1,500"),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("gsm8k")
    for split in ("train", "test"):
        with (directory / f"{split}.jsonl").open("w") as handle:
            for question, reasoning, answer in PROBLEMS:
                question = question if split == "test" else question.replace("How many", "Then how many")
                handle.write(json.dumps({"question": question, "answer": f"{reasoning}\n#### {answer}"}) + "\n")
    return str(directory)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(build_tiny_model(tmp_path_factory.mktemp("tiny") / "model"))


def run_eval(*args):
    return main(["eval", "--no-progress", "--max-new-tokens", "4", *args])


def one_error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rlvr: error: ")
    return err[0]


def test_eval_writes_samples_summary_figure_and_report_that_agree(tiny, data, tmp_path):
    out = tmp_path / "out"
    assert run_eval("--model", tiny, "--model", tiny, "--data", data, "--shots", "0,2", "--limit", "2", "--output", str(out)) == 0
    assert sorted(p.name for p in out.iterdir()) == ["accuracy.png", "report.html", "samples.jsonl", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert recount(out / "samples.jsonl")["results"] == summary["results"]
    assert [(r["model"], r["shots"], r["n"]) for r in summary["results"]] == [
        ("model", 0, 2), ("model", 2, 2), ("model#2", 0, 2), ("model#2", 2, 2)
    ]
    assert len(summary["comparisons"]) == 2
    assert summary["split"] == "test" and summary["item_selection"] == "first 2 items of the split"


def test_each_gain_is_printed_beside_the_training_verdicts_constant_baseline(tiny, data, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_eval("--model", tiny, "--model", tiny, "--data", data, "--shots", "0,2", "--output", str(out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    # The train split's answers are 10, 5 and 1,500 once each: the first seen is the constant; it is right on 1 of 3.
    assert summary["constant_answer"]["answer"] == "10" and summary["constant_answer"]["accuracy"] == pytest.approx(1 / 3)
    lines = capsys.readouterr().out.splitlines()
    beside = [i for i, line in enumerate(lines) if line.startswith("    baseline beside the gain: ")]
    assert len(beside) == 2 and all(" vs " in lines[i - 1] for i in beside)
    assert lines[beside[0]].endswith("always answering '10' (the train split's most common answer): 33.3%")
    assert "Baseline beside the gain</b> (as the training verdict): always answering &#x27;10&#x27;" in (
        out / "report.html").read_text()


def test_a_limit_beyond_the_split_is_reported_as_the_whole_split(tiny, data, tmp_path):
    assert run_eval("--model", tiny, "--data", data, "--shots", "0", "--limit", "1000", "--output", str(tmp_path)) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["items"] == len(PROBLEMS) and summary["item_selection"] == "the whole split"


def test_sampling_adds_pass_at_k_to_the_summary(tiny, data, tmp_path):
    assert run_eval("--model", tiny, "--data", data, "--shots", "0", "--samples", "2", "--output", str(tmp_path)) == 0
    (result,) = json.loads((tmp_path / "summary.json").read_text())["results"]
    assert set(result["pass_at_k"]) == {"1", "2"}


def test_train_split_is_refused_with_one_line(tiny, data, tmp_path, capsys):
    assert run_eval("--model", tiny, "--data", data, "--split", "train", "--output", str(tmp_path)) == 2
    assert "--allow-train-split" in one_error_line(capsys)


def test_train_split_when_allowed_is_flagged_in_the_report(tiny, data, tmp_path):
    args = ["--model", tiny, "--data", data, "--shots", "0", "--split", "train", "--allow-train-split", "--output", str(tmp_path)]
    assert run_eval(*args) == 0
    assert json.loads((tmp_path / "summary.json").read_text())["train_split"] is True
    assert "TRAIN split" in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize("shots", ["9", "0,-1", "two"])
def test_shots_outside_zero_to_eight_give_one_line(tiny, data, tmp_path, capsys, shots):
    assert run_eval("--model", tiny, "--data", data, "--shots", shots, "--output", str(tmp_path)) == 2
    assert "--shots" in one_error_line(capsys)


def test_unknown_model_path_gives_one_line(data, tmp_path, capsys):
    assert run_eval("--model", str(tmp_path / "missing"), "--data", data, "--output", str(tmp_path)) == 2
    assert "model path not found" in one_error_line(capsys)


def test_unknown_adapter_path_gives_one_line(tiny, data, tmp_path, capsys):
    assert run_eval("--model", tiny, "--adapter", str(tmp_path / "nope"), "--data", data, "--output", str(tmp_path)) == 2
    assert "adapter directory not found" in one_error_line(capsys)


def test_empty_data_gives_one_line(tiny, tmp_path, capsys):
    (tmp_path / "test.jsonl").write_text("")
    assert run_eval("--model", tiny, "--data", str(tmp_path), "--output", str(tmp_path / "o")) == 2
    assert "empty" in one_error_line(capsys)


def test_vllm_backend_without_vllm_gives_one_line(tiny, data, tmp_path, capsys):
    from rlvr.evaluation.backends import vllm_available

    if vllm_available():
        pytest.skip("vLLM and a GPU are present")
    assert run_eval("--model", tiny, "--data", data, "--backend", "vllm", "--output", str(tmp_path)) == 2
    assert "vllm" in one_error_line(capsys)


MBPP = [{"task_id": 11, "text": "Write a function add(a, b).", "test_list": ["assert add(1, 2) == 3"]},
        {"task_id": 12, "text": "Write a function neg(a).", "test_list": ["assert neg(1) == -1"]}]


@pytest.mark.parametrize("task", ["mbpp", "keywords"])
def test_code_and_keyword_tasks_write_samples_summary_figure_and_report(tiny, tmp_path, task):
    if task == "mbpp":
        (tmp_path / "mbpp.jsonl").write_text("".join(json.dumps(row) + "\n" for row in MBPP))
        options = ["--data", str(tmp_path)]
    else:
        options = ["--option", "chat=false"]  # the tiny test model has no chat template
    out = tmp_path / "out"
    assert run_eval("--model", tiny, "--task", task, *options, "--limit", "2", "--samples", "2", "--output", str(out)) == 0
    assert sorted(p.name for p in out.iterdir()) == ["accuracy.png", "report.html", "samples.jsonl", "summary.json"]
    (result,) = json.loads((out / "summary.json").read_text())["results"]
    assert result["n"] == 2 and set(result["pass_at_k"]) == {"1", "2"}
    record = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
    assert record["question"] and record["ground_truth"] and "details" in record


def test_shots_for_a_task_without_exemplars_give_one_line(tiny, tmp_path, capsys):
    assert run_eval("--model", tiny, "--task", "pyfunc", "--shots", "2", "--output", str(tmp_path)) == 2
    assert "takes no exemplars" in one_error_line(capsys)


def test_more_keyword_example_notes_than_there_are_give_one_line(tiny, tmp_path, capsys):
    assert run_eval("--model", tiny, "--task", "keywords", "--shots", "0,3", "--output", str(tmp_path)) == 2
    assert "holds 2 example notes" in one_error_line(capsys)


def test_a_missing_adapter_without_a_model_is_named_in_one_line(tmp_path, capsys):
    assert run_eval("--adapter", str(tmp_path / "gone"), "--output", str(tmp_path / "out")) == 2
    assert one_error_line(capsys) == f"rlvr: error: adapter directory not found: {tmp_path / 'gone'}"
