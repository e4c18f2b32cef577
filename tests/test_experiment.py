"""``rlvr experiment``: train, then base vs trained at several shot counts on the same test items; resumable."""

import json

import pytest

from rlvr.cli import main
from rlvr.config import load_recipe
from rlvr.errors import RlvrError
from rlvr.evaluation.evaluate import recount
from rlvr.experiment.run import ExperimentConfig, run_experiment

SHOTS, ITEMS = [0, 1, 2], 4


def tiny_recipe(model_dir, *extra):
    return load_recipe(None, [
        f"model.name_or_path={model_dir}", "task.train_size=16", "grpo.max_steps=1",
        "grpo.per_device_train_batch_size=8", "grpo.num_generations=4", "grpo.max_completion_length=6",
        "grpo.save_strategy=no", "grpo.report_to=[]", "run.sample_steps=1", "run.keep_best=false",
        "run.sweep_variants=[]", *extra,  # the default recipe's own variants are not these tests' business
    ])


def experiment(model_dir, out, *extra, **options):
    config = ExperimentConfig(tiny_recipe(model_dir, *extra), out, shots=SHOTS, items=ITEMS, progress=False, **options)
    return run_experiment(config, say=lambda *_: None)


@pytest.fixture(scope="module")
def finished(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("experiment")
    return experiment(tiny_model_dir, out)


def test_the_directory_holds_training_samples_summary_figures_and_one_report(finished):
    out = finished.output_dir
    assert (out / "train" / "adapter" / "adapter_config.json").is_file()
    assert (out / "train" / "summary.json").is_file()
    for name in ("samples.jsonl", "summary.json", "report.html", "figures/shot_sweep.png"):
        assert (out / name).is_file(), name
    assert finished.ran == ["train", "eval-base", "eval-trained"]


def test_base_and_trained_are_evaluated_on_the_same_items_at_every_shot_count(finished):
    records = [json.loads(line) for line in (finished.output_dir / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 2 * len(SHOTS) * ITEMS
    for shots in SHOTS:
        ids = {model: {r["id"] for r in records if r["model"] == model and r["shots"] == shots} for model in ("base", "trained")}
        assert ids["base"] == ids["trained"] and len(ids["base"]) == ITEMS
    assert all("published_correct" in r and "correct" in r for r in records)


def test_the_sweep_pairs_base_and_trained_with_intervals_tests_and_published_scores(finished):
    sweep = finished.summary["sweep"]
    assert [row["shots"] for row in sweep] == SHOTS
    for row in sweep:
        for label in ("base", "trained"):
            result = row[label]
            assert result["n"] == ITEMS and result["ci95"][0] <= result["accuracy"] <= result["ci95"][1]
            assert "published_accuracy" in result and "published_ci95" in result
        assert 0 <= row["paired"]["p_value"] <= 1 and "p_value" in row["paired_published"]


def test_summary_numbers_recount_from_the_samples(finished):
    summary = json.loads((finished.output_dir / "summary.json").read_text())
    recounted = recount(finished.output_dir / "samples.jsonl")
    strict = [{k: r[k] for k in ("model", "shots", "n", "correct", "accuracy")} for r in recounted["results"]]
    assert strict == [{k: r[k] for k in ("model", "shots", "n", "correct", "accuracy")} for r in summary["evaluation"]["results"]]


def test_summary_reports_the_most_common_answer_and_the_training_overlap(finished):
    summary = finished.summary
    assert summary["most_common_answer"]["n"] == ITEMS
    assert summary["train_overlap"]["checked"] and summary["train_overlap"]["items"] == ITEMS
    assert summary["training"]["steps"] == 1


def test_the_report_is_one_self_contained_page_with_every_section(finished):
    page = (finished.output_dir / "report.html").read_text()
    for section in ("Shot sweep: base vs trained", "Strict vs published scoring", "McNemar", "Training",
                    "Samples", "last integer"):
        assert section in page, section
    assert "data:image/png;base64," in page and "src='figures" not in page
    assert page.count("<img") >= 2  # the sweep and at least one training curve


def test_a_finished_experiment_is_not_rerun(finished, tiny_model_dir, monkeypatch):
    import importlib

    import rlvr.training.run as training

    evaluation = importlib.import_module("rlvr.evaluation.evaluate")
    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("training ran again"))
    monkeypatch.setattr(evaluation, "evaluate", lambda *a, **k: pytest.fail("evaluation ran again"))
    again = experiment(tiny_model_dir, finished.output_dir)
    assert again.ran == [] and again.skipped == ["train", "eval-base", "eval-trained"]
    assert again.summary["sweep"] == finished.summary["sweep"]


def test_other_evaluation_settings_rerun_the_evaluation_only(finished, tiny_model_dir, tmp_path, monkeypatch):
    import shutil

    import rlvr.training.run as training

    out = tmp_path / "copy"
    shutil.copytree(finished.output_dir, out)
    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("training ran again"))
    config = ExperimentConfig(tiny_recipe(tiny_model_dir), out, shots=[0], items=2, progress=False)
    result = run_experiment(config, say=lambda *_: None)
    assert result.ran == ["eval-base", "eval-trained"]
    assert [row["shots"] for row in result.summary["sweep"]] == [0] and result.summary["sweep"][0]["base"]["n"] == 2


def test_other_training_settings_in_a_used_directory_are_refused(finished, tiny_model_dir, tmp_path):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(finished.output_dir, out)
    with pytest.raises(RlvrError, match="holds a training run with other settings"):
        experiment(tiny_model_dir, out, "grpo.learning_rate=0.5")


def test_the_command_line_runs_and_prints_the_sweep(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "cli"
    args = ["experiment", "--output", str(out), "--shots", "0,1", "--items", "2", "--no-progress",
            "--set", f"model.name_or_path={tiny_model_dir}", "--set", "task.train_size=16", "--set", "grpo.max_steps=1",
            "--set", "grpo.per_device_train_batch_size=8", "--set", "grpo.num_generations=4",
            "--set", "grpo.max_completion_length=6", "--set", "grpo.save_strategy=no", "--set", "grpo.report_to=[]"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "McNemar p" in printed and "Report:" in printed and (out / "report.html").is_file()


def test_bad_shot_counts_are_one_clear_error(tiny_model_dir, tmp_path, capsys):
    assert main(["experiment", "--output", str(tmp_path), "--shots", "0,12"]) == 2
    assert "--shots values must lie in 0..8" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the GPU recipes' plans, built on CPU


def plan_for(recipe_name, tmp_path, *args):
    import io
    from contextlib import redirect_stdout

    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert main(["experiment", recipe_name, "--output", str(tmp_path / "exp"), "--dry-run", *args]) == 0
    return json.loads(buffer.getvalue())


def test_the_published_recipe_plans_the_published_shot_sweep_on_test_items(tmp_path):
    plan = plan_for("gsm8k-qwen2.5-0.5b-qlora", tmp_path)
    assert [s["name"] for s in plan["stages"]] == ["train", "eval-base", "eval-trained", "report"]
    assert not any(s["done"] for s in plan["stages"])
    sweep = plan["sweep"]
    assert (sweep["shots"], sweep["items"], sweep["split"], sweep["decoding"]) == ([0, 2, 4, 8], 500, "test", "strict")
    assert sweep["task_options"]["exemplar_order"] == "fixed" and sweep["task_options"]["prompt_format"] == "published"
    trained = plan["stages"][2]
    assert trained["model"] == "Qwen/Qwen2.5-0.5B" and trained["adapter"] == str(tmp_path / "exp" / "train" / "adapter")
    training = plan["training"]
    assert training["model"]["load_in_4bit"] and training["run"]["output_dir"] == str(tmp_path / "exp" / "train")
    assert training["run"]["eval_items"] == 0 and training["run"]["merge_adapter"]


def test_the_published_recipe_loads_4bit_sharded_under_zero3(tmp_path):
    import torch

    from rlvr.models import model_kwargs

    recipe = load_recipe("gsm8k-qwen2.5-0.5b-qlora")
    kwargs = model_kwargs(recipe.model, four_bit=True, zero3=True)
    assert kwargs["quantization_config"].bnb_4bit_quant_storage == kwargs["dtype"] != torch.uint8


def test_the_as_run_recipe_evaluates_within_its_training_length_or_as_the_notebook(tmp_path):
    strict = plan_for("gsm8k-qwen2.5-0.5b-published-as-run", tmp_path)["sweep"]
    published = plan_for("gsm8k-qwen2.5-0.5b-published-as-run", tmp_path, "--decoding", "published")["sweep"]
    assert strict["max_new_tokens"] == 256 and published["max_new_tokens"] == 1024
    training = plan_for("gsm8k-qwen2.5-0.5b-published-as-run", tmp_path)["training"]
    assert training["run"]["max_prompt_tokens"] == 512 and training["run"]["stop_at_answer"] is False
    assert training["model"]["chat_format"] == "chatml"


def test_a_finished_experiment_plans_nothing_but_the_report(finished, tiny_model_dir):
    from rlvr.experiment.run import experiment_plan

    config = ExperimentConfig(tiny_recipe(tiny_model_dir), finished.output_dir, shots=SHOTS, items=ITEMS)
    assert [s["done"] for s in experiment_plan(config)["stages"]] == [True, True, True, False]


def test_training_keeps_its_validation_evaluations_when_they_choose_the_weights(tmp_path):
    from rlvr.experiment.run import training_recipe

    recipe = load_recipe(None, ["run.keep_best=true", "run.eval_items=50", "run.eval_every_steps=5", "run.test_items=200"])
    run = training_recipe(ExperimentConfig(recipe=recipe, output_dir=str(tmp_path / "exp"))).run
    assert (run.keep_best, run.eval_items, run.eval_every_steps, run.test_items) == (True, 50, 5, 0)


# ----------------------------------------------------------------------------- held-out variants (run.sweep_variants)

THREE_DIGITS = {"generator_config": {"min_terms": 2, "max_terms": 2, "min_digits": 3, "max_digits": 3, "operators": ["+"],
                                     "allow_negation": False, "allow_parentheses": False}}
VARIANT = {"name": "3-digit addition", "task_options": THREE_DIGITS, "items": 3}
VARIANT_STAGES = ["eval-base-variant-3-digit-addition", "eval-trained-variant-3-digit-addition"]


def variants(*entries):
    return "run.sweep_variants=" + json.dumps(list(entries))  # JSON is YAML


@pytest.fixture(scope="module")
def with_variant(finished, tiny_model_dir):
    """The finished experiment, rerun in its directory with a held-out variant added (a copy elsewhere would
    rerun the trained sweep: its key holds the adapter's path). What the directory held before is kept."""
    from types import SimpleNamespace

    out = finished.output_dir
    before = {name: (out / name).read_text() for name in ("samples.jsonl", "report.html")}
    lines = []
    config = ExperimentConfig(tiny_recipe(tiny_model_dir, variants(VARIANT)), out, shots=SHOTS, items=ITEMS,
                              progress=False)
    result = run_experiment(config, say=lines.append)
    return SimpleNamespace(result=result, lines=lines, before=before, report=(out / "report.html").read_text(),
                           samples=(out / "samples.jsonl").read_text())


def variant_records(out, label):
    return [json.loads(line) for line in (out / "eval" / f"{label}-variant-3-digit-addition.jsonl").read_text().splitlines()]


def test_adding_a_variant_to_a_finished_experiment_runs_only_the_variant_stages(with_variant):
    assert with_variant.result.skipped == ["train", "eval-base", "eval-trained"]
    assert with_variant.result.ran == VARIANT_STAGES
    assert [line.split("]")[0] for line in with_variant.lines if line.startswith("[")] == [f"[{n}/5" for n in range(1, 6)]


def test_a_variant_is_evaluated_for_base_and_trained_with_the_merged_task_options(with_variant):
    import re

    out = with_variant.result.output_dir
    base, trained = variant_records(out, "base"), variant_records(out, "trained")
    assert [r["id"] for r in base] == [r["id"] for r in trained] and len(base) == VARIANT["items"]
    for record in base + trained:
        assert record["variant"] == "3-digit addition" and record["shots"] == 1  # the recipe's own shot count
        assert max(len(n) for n in re.findall(r"\d+", record["question"])) == 3  # trained on 1-2 digits only
    described = with_variant.result.summary["variants"][0]
    assert described["evaluated_task_options"]["generator_config"] == THREE_DIGITS["generator_config"]
    assert described["evaluated_task_options"]["seed"] == 42 and described["task_options"] == THREE_DIGITS


def test_a_variant_paired_test_in_the_summary_recounts_from_its_records(with_variant, tmp_path):
    out = with_variant.result.output_dir
    variant = with_variant.result.summary["variants"][0]
    assert (variant["name"], variant["shots"], variant["items"]) == ("3-digit addition", 1, 3)
    assert variant["base"]["n"] == variant["trained"]["n"] == variant["paired"]["n"] == 3
    assert variant["most_common_answer"]["n"] == 3
    both = tmp_path / "variant.jsonl"
    both.write_text("".join(json.dumps(r) + "\n" for r in variant_records(out, "base") + variant_records(out, "trained")))
    recounted = recount(both)
    assert [r["accuracy"] for r in recounted["results"]] == [variant["base"]["accuracy"], variant["trained"]["accuracy"]]
    comparison = recounted["comparisons"][0]
    assert {k: comparison[k] for k in variant["paired"]} == variant["paired"]


def test_variants_leave_the_sweep_and_samples_unchanged(finished, with_variant):
    assert with_variant.samples == with_variant.before["samples.jsonl"] and '"variant"' not in with_variant.samples
    assert with_variant.result.summary["sweep"] == finished.summary["sweep"]
    assert with_variant.result.summary["most_common_answer"] == finished.summary["most_common_answer"]
    assert finished.summary["variants"] == []


def test_the_report_has_a_variant_section_only_with_variants(with_variant):
    assert "Held-out variants (never trained on): base vs trained" in with_variant.report
    assert "3-digit addition" in with_variant.report
    assert "Held-out variants" not in with_variant.before["report.html"]


def test_a_rerun_skips_finished_variant_stages(with_variant, tiny_model_dir, monkeypatch):
    import importlib

    import rlvr.training.run as training

    evaluation = importlib.import_module("rlvr.evaluation.evaluate")
    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("training ran again"))
    monkeypatch.setattr(evaluation, "evaluate", lambda *a, **k: pytest.fail("evaluation ran again"))
    first = with_variant.result
    config = ExperimentConfig(tiny_recipe(tiny_model_dir, variants(VARIANT)), first.output_dir, shots=SHOTS, items=ITEMS,
                              progress=False)
    again = run_experiment(config, say=lambda *_: None)
    assert again.ran == [] and again.skipped == ["train", "eval-base", "eval-trained", *VARIANT_STAGES]
    assert again.summary["variants"] == first.summary["variants"]


def test_the_dry_run_lists_the_variant_stages_and_which_are_done(with_variant, tiny_model_dir, tmp_path):
    from rlvr.experiment.run import experiment_plan

    recipe = tiny_recipe(tiny_model_dir, variants(VARIANT, {"name": "1-digit", "task_options": {"shots": 0}}))
    plan = experiment_plan(ExperimentConfig(recipe, tmp_path / "fresh", shots=SHOTS, items=ITEMS))
    assert [s["name"] for s in plan["stages"]] == [
        "train", "eval-base", "eval-trained", *VARIANT_STAGES, "eval-base-variant-1-digit", "eval-trained-variant-1-digit",
        "report"]
    assert [(v["name"], v["shots"], v["items"]) for v in plan["variants"]] == [("3-digit addition", 1, 3), ("1-digit", 0, ITEMS)]
    done = experiment_plan(ExperimentConfig(tiny_recipe(tiny_model_dir, variants(VARIANT)),
                                            with_variant.result.output_dir, shots=SHOTS, items=ITEMS))
    assert [s["done"] for s in done["stages"]] == [True] * 5 + [False]


def test_a_variant_task_option_the_task_lacks_fails_before_training(tiny_model_dir, tmp_path, monkeypatch):
    import rlvr.training.run as training

    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("training ran"))
    wrong = {"name": "typo", "task_options": {"generator_confg": {}}}
    with pytest.raises(RlvrError, match="run.sweep_variants 'typo': unknown key 'generator_confg' in task 'arithmetic'"):
        experiment(tiny_model_dir, tmp_path / "exp", variants(wrong))


@pytest.mark.parametrize(("value", "message"), [
    ("{name: x}", "run.sweep_variants must be a list of mappings"),
    ("[x]", r"run.sweep_variants\[0\] must be a mapping"),
    ("[{task_options: {seed: 1}}]", r"run.sweep_variants\[0\] needs a name"),
    ("[{name: '', task_options: {seed: 1}}]", r"run.sweep_variants\[0\] needs a name"),
    ("[{name: a, task_options: {seed: 1}}, {name: a, task_options: {seed: 2}}]", "two variants are named 'a'"),
    ("[{name: a b, task_options: {seed: 1}}, {name: a-b, task_options: {seed: 2}}]", "would share the files"),
    ("[{name: a}]", "'a': task_options must be a mapping"),
    ("[{name: a, task_options: [seed]}]", "'a': task_options must be a mapping"),
    ("[{name: a, task_options: {seed: 1}, items: 0}]", "'a': items must be a positive integer"),
    ("[{name: a, task_options: {seed: 1}, items: true}]", "'a': items must be a positive integer"),
    ("[{name: a, task_options: {seed: 1}, max_new_tokens: 0}]", "'a': max_new_tokens must be a positive integer"),
    ("[{name: a, task_options: {seed: 1}, itmes: 5}]", "unknown key 'itmes' in run.sweep_variants 'a'. Did you mean 'items'"),
])
def test_a_malformed_variant_is_one_clear_error_at_recipe_load(value, message):
    with pytest.raises(RlvrError, match=message):
        load_recipe(None, [f"run.sweep_variants={value}"])
