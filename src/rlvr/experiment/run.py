"""``rlvr experiment RECIPE``: train, then evaluate base and trained on the same test items at several shot
counts, then write one directory with everything and one HTML report.

Stages (each skipped when it already finished with the same settings, see :mod:`.stages`):

1. ``train``: the recipe, into ``DIR/train`` (an interrupted run resumes from its latest checkpoint;
   :mod:`.training_stage`);
2. ``eval-base`` and ``eval-trained``: the first ``run.sweep_items`` test items at every shot count of
   ``run.sweep_shots``, greedy, the recipe's own task and prompt options, scored strictly (the training
   reward's verdict) and the published way (:mod:`rlvr.evaluation.published`);
3. ``eval-<label>-variant-<slug>``: for each held-out variant of ``run.sweep_variants`` (:mod:`.variants`),
   base and trained on its own test items at the recipe's shot count;
4. ``report``: ``samples.jsonl``, ``summary.json``, figures and ``report.html`` (always rewritten).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr import atomic, faults, runlock
from rlvr.config import Recipe
from rlvr.errors import RlvrError
from rlvr.evaluation.published import DECODINGS, PUBLISHED_MAX_NEW_TOKENS, check_choice
from rlvr.experiment.stages import StageLog, settings_key
from rlvr.experiment.summary import BASE, TRAINED, build_summary
from rlvr.experiment.training_stage import recipe_settings, run_training, train_done
from rlvr.experiment.variants import describe, variant_settings, variant_stage

#: Task options that shape the training data only; the evaluation items are chosen by the sweep settings.
TRAINING_ONLY_OPTIONS = ("limit",)
#: RunConfig fields that turn on held-out evaluations during training (validation first).
TRAINING_EVALUATIONS = ("eval_items", "test_items")


@dataclass
class ExperimentConfig:
    recipe: Recipe
    output_dir: Path
    #: Shot counts; None: the recipe's ``run.sweep_shots``.
    shots: list[int] | None = None
    #: First N test items; None: the recipe's ``run.sweep_items``.
    items: int | None = None
    #: "strict": stop at the answer line, ``grpo.max_completion_length`` tokens at most; "published": no stop,
    #: up to 1,024 new tokens (the published notebook's conditions).
    decoding: str = "strict"
    backend: str = "auto"
    progress: bool = True
    #: The command line that started it, shown in the report.
    command: str = ""
    #: Keep the recipe's in-training held-out evaluation (``run.eval_items``); off by default, the sweep replaces it.
    training_eval: bool = False


@dataclass
class ExperimentResult:
    output_dir: Path
    summary: dict[str, Any]
    report: Path
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def run_experiment(config: ExperimentConfig, say: Any = print) -> ExperimentResult:
    """Run (or resume) the experiment in ``config.output_dir`` and return its summary and report path."""
    check_choice(config.decoding, DECODINGS, "--decoding")
    with runlock.holding(config.output_dir, "rlvr experiment"):  # one experiment per directory
        return _run_experiment(config, say)


def _run_experiment(config: ExperimentConfig, say: Any) -> ExperimentResult:
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = StageLog(out / "stages.json")
    result = ExperimentResult(out, {}, out / "report.html")
    start = time.time()
    recipe = training_recipe(config)
    from rlvr.run_parts import build_parts

    parts = build_parts(recipe)
    parts.apply_policies()  # the user's code timed and sandboxed as in training, also when training is skipped
    say(parts.line())
    sweep = sweep_settings(config, recipe)

    specs = model_specs(recipe)
    variants = variant_settings(recipe, sweep, TRAINING_ONLY_OPTIONS)  # a wrong task option fails before training
    total = 1 + len(specs) * (1 + len(variants))

    train_key = settings_key(recipe_settings(recipe))
    say(f"[1/{total}] train '{recipe.name}' -> {recipe.output_dir}")
    if train_done(log, train_key, recipe):
        say("      done before with these settings: skipped")
        result.skipped.append("train")
    else:
        run_training(log, train_key, recipe)
        result.ran.append("train")

    records: list[dict[str, Any]] = []
    for number, spec in enumerate(specs, start=2):
        say(f"[{number}/{total}] evaluate {spec.label} ({_describe(spec)}): shots {sweep['shots']}, "
            f"first {sweep['items']} {sweep['split']} items, {config.decoding} decoding")
        records += _eval_stage(log, result, config, spec, sweep, f"eval-{spec.label}", out / "eval" / f"{spec.label}.jsonl",
                               _eval_key(log, spec, sweep=sweep), say)

    variant_records: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    number = 1 + len(specs)
    for settings in variants:
        chosen: list[dict[str, Any]] = []
        for spec in specs:
            number += 1
            name, path = variant_stage(out, spec.label, settings)
            say(f"[{number}/{total}] evaluate {spec.label} on held-out variant '{settings['variant']}': "
                f"{settings['shots'][0]}-shot, first {settings['items']} {settings['split']} items")
            chosen += _eval_stage(log, result, config, spec, settings, name, path, _eval_key(log, spec, variant=settings),
                                  say, tag={"variant": settings["variant"]})
        variant_records.append((settings, chosen))

    summary = build_summary(recipe, config, sweep, specs, records, log, wall_seconds=time.time() - start,
                            variants=[(describe(settings), chosen) for settings, chosen in variant_records])
    result.summary = summary
    result.report = write_outputs(out, recipe, summary, records)
    say(f"      report: {result.report}")
    return result


def _eval_key(log: StageLog, spec: Any, **settings: Any) -> str:
    """An evaluation stage's settings key: its settings, the model and, for the trained model, when training
    finished (a new training run makes every trained evaluation stale)."""
    return settings_key({**settings, "model": spec.model, "adapter": spec.adapter,
                         "train": log.entries.get("train", {}).get("finished") if spec.adapter else None})


def _eval_stage(log: StageLog, result: ExperimentResult, config: ExperimentConfig, spec: Any, settings: dict[str, Any],
                name: str, path: Path, key: str, say: Any, tag: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One evaluation stage: its records as written before with this key, else evaluated now and written."""
    if log.done(name, key, [path]):
        say("      done before with these settings: skipped")
        result.skipped.append(name)
        return _read_jsonl(path)
    began = time.time()
    new = evaluate_spec(spec, settings, config)
    for record in new:
        record.update(tag or {})
    _write_jsonl(path, new)
    faults.point("experiment-stage")
    log.finish(name, key, time.time() - began)
    result.ran.append(name)
    return new


