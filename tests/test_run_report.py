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


def eval_record(step, item, correct, answer):
    return {"step": step, "id": f"q{item}", "sample": None, "question": f"What is {item} + {item}?",
            "extracted_answer": answer, "ground_truth": str(2 * item), "correct": correct}


def test_report_shows_the_before_after_evaluations_the_run_wrote(run_dir):
    summary = {
        "recipe": "r",
        "test": {"items": 3, "shots": 1, "decoding": "greedy", "gain": 1 / 3, "gain_ci95": [-0.2, 0.7],
                 "now_right": 1, "now_wrong": 0, "mcnemar_p": 1.0,
                 "before": {"step": 0, "n": 3, "correct": 1, "accuracy": 1 / 3, "ci95": [0.06, 0.79], "format_rate": 0.5},
                 "after": {"step": 3, "n": 3, "correct": 2, "accuracy": 2 / 3, "ci95": [0.21, 0.94], "format_rate": 1.0}},
        "evaluations": [{"step": 0, "split": "validation", "n": 2, "correct": 0, "accuracy": 0.0, "ci95": [0.0, 0.66]},
                        {"step": 3, "split": "validation", "n": 2, "correct": 2, "accuracy": 1.0, "ci95": [0.34, 1.0]}],
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    write_lines(run_dir / "test_samples.jsonl", [eval_record(0, 7, False, "15"), eval_record(3, 7, True, "14")])
    write_lines(run_dir / "eval_samples.jsonl", [eval_record(s, i, s == 3, str(2 * i)) for s in (0, 3) for i in (1, 2)])
    page = write_report(run_dir).read_text()
    assert "33.3% [6%–79%] (1/3)" in page and "66.7% [21%–94%] (2/3)" in page  # test before and after
    assert "gain +33.3%" in page and "McNemar exact p = 1" in page
    assert "What is 7 + 7?" in page and "<pre>15</pre>" in page and "<pre>14</pre>" in page  # the item now right
    assert "Held-out validation items during training" in page and "2 now right, 0 now wrong" in page


def test_report_of_a_run_without_held_out_evaluation_says_so(run_dir):
    assert "evaluated no held-out items" in write_report(run_dir).read_text()


def test_report_recounts_the_evaluations_of_a_run_that_stopped_before_its_summary(run_dir):
    write_lines(run_dir / "eval_samples.jsonl", [eval_record(s, i, s == 3 or i == 1, str(i)) for s in (0, 3) for i in (1, 2)])
    page = write_report(run_dir).read_text()
    assert "50.0% [9%–91%] (1/2)" in page and "100.0% [34%–100%] (2/2)" in page and "1 now right, 0 now wrong" in page


def test_report_of_a_partial_credit_run_shows_the_score_test_and_the_writing_indicators(run_dir):
    indicators = "writing indicators (mean per completion)"
    before = {"step": 0, "n": 3, "correct": 0, "accuracy": 0.0, "ci95": [0.0, 0.56], "mean_score": 0.35,
              "breakdown": {indicators: {"keyword_density": 0.041, "negated_share": 0.02}}}
    after = {"step": 30, "n": 3, "correct": 1, "accuracy": 1 / 3, "ci95": [0.06, 0.79], "mean_score": 0.61,
             "breakdown": {indicators: {"keyword_density": 0.052, "negated_share": 0.01}}}
    summary = {"recipe": "r", "test": {"items": 3, "shots": None, "gain": 1 / 3, "gain_ci95": [-0.2, 0.7], "now_right": 1,
                                       "now_wrong": 0, "mcnemar_p": 1.0, "score_gain": 0.26, "score_wilcoxon_p": 0.0012,
                                       "before": before, "after": after}}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    page = write_report(run_dir).read_text()
    assert "mean score +0.260, paired Wilcoxon p = 0.0012" in page
    assert "0.350" in page and "0.610" in page and "keyword density" in page and "4.1%" in page and "5.2%" in page


def test_report_shows_the_fixed_completion_baseline_of_a_task_without_one_gold_answer(run_dir):
    evaluation = {"n": 3, "correct": 0, "accuracy": 0.0, "ci95": [0.0, 0.56]}
    constant = {"kind": "constant completion", "accuracy": 1.0, "mean_score": 1.0, "graded": True, "judged": 2,
                "best": "the task's reference (a <note>)", "n": 3}
    summary = {"recipe": "r", "test": {"items": 3, "shots": None, "gain": 0.0, "gain_ci95": [-0.2, 0.2], "now_right": 0,
                                       "now_wrong": 0, "mcnemar_p": 1.0, "constant_answer": constant,
                                       "before": {"step": 0, **evaluation}, "after": {"step": 4, **evaluation}}}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    page = write_report(run_dir).read_text()
    assert ("one fixed completion for every item (best of 2: the task&#x27;s reference (a &lt;note&gt;)): "
            "100.0% full credit, score 1.00") in page
