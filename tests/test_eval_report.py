"""The evaluation figure and HTML report: drawn for any result, including none and all correct."""

import pytest

from rlvr.evaluation.evaluate import EvalResult, summarize
from rlvr.evaluation.report import write_figure, write_report


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
    summary = summarize(records)
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