def experiment_plan(config: ExperimentConfig) -> dict[str, Any]:
    """What ``run_experiment`` would do, as plain data, without loading a model: stages (and which are done),
    the training recipe, the sweep. ``rlvr experiment --dry-run`` prints it."""
    check_choice(config.decoding, DECODINGS, "--decoding")
    out = Path(config.output_dir)
    log = StageLog(out / "stages.json")
    recipe = training_recipe(config)
    sweep = sweep_settings(config, recipe)
    train_key = settings_key(recipe_settings(recipe))
    adapter = recipe.output_dir / ("adapter" if recipe.model.lora else "model")
    stages = [{"name": "train", "output": str(recipe.output_dir),
               "done": log.done("train", train_key, [recipe.output_dir / "summary.json", adapter])}]
    specs = model_specs(recipe)
    for spec in specs:
        path = out / "eval" / f"{spec.label}.jsonl"
        stages.append({"name": f"eval-{spec.label}", "model": spec.model, "adapter": spec.adapter, "output": str(path),
                       "done": log.done(f"eval-{spec.label}", _eval_key(log, spec, sweep=sweep), [path])})
    variants = variant_settings(recipe, sweep, TRAINING_ONLY_OPTIONS)
    for settings in variants:
        for spec in specs:
            name, path = variant_stage(out, spec.label, settings)
            stages.append({"name": name, "variant": settings["variant"], "model": spec.model, "adapter": spec.adapter,
                           "output": str(path), "done": log.done(name, _eval_key(log, spec, variant=settings), [path])})
    stages.append({"name": "report", "output": str(out / "report.html"), "done": False})
    return {"recipe": recipe.name, "output_dir": str(out), "stages": stages, "sweep": sweep,
            "variants": [describe(settings) for settings in variants], "training": recipe.to_dict()}


def training_recipe(config: ExperimentConfig) -> Recipe:
    """The recipe as trained here: output in ``DIR/train``; in-training evaluation off unless asked for.

    With ``run.keep_best`` the validation evaluations stay on: they choose the weights the sweep judges.
    """
    recipe = config.recipe
    run = dataclasses.replace(recipe.run, output_dir=str(Path(config.output_dir) / "train"))
    if not config.training_eval:  # held-out evaluations inside training (validation, test): the sweep replaces them
        off = TRAINING_EVALUATIONS[1:] if run.keep_best else TRAINING_EVALUATIONS
        run = dataclasses.replace(run, **{name: 0 for name in off})
    return dataclasses.replace(recipe, run=run)


