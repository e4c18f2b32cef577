"""benchmarks/keyword_notes.py: the keyword tables' note counts, read from a run's judged test notes."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "keyword_notes.py"


def _script():
    spec = importlib.util.spec_from_file_location("keyword_notes", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _note(
    step, *, correct=False, counted=(2, 1), words=40, density=0.1, named=False, others=(), stopped=True
):
    groups = {f"g{i}": {"counted": c} for i, c in enumerate(counted)}
    per_item = {"condition": "migraine", "condition_named": named, "other_conditions": list(others)}
    details = {
        "groups": groups,
        "words": words,
        "indicators": {"keyword_density": density},
        "per_item": per_item,
    }
    return {"step": step, "correct": correct, "stopped": stopped, "details": details}


def _run(tmp_path, rows):
    (tmp_path / "test_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_counts_come_from_the_first_and_last_step(tmp_path):
    rows = [_note(0, stopped=False), _note(0), _note(30, correct=True, named=True), _note(30, correct=True)]
    before, after = (_script().indicators(r) for r in _script()._notes(_run(tmp_path, rows)))
    assert (before["full credit"], after["full credit"]) == (0, 2)
    assert (before["ended before the limit"], after["ended before the limit"]) == (1, 2)


def test_mentions_are_the_judges_counted_mentions_and_keyword_words_density_times_words(tmp_path):
    rows = [_note(0, counted=(3, 1), words=50, density=0.2), _note(0, counted=(1, 1), words=30, density=0.1)]
    out = _script().indicators(rows)
    assert out["mentions per note"] == pytest.approx(3.0)
    assert out["keyword words per note"] == pytest.approx((10 + 3) / 2)
    assert out["words per note"] == pytest.approx(40.0)


def test_a_note_naming_its_condition_and_another_counts_as_naming_two(tmp_path):
    rows = [_note(0, named=True, others=["asthma-exacerbation"]), _note(0, others=["cellulitis"]), _note(0)]
    out = _script().indicators(rows, condition="cellulitis")
    assert out["another condition named"] == 2
    assert out["2+ conditions named"] == 1
    assert out["names cellulitis"] == 1


def test_a_run_without_after_training_notes_is_refused_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match="one step only"):
        _script().main([str(_run(tmp_path, [_note(0)]))])
    with pytest.raises(SystemExit, match="not found"):
        _script().main([str(tmp_path / "missing")])


def test_main_prints_before_and_after_for_each_run(tmp_path, capsys):
    run = _run(tmp_path, [_note(0), _note(30, correct=True)])
    assert _script().main([str(run)]) == 0
    assert "full credit                0 -> 1" in capsys.readouterr().out
