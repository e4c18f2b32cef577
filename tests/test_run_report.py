"""`rlvr report` renders a run directory's health files into one HTML page with PNG curves."""

import json

import pytest

from rlvr.cli import main
from rlvr.errors import RlvrError
from rlvr.training.health import HISTOGRAM_EDGES
from rlvr.training.report import write_report


def write_lines(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture
def run_dir(tmp_path):
    metrics = [
        {"step": s, "reward": 0.5 + 0.1 * s, "rewards/format/mean": 0.4, "rewards/correctness/mean": 0.1 * s,
         "health/accuracy": 0.1 * s, "zero_variance/share": 0.5, "advantages/std": 0.9, "kl": 0.01 * s,
         "completions/mean_length": 20, "completions/clipped_ratio": 0.1, "learning_rate": 1e-4,
         "time/generation": 2.0, "time/rewards": 0.1, "time/update": 1.0}
        for s in (1, 2, 3)
    ]
    write_lines(tmp_path / "health" / "metrics.jsonl", metrics)
    counts = [0] * (len(HISTOGRAM_EDGES) - 1)
    counts[16] = 8
    write_lines(tmp_path / "health" / "advantages.jsonl", [{"step": 2, "edges": HISTOGRAM_EDGES, "counts": counts, "count": 8}])
    write_lines(tmp_path / "health" / "warnings.jsonl", [{"step": 3, "code": "truncated", "message": "most completions <cut>"}])
    write_lines(tmp_path / "samples.jsonl", [{"step": 3, "prompt": "Question: 2+2?", "completion": "2+2=4\n#### The final answer is 4",
                                              "extracted_answer": "4", "rewards": {"format": 0.5}, "reward": 0.5, "advantage": 1.2}])
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "summary.json").write_text(json.dumps({"accuracy": 0.42, "ci95": [0.3, 0.5]}))
    return tmp_path


def test_report_shows_curves_warnings_eval_and_samples(run_dir):
    page = write_report(run_dir).read_text()
    for image in ("rewards.png", "accuracy.png", "zero_variance.png", "advantage_histograms.png", "kl.png", "step_time.png"):
        assert image in page and (run_dir / "report" / image).is_file()
    assert "most completions &lt;cut&gt;" in page  # warnings, escaped
    assert "0.42" in page  # the eval table
    assert "#### The final answer is 4" in page


def test_report_of_a_directory_without_metrics_is_a_clear_error(tmp_path):
    with pytest.raises(RlvrError, match="health/metrics.jsonl"):
        write_report(tmp_path)


def test_cli_report_writes_to_the_output_directory(run_dir, tmp_path, capsys):
    assert main(["report", str(run_dir), "--output", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "report.html").is_file()