def sweep_settings(config: ExperimentConfig, recipe: Recipe) -> dict[str, Any]:
    shots = config.shots if config.shots is not None else list(recipe.run.sweep_shots)
    items = config.items if config.items is not None else recipe.run.sweep_items
    if not shots or any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= 8 for s in shots):
        raise RlvrError(f"shot counts must lie in 0..8, got {shots!r}.")
    if not isinstance(items, int) or items < 1:
        raise RlvrError(f"the number of evaluated items must be a positive integer, got {items!r}.")
    from rlvr.run_parts import build_parts

    parts = build_parts(recipe)
    published = config.decoding == "published"
    max_new_tokens = PUBLISHED_MAX_NEW_TOKENS if published else parts.max_completion_length
    options = {k: v for k, v in recipe.task_options.items() if k not in TRAINING_ONLY_OPTIONS}
    template = {"chat_format": parts.chat_format} if parts.chat_format else {}  # the base evaluated as it trained
    if recipe.tools:  # both models evaluated with the run's tools, as the verdict evaluates them (rlvr.tools)
        template["tools"] = {"tools": recipe.tools, "tool_choice": recipe.tool_choice, "tool_turns": parts.max_tool_turns,
                             "tool_template": recipe.model.tool_template}
    return {
        **template,
        "task": recipe.task_name,
        "task_options": options,
        "split": "test",
        "shots": list(dict.fromkeys(shots)),
        "items": items,
        "decoding": config.decoding,
        "max_new_tokens": max_new_tokens,
        "batch_size": recipe.run.eval_batch_size,
        "dtype": recipe.model.dtype,
        "backend": config.backend,
    }


def model_specs(recipe: Recipe) -> list[Any]:
    from rlvr.evaluation.evaluate import ModelSpec

    model = recipe.model.name_or_path
    trained_dir = recipe.output_dir / ("adapter" if recipe.model.lora else "model")
    if recipe.model.lora:
        trained = ModelSpec(model, str(trained_dir), label=TRAINED)
    else:
        trained = ModelSpec(str(trained_dir), None, label=TRAINED)
    return [ModelSpec(model, None, label=BASE), trained]


def evaluate_spec(spec: Any, sweep: dict[str, Any], config: ExperimentConfig) -> list[dict[str, Any]]:
    """Greedy records of one configuration at every shot count, with published verdicts added."""
    from rlvr.evaluation.evaluate import EvalConfig, evaluate

    eval_config = EvalConfig(
        models=[spec], task=sweep["task"], task_options=dict(sweep["task_options"]), shots=list(sweep["shots"]),
        split=sweep["split"], limit=sweep["items"], max_new_tokens=sweep["max_new_tokens"],
        batch_size=sweep["batch_size"], backend=sweep["backend"], dtype=sweep["dtype"], progress=config.progress,
        chat_format=sweep.get("chat_format"), **sweep.get("tools", {}),
    )
    if sweep["decoding"] == "published":
        eval_config.decoding = "published"
    records = evaluate(eval_config).records
    add_published_verdicts(records, sweep)
    return records


def add_published_verdicts(records: list[dict[str, Any]], sweep: dict[str, Any]) -> None:
    """Published verdicts need the prompt text; rebuild each item's prompt (deterministic) from the task."""
    from rlvr.evaluation.evaluate import load_items
    from rlvr.evaluation.published import add_published

    if records and all("published_correct" in r for r in records):
        return
    items = load_items(sweep["task"], sweep["task_options"], sweep["split"], sweep["shots"], sweep["items"])
    prompts = {(shots, str(row.get("id"))): row["prompt"] for shots, dataset in items.items() for row in dataset}
    add_published(records, [prompts[r["shots"], str(r["id"])] for r in records])


def _describe(spec: Any) -> str:
    return f"{spec.model} + {spec.adapter}" if spec.adapter else spec.model


def write_outputs(out: Path, recipe: Recipe, summary: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    from rlvr.experiment.report import write_report

    _write_jsonl(out / "samples.jsonl", records)
    atomic.write_json(out / "summary.json", summary)
    return write_report(out, recipe, summary, records)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.open_atomic(path) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
