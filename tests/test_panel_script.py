"""benchmarks/panel.py without a model: its recipes, and its probe -> train -> table loop run against a fake rlvr."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "panel.py"

# A stand-in for `python -m rlvr`: writes what rlvr probe / rlvr train would, as the plan (by recipe stem) says.
FAKE_RLVR = r'''
import json, sys
from pathlib import Path
plan = json.loads(Path(sys.argv[1]).read_text())
args = sys.argv[2:]
name = Path(args[1]).stem
with open(Path(sys.argv[1]).with_name("calls.txt"), "a") as calls:
    calls.write(f"{args[0]} {name}{' --resume' if '--resume' in args else ''}\n")
step = plan[name]
if args[0] == "filter":
    out = Path(args[args.index("--output") + 1])
    kept = step.get("kept", 0)
    out.write_text("".join(json.dumps({"id": f"{name}-train-{i}", "pass_rate": 0.5 if i < kept else 0.0,
                                       "kept": i < kept}) + "\n" for i in range(20)))
elif args[0] == "probe":
    out = Path(args[args.index("--output") + 1])
    figures = {"greedy_accuracy": 0.2, "pass_at_1": 0.15, "pass_at_g": 0.5, "format_rate": 0.9, "zero_variance": 0.4}
    verdict = {"name": step["verdict"], "figure": "", "suggestion": ""}
    out.write_text(json.dumps({"verdict": verdict, "figures": figures}))
elif step.get("train") == "fail":
    print("rlvr: out of memory while training")
    sys.exit(1)
else:
    out = Path(args[args.index("--output-dir") + 1])
    gain = step["gain"]
    test = {"items": 200, "before": {"accuracy": 0.2, "ci95": [0.15, 0.26], "format_rate": 0.9},
            "after": {"accuracy": 0.2 + gain, "ci95": [0.1, 0.5], "format_rate": 1.0}, "gain": gain,
            "gain_ci95": [gain - 0.05, gain + 0.05], "now_right": 10, "now_wrong": 2, "mcnemar_p": step["p"],
            "constant_answer": {"answer": "3", "accuracy": 0.25}}
    (out / "summary.json").write_text(json.dumps({"test": test}))
'''


@pytest.fixture(scope="module")
def panel():
    spec = importlib.util.spec_from_file_location("panel_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["panel_script"] = module
    spec.loader.exec_module(module)
    return module


def test_the_panel_is_broad_enough(panel):
    assert len(panel.PANEL) >= 12 and len({e.name for e in panel.PANEL}) == len(panel.PANEL)
    assert len({panel.category(e.dataset) for e in panel.PANEL}) >= 5
    assert sum(e.control for e in panel.PANEL) >= 2


def test_a_recipe_is_cpu_default_plus_the_task_and_its_reasons(panel):
    entry = next(e for e in panel.PANEL if e.overrides)
    text = panel.recipe_text(entry)
    recipe = yaml.safe_load(text)
    assert set(recipe) <= {"base", "name", "description", "task", "grpo", "run"} and recipe["base"] == "cpu-default"
    assert recipe["task"]["name"] == "reasoning-gym" and recipe["task"]["config"] == entry.config
    override = entry.overrides[0]
    assert recipe[override.section][override.key] == override.value and f"# {override.why}" in text
    assert panel.same_recipe(text.replace(override.why, "reworded"), entry)  # comments are not the recipe


def test_clock_seconds(panel):
    assert panel.clock_seconds("12:05.33") == 725.3 and panel.clock_seconds("1:02:03") == 3723.0


def test_probe_train_table_loop_is_resumable(panel, tmp_path, monkeypatch, capsys):
    plan = {
        "lcm": {"verdict": "learnable", "gain": 0.2, "p": 1e-5},            # agrees, counts
        "aiw": {"verdict": "learnable", "gain": 0.01, "p": 0.6},            # disagrees
        "spell_backward": {"verdict": "too long"},                          # not trained
        "leg_counting": {"verdict": "too hard", "gain": 0.0, "p": 1.0},     # control, agrees
        "tsumego": {"verdict": "too hard", "gain": 0.0, "p": 1.0},          # control, agrees
        "needle_haystack": {"verdict": "too hard"},                         # a third: not trained (--controls 2)
        "family_relationships": {"verdict": "learnable", "train": "fail"},  # a failed run: a row, not compared
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "fake.py").write_text(FAKE_RLVR)
    monkeypatch.setattr(panel, "rlvr", lambda *args: [sys.executable, str(tmp_path / "fake.py"),
                                                      str(tmp_path / "plan.json"), *args])
    argv = ["--root", str(tmp_path / "runs"), "--only", ",".join(plan)]
    calls = tmp_path / "calls.txt"

    assert panel.main(argv) == 0
    first = calls.read_text().splitlines()
    assert sorted(c for c in first if c.startswith("train")) == [
        "train aiw", "train family_relationships", "train lcm", "train leg_counting", "train tsumego"]
    out = capsys.readouterr().out
    assert "3/4 (75%)" in out and "gain > 0" in out and ": 1 (lcm)" in out and "Failed runs: 1" in out
    assert "FAILED (seed 42, learnable): exit 1: rlvr: out of memory while training" in out
    assert "yes (seed 42, control (too hard))" in out

    assert panel.main(argv) == 0  # done and failed runs are not rerun
    assert calls.read_text().splitlines() == first
    assert panel.main([*argv, "--retry-failed"]) == 0
    assert calls.read_text().splitlines()[len(first):] == ["train family_relationships"]
    assert panel.main([*argv, "--only", "lcm", "--seeds", "42,1"]) == 0
    assert calls.read_text().splitlines()[-1] == "train lcm"
    assert "yes (seed 1, learnable)" in capsys.readouterr().out

    killed = tmp_path / "runs" / "aiw" / "seed-42"  # a run killed midway: its record says running, a checkpoint
    record = json.loads((killed / "run.json").read_text())
    (killed / "run.json").write_text(json.dumps({**record, "status": "running"}))
    (killed / "summary.json").unlink()
    (killed / "checkpoint-10").mkdir()
    assert panel.main(argv) == 0
    assert calls.read_text().splitlines()[-1] == "train aiw --resume"


def test_follow_trains_the_suggested_change_as_its_own_recipe(panel, tmp_path, monkeypatch, capsys):
    plan = {
        "aiw": {"verdict": "constant-prone", "gain": 0.0, "p": 1.0},
        "aiw-followed": {"gain": 0.5, "p": 1e-9},
        "path_star": {"verdict": "too hard", "kept": 12},
        "path_star-followed": {"gain": 0.0, "p": 1.0},
        "spell_backward": {"verdict": "too hard", "kept": 2},  # too few prompts kept: not followed
        "lcm": {"verdict": "learnable", "gain": 0.2, "p": 1e-5},  # nothing to follow
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "fake.py").write_text(FAKE_RLVR)
    monkeypatch.setattr(panel, "rlvr", lambda *args: [sys.executable, str(tmp_path / "fake.py"),
                                                      str(tmp_path / "plan.json"), *args])
    root = tmp_path / "runs"
    argv = ["--root", str(root), "--only", "aiw,path_star,spell_backward,lcm", "--controls", "0", "--follow"]

    assert panel.main(argv) == 0
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert [c for c in calls if not c.startswith("probe")] == [
        "train lcm", "train aiw-followed", "filter path_star", "train path_star-followed", "filter spell_backward"]
    followed = yaml.safe_load((root / "recipes" / "aiw-followed.yaml").read_text())
    assert followed["grpo"]["learning_rate"] == pytest.approx(2.5e-4)  # half of cpu-default's 5e-4
    assert "suggests halving grpo.learning_rate" in (root / "recipes" / "aiw-followed.yaml").read_text()
    filtered = yaml.safe_load((root / "recipes" / "path_star-followed.yaml").read_text())
    assert filtered["run"]["difficulty_filter"] == str(root / "path_star" / "difficulty.jsonl")
    out = capsys.readouterr().out
    assert "rlvr filter kept 2 prompts (< 8); not following" in out
    assert "a significant gain on 1 of 2 (aiw: yes, path_star: no)" in out
    assert ": 2 (aiw-followed, lcm)" in out  # a followed run counts towards the gains
    assert "1/1 (100%)" in out  # ... not towards the probe's agreement (aiw's own run was not trained)


def test_the_tally_sets_agreement_against_always_predicting_no_gain(panel):
    tally = panel.Tally()
    entry = panel.PANEL[0]
    for learnable, gained in [(True, True), (True, False), (False, False), (False, False), (False, True)]:
        tally.add(entry, None, agrees=learnable == gained, counts=False, learnable=learnable)

    lines = "\n".join(tally.lines())
    assert "agreed with the outcome on 3/5 (60%)" in lines
    assert "learnable 2, of which 1 gained; any other verdict 3, of which 1 gained" in lines
    assert "Gains at the recipes as probed: 2 of 5, so always predicting no gain would agree on 3/5 (60%)" in lines


def test_the_held_out_datasets_are_not_in_the_panel(panel):
    assert len(panel.HOLDOUT) >= 5
    assert not {e.dataset for e in panel.HOLDOUT} & {e.dataset for e in panel.PANEL}


def test_holdout_probes_and_trains_every_held_out_dataset_whatever_its_verdict(panel, tmp_path, monkeypatch, capsys):
    verdicts = ["learnable", "too hard", "constant-prone", "too hard", "learnable"]
    plan = {e.name: {"verdict": v, "gain": 0.0, "p": 1.0} for e, v in zip(panel.HOLDOUT, verdicts)}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "fake.py").write_text(FAKE_RLVR)
    monkeypatch.setattr(panel, "rlvr", lambda *args: [sys.executable, str(tmp_path / "fake.py"),
                                                      str(tmp_path / "plan.json"), *args])
    assert panel.main(["--holdout", "--root", str(tmp_path / "runs")]) == 0
    trained = [c for c in (tmp_path / "calls.txt").read_text().splitlines() if c.startswith("train")]
    assert sorted(trained) == sorted(f"train {e.name}" for e in panel.HOLDOUT)
    assert "yes (seed 42, held out (too hard))" in capsys.readouterr().out


def test_holdout_names_only_its_own_datasets(panel):
    with pytest.raises(SystemExit, match="held-out set"):
        panel.select(["lcm"], holdout=True)


def test_a_significant_gain_only_up_to_the_constant_answer_is_not_a_gain_the_probe_missed(panel):
    test = {"gain": 0.11, "mcnemar_p": 0.007, "items": 200, "after": {"accuracy": 0.21},
            "constant_answer": {"answer": "4", "accuracy": 0.21}}
    assert panel.outcome(test)["significant"] and not panel.outcome(test)["learned"]
    assert panel.agreement("constant-prone", {"test": test}) is True
    assert panel.agreement("learnable", {"test": {**test, "after": {"accuracy": 0.3}}}) is True


def test_the_held_out_sets_share_no_dataset_with_each_other_or_the_panel(panel):
    sets = [{e.dataset for e in panel.PANEL}] + [{e.dataset for e in entries} for entries in panel.HOLDOUTS.values()]
    assert len(panel.HOLDOUTS) >= 3 and all(len(datasets) >= 5 for datasets in sets)
    assert all(not a & b for i, a in enumerate(sets) for b in sets[i + 1:])


def test_the_second_holdout_trains_each_of_its_datasets_on_the_threads_asked(panel, tmp_path, monkeypatch):
    plan = {e.name: {"verdict": "too hard", "gain": 0.0, "p": 1.0} for e in panel.HOLDOUT_2}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "fake.py").write_text(FAKE_RLVR)
    monkeypatch.setattr(panel, "rlvr", lambda *args: [sys.executable, str(tmp_path / "fake.py"),
                                                      str(tmp_path / "plan.json"), *args])
    root = tmp_path / "runs"
    assert panel.main(["--holdout", "2", "--threads", "1", "--root", str(root)]) == 0
    trained = [c for c in (tmp_path / "calls.txt").read_text().splitlines() if c.startswith("train")]
    assert sorted(trained) == sorted(f"train {e.name}" for e in panel.HOLDOUT_2)
    record = json.loads((panel.seed_dir(root, panel.HOLDOUT_2[0], 42) / "run.json").read_text())
    assert "--set run.threads=1" in record["command"]
    with pytest.raises(SystemExit, match="held-out set"):
        panel.select(["count_bits"], holdout="2")
