"""The evaluation figure and HTML report: drawn for any result, including none and all correct."""

import importlib
import json

import pytest

from rlvr.errors import RlvrError
from rlvr.evaluation.backends import Generation
from rlvr.evaluation.evaluate import EvalConfig, EvalResult, model_specs, summarize, write_outputs
from rlvr.evaluation.figure import write_figure
from rlvr.evaluation.record_sink import records_in
from rlvr.evaluation.report import write_report


def record(model, item, correct):
    return {"id": f"item-{item}", "shots": 0, "model": model, "sample": None, "prompt_hash": "0" * 12,
            "completion": "x", "extracted_answer": "1" if correct else "2", "ground_truth": "1",
            "rewards": {"correctness": float(correct)}, "reward": float(correct), "correct": correct,
            "completion_tokens": 1, "stopped": True}


def extremes(sizes):
    """Records of two configurations per size n: none right and all right."""
    return [record(f"{verdict}-of-{n}", i, verdict == "all") for n in sizes for verdict in ("none", "all") for i in range(n)]


def test_figure_and_report_are_drawn_for_none_and_all_correct_at_every_n_up_to_60(tmp_path):
    records = extremes(range(1, 61))
    # One summary per n, joined: a summary of all 120 configurations would also compare every pair (7,140
    # paired tests, four minutes), which this test is not about.
    parts = [summarize(extremes([n])) for n in range(1, 61)]
    summary = {key: [entry for part in parts for entry in part[key]] for key in ("results", "comparisons")}
    assert {r["accuracy"] for r in summary["results"]} == {0.0, 1.0}
    summary.update(task="gsm8k", split="test")
    figure = write_figure(summary, tmp_path / "accuracy.png")
    page = write_report(EvalResult(records, summary), tmp_path / "report.html", figure).read_text()
    assert figure.read_bytes()[:4] == b"\x89PNG"
    assert page.count("<tr>") >= 120


@pytest.mark.parametrize("n", [1, 7, 60])
def test_one_configuration_with_every_item_wrong_draws(tmp_path, n):
    summary = summarize([record("m", i, False) for i in range(n)])
    summary.update(task="gsm8k", split="test")
    assert write_figure(summary, tmp_path / "f.png").is_file()


def test_samples_summary_and_report_survive_a_figure_that_fails(tmp_path, monkeypatch):
    import rlvr.evaluation.figure as figure

    def broken(summary, path):
        raise ValueError("yerr must not contain negative values")

    monkeypatch.setattr(figure, "write_figure", broken)
    records = extremes([3])
    summary = summarize(records)
    with pytest.raises(RlvrError, match="figure could not be drawn.*samples.jsonl"):
        write_outputs(EvalResult(records, summary), tmp_path)
    assert len((tmp_path / "samples.jsonl").read_text().splitlines()) == 6
    assert json.loads((tmp_path / "summary.json").read_text())["results"]
    assert "could not be drawn" in (tmp_path / "report.html").read_text()


class RightBackend:
    """Answers every prompt with the same answer line (a stand-in for a model)."""

    tokenizer = None

    def generate(self, prompts, sampling, progress=None):
        return [[Generation("2 + 2 = 4.\n#### The final answer is 4\n", 9, True)] for _ in prompts]


def test_records_are_on_disk_as_each_configuration_finishes(tmp_path, monkeypatch):
    evaluation = importlib.import_module("rlvr.evaluation.evaluate")  # the module, not the function of that name
    (tmp_path / "test.jsonl").write_text("".join(json.dumps({"question": f"{i} + 4?", "answer": f"#### {i + 4}"}) + "\n"
                                                 for i in range(3)))
    monkeypatch.setattr("rlvr.model_sources.resolve_model", lambda name: name)

    def backend(name, spec, config, task):
        if spec.label == "second":
            raise RuntimeError("out of memory")
        return RightBackend(), spec.model

    monkeypatch.setattr(evaluation, "make_backend", backend)
    config = EvalConfig(models=model_specs(["a", "b"], labels=["first", "second"]), task_options={"data": str(tmp_path)},
                        shots=[0], backend="hf", progress=False)
    with pytest.raises(RuntimeError):
        evaluation.evaluate(config, records_path=tmp_path / "out" / "samples.jsonl")
    kept = records_in(tmp_path / "out" / "samples.jsonl")
    assert [(r["model"], r["correct"]) for r in kept] == [("first", True), ("first", False), ("first", False)]
