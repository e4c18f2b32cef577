"""Evaluation that can be trusted: held-out items, the training rewards as judges, intervals and paired tests.

The library entry point is :func:`evaluate` (``rlvr eval`` is a thin wrapper);
:func:`generate_and_score` evaluates an already loaded model and is what the
training callback uses. The rules:

* items come from the **test** split by default; the train split is refused
  unless ``allow_train_split`` (and then flagged in every output);
* ``limit`` keeps the **first N** items of the split, the same items for every
  model and every shot count, so results are paired;
* only the generated text is scored, with the task's own reward functions
  (``task.reward_functions()``), so training and evaluation agree on "correct";
* greedy decoding gives accuracy; ``samples`` > 0 adds that many sampled
  completions per item for sampled pass@1 and unbiased pass@k.
"""

from __future__ import annotations

import gc
import hashlib
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rlvr.errors import RlvrError
from rlvr.evaluation.backends import Generation, Sampling, choose_backend, render_prompts, warn
from rlvr.evaluation.stats import mcnemar_exact, mean_pass_at_k, paired_counts, wilson_interval

CORRECTNESS = "correctness"
FORMAT = "format"


@dataclass
class ModelSpec:
    """One configuration to evaluate: a base model, optionally with a LoRA adapter, and its label."""

    model: str
    adapter: str | None = None
    label: str = ""
    note: str = ""  # a warning found while loading (adapter trained on another base model)

    def __post_init__(self) -> None:
        if not self.label:
            self.label = default_label(self.model, self.adapter)


@dataclass
class EvalConfig:
    models: list[ModelSpec]
    task: str = "gsm8k"
    #: Task options (data, exemplars, chat, ...); ``shots`` is set per evaluation from ``shots``.
    task_options: dict[str, Any] = field(default_factory=dict)
    #: Shot counts to sweep; None: the task's own default.
    shots: list[int] | None = None
    split: str = "test"
    allow_train_split: bool = False
    #: Keep the first N items of the split (None: all).
    limit: int | None = None
    #: Sampled completions per item for pass@k (0: greedy only).
    samples: int = 0
    temperature: float = 0.8
    max_new_tokens: int = 256
    batch_size: int = 16
    backend: str = "auto"
    #: hf backend: drop stopped rows from the batch (rlvr.evaluation.decoding); False: plain generate() (benchmarks).
    compact_batches: bool = True
    dtype: str = "auto"
    seed: int = 0
    progress: bool = True


@dataclass
class EvalResult:
    records: list[dict[str, Any]]
    summary: dict[str, Any]


def default_label(model: str, adapter: str | None) -> str:
    name = Path(model.rstrip("/")).name or model
    if not adapter:
        return name
    adapter_path = Path(adapter.rstrip("/"))
    # outputs/run/adapter -> "run"; a directory named after the run keeps its own name.
    tag = adapter_path.parent.name if adapter_path.name in ("adapter", "model") and adapter_path.parent.name else adapter_path.name
    return f"{name}+{tag}"


def model_specs(models: list[str], adapters: list[str] | None = None, labels: list[str] | None = None) -> list[ModelSpec]:
    """Pair ``--model`` and ``--adapter`` values into configurations.

    No adapters: one configuration per model. One model and several adapters:
    that model with each adapter. Otherwise the lists pair up in order. The
    adapter ``none`` means the model as it is.
    """
    adapters = list(adapters or [])
    if not models:
        raise RlvrError("give at least one --model (a Hub id, a local directory, a .gguf file or 'smollm2-135m-instruct').")
    if adapters and len(models) == 1:
        models = models * len(adapters)
    if adapters and len(adapters) != len(models):
        raise RlvrError(
            f"{len(models)} --model and {len(adapters)} --adapter values: give one --model for all adapters, "
            "or one --adapter (or 'none') per --model."
        )
    adapters = [None if a is None or a.lower() == "none" else a for a in adapters] or [None] * len(models)
    specs = [ModelSpec(m, a) for m, a in zip(models, adapters, strict=True)]
    labels = list(labels or [])
    if labels and len(labels) != len(specs):
        raise RlvrError(f"{len(labels)} --label values for {len(specs)} configurations: give one per configuration or none.")
    for spec, label in zip(specs, labels or [s.label for s in specs], strict=True):
        spec.label = label
    seen: dict[str, int] = {}
    for spec in specs:
        seen[spec.label] = seen.get(spec.label, 0) + 1
        if seen[spec.label] > 1:
            spec.label = f"{spec.label}#{seen[spec.label]}"
    return specs


# ----------------------------------------------------------------------------- items


def check_split(split: str, allow_train_split: bool) -> None:
    from rlvr.tasks.base import check_split as known_split

    known_split(split)
    if split == "train" and not allow_train_split:
        raise RlvrError(
            "refusing to evaluate on the train split (it measures memorisation, not skill); "
            "use the test split, or pass --allow-train-split to do it anyway."
        )


def load_items(task_name: str, options: dict[str, Any], split: str, shots: list[int] | None, limit: int | None) -> dict[int, Any]:
    """{shots: dataset of the first ``limit`` items of ``split`` rendered with that many shots}."""
    from rlvr.tasks import get_task

    if limit is not None and limit < 1:
        raise RlvrError(f"--limit must be a positive integer, got {limit}.")
    if shots is None:
        shots = [get_task(task_name, options).shots]
    if not shots:
        raise RlvrError("give at least one shot count, e.g. --shots 0,8.")
    items: dict[int, Any] = {}
    for count in shots:
        task = get_task(task_name, {**options, "shots": count})
        dataset = task.load(split)
        if len(dataset) == 0:
            raise RlvrError(f"{task_name} split '{split}' is empty: check --data.")
        if limit is not None and limit < len(dataset):
            dataset = dataset.select(range(limit))
        items[count] = dataset
    return items


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12]


# ----------------------------------------------------------------------------- models


def load_for_eval(spec: ModelSpec, dtype: str = "auto") -> tuple[Any, Any, str]:
    """(model in eval mode with the adapter merged in, tokenizer, resolved base path)."""
    from rlvr.config import ModelConfig
    from rlvr.models import load_model, load_tokenizer, resolve_model

    if spec.adapter:
        adapter_config(spec.adapter)  # a bad adapter path fails before the model loads
    path = resolve_model(spec.model)
    tokenizer = load_tokenizer(path)
    model = load_model(path, SimpleNamespace(model=ModelConfig(name_or_path=spec.model, dtype=dtype, lora=False)))
    if spec.adapter:
        model = attach_adapter(model, spec, path)
    model.eval()
    return model, tokenizer, path


def adapter_config(adapter: str) -> dict[str, Any]:
    path = Path(adapter).expanduser()
    if not path.is_dir():
        raise RlvrError(f"adapter directory not found: {adapter}")
    config = path / "adapter_config.json"
    if not config.is_file():
        raise RlvrError(
            f"{adapter} is not a LoRA adapter (no adapter_config.json); a fully fine-tuned model goes in --model."
        )
    try:
        return json.loads(config.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise RlvrError(f"{config} is not valid JSON.") from None


def same_model(trained_on: str, base_path: str, reference: str) -> bool:
    """Whether an adapter's recorded base names the same model as ``reference`` (resolved to ``base_path``)."""
    if not trained_on:
        return True
    candidates = {reference.strip().lower(), str(Path(base_path).expanduser().resolve()).lower()}
    recorded = trained_on.strip()
    if recorded.lower() in candidates or str(Path(recorded).expanduser().resolve()).lower() in candidates:
        return True
    return Path(recorded.rstrip("/")).name.lower() == Path(base_path.rstrip("/")).name.lower()


def attach_adapter(model: Any, spec: ModelSpec, base_path: str) -> Any:
    from peft import PeftModel

    trained_on = adapter_config(spec.adapter).get("base_model_name_or_path") or ""
    if not same_model(trained_on, base_path, spec.model):
        spec.note = f"adapter {spec.adapter} was trained on '{trained_on}', evaluated here on '{spec.model}'."
        warn(spec.note)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peft_model = PeftModel.from_pretrained(model, str(Path(spec.adapter).expanduser()))
    except (RuntimeError, ValueError, KeyError, OSError) as error:
        detail = " ".join(str(error).split())[:200]
        raise RlvrError(
            f"adapter {spec.adapter} does not fit model '{spec.model}' (it was trained on '{trained_on or 'unknown'}'): "
            f"{detail}"
        ) from None
    return peft_model.merge_and_unload()


# ----------------------------------------------------------------------------- generation and scoring


def generate_and_score(
    backend: Any,
    task: Any,
    items: Any,
    label: str,
    shots: int,
    sampling: Sampling,
    samples: int = 0,
    temperature: float = 0.8,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Records for ``items`` (a task dataset): greedy ones, then ``samples`` sampled ones per item."""
    from tqdm.auto import tqdm

    tokenizer = getattr(backend, "tokenizer", None)
    prompts = render_prompts(items["prompt"], tokenizer)
    rewards = task.reward_functions()
    if CORRECTNESS not in [f.__name__ for f in rewards]:
        raise RlvrError(f"task '{task.name}' has no '{CORRECTNESS}' reward, so accuracy is undefined.")
    runs = [(None, sampling)]
    if samples > 0:
        runs.append(("sampled", Sampling(samples, temperature, 1.0, sampling.max_new_tokens, sampling.seed)))
    records = []
    for kind, how in runs:
        name = f"{label} {shots}-shot" + (f" x{how.n} samples" if kind else "")
        with tqdm(total=len(prompts), desc=name, unit="prompt", file=sys.stderr, disable=not progress, leave=True) as bar:
            generations = backend.generate(prompts, how, bar)
        records += score(items, prompts, generations, rewards, label, shots, sampled=kind is not None)
    return records


def score(
    items: Any, prompts: list[str], generations: list[list[Generation]], rewards: list[Any], label: str, shots: int, sampled: bool
) -> list[dict[str, Any]]:
    from rlvr.verifiers.math import read_answer

    columns = {name: items[name] for name in items.column_names if name != "prompt"}
    flat = [(i, j, g) for i, outs in enumerate(generations) for j, g in enumerate(outs)]
    texts = [g.text for _, _, g in flat]
    expanded = {name: [values[i] for i, _, _ in flat] for name, values in columns.items()}
    components = {f.__name__: f(texts, **expanded) for f in rewards}
    records = []
    for row, (i, j, gen) in enumerate(flat):
        answer = read_answer(gen.text)
        parts = {name: float(values[row]) for name, values in components.items()}
        records.append({
            "id": columns["id"][i] if "id" in columns else str(i),
            "shots": shots,
            "model": label,
            "sample": j if sampled else None,
            "prompt_hash": prompt_hash(prompts[i]),
            "completion": gen.text,
            "extracted_answer": _number(answer.value) if answer else None,
            "ground_truth": columns.get("final_answer", [None] * len(prompts))[i],
            "rewards": parts,
            "reward": sum(parts.values()),
            "correct": parts[CORRECTNESS] > 0,
            "completion_tokens": gen.tokens,
            "stopped": gen.stopped,
        })
    return records


def _number(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


def make_backend(name: str, spec: ModelSpec, config: EvalConfig, task: Any) -> tuple[Any, str]:
    """(backend, resolved base path) for one configuration."""
    from rlvr.evaluation.backends import HFBackend, VLLMBackend

    if name == "vllm":
        from rlvr.models import load_tokenizer, resolve_model

        if spec.adapter:
            adapter_config(spec.adapter)
        path = resolve_model(spec.model)
        return VLLMBackend(path, load_tokenizer(path), task.stop_patterns, spec.adapter), path
    model, tokenizer, path = load_for_eval(spec, config.dtype)
    return HFBackend(model, tokenizer, task.stop_patterns, config.batch_size, config.compact_batches), path


# ----------------------------------------------------------------------------- the whole evaluation


def evaluate(config: EvalConfig) -> EvalResult:
    """Evaluate every configuration at every shot count on the same items; return records and summary."""
    from rlvr.tasks import get_task

    check_split(config.split, config.allow_train_split)
    if config.samples < 0:
        raise RlvrError(f"--samples must be 0 or more, got {config.samples}.")
    if config.max_new_tokens < 1 or config.batch_size < 1:
        raise RlvrError("--max-new-tokens and --batch-size must be positive integers.")
    backend_name = choose_backend(config.backend)
    from rlvr.models import resolve_model

    for spec in config.models:  # a missing model or adapter is reported before any data is read
        resolve_model(spec.model)
        if spec.adapter:
            adapter_config(spec.adapter)
    items = load_items(config.task, config.task_options, config.split, config.shots, config.limit)
    sampling = Sampling(1, 0.0, 1.0, config.max_new_tokens, config.seed)
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    start = time.time()
    for spec in config.models:
        backend, _ = make_backend(backend_name, spec, config, get_task(config.task, config.task_options))
        for shots, dataset in items.items():
            task = get_task(config.task, {**config.task_options, "shots": shots})
            records += generate_and_score(
                backend, task, dataset, spec.label, shots, sampling, config.samples, config.temperature, config.progress
            )
        del backend
        gc.collect()
    notes += [spec.note for spec in config.models if spec.note]
    if config.split == "train":
        notes.append("Evaluated on the TRAIN split: these numbers measure memorisation, not generalisation.")
    summary = summarize(records, config.models, samples=config.samples)
    summary.update(
        task=config.task,
        task_options=config.task_options,
        split=config.split,
        train_split=config.split == "train",
        items=len(next(iter(items.values()))),
        item_selection=f"first {config.limit} items of the split" if config.limit else "all items of the split",
        backend=backend_name,
        decoding={"greedy": True, "max_new_tokens": config.max_new_tokens, "samples": config.samples,
                  "temperature": config.temperature if config.samples else None, "seed": config.seed},
        seconds=round(time.time() - start, 1),
        warnings=notes,
    )
    return EvalResult(records, summary)


def summarize(records: list[dict[str, Any]], specs: list[ModelSpec] | None = None, samples: int = 0) -> dict[str, Any]:
    """Per (model, shots) statistics and McNemar comparisons, computed from ``records`` alone."""
    labels = [s.label for s in specs] if specs else list(dict.fromkeys(r["model"] for r in records))
    shot_counts = sorted({r["shots"] for r in records})
    results, verdicts = [], {}
    for label in labels:
        for shots in shot_counts:
            greedy = [r for r in records if r["model"] == label and r["shots"] == shots and r["sample"] is None]
            if not greedy:
                continue
            sampled = [r for r in records if r["model"] == label and r["shots"] == shots and r["sample"] is not None]
            verdicts[label, shots] = {r["id"]: r["correct"] for r in greedy}
            results.append(config_stats(label, shots, greedy, sampled, samples))
    comparisons = []
    for shots in shot_counts:
        present = [label for label in labels if (label, shots) in verdicts]
        for a_index, first in enumerate(present):
            for second in present[a_index + 1 :]:
                comparisons.append(compare(first, second, shots, verdicts[first, shots], verdicts[second, shots]))
    summary: dict[str, Any] = {"results": results, "comparisons": comparisons}
    if specs:
        summary["models"] = [{"label": s.label, "model": s.model, "adapter": s.adapter} for s in specs]
    return summary


def config_stats(label: str, shots: int, greedy: list[dict], sampled: list[dict], samples: int) -> dict[str, Any]:
    n = len(greedy)
    correct = sum(r["correct"] for r in greedy)
    low, high = wilson_interval(correct, n)
    components = sorted({name for r in greedy for name in r["rewards"]})
    stats: dict[str, Any] = {
        "model": label,
        "shots": shots,
        "n": n,
        "correct": correct,
        "accuracy": correct / n,
        "ci95": [low, high],
        "format_rate": sum(r["rewards"].get(FORMAT, 0) > 0 for r in greedy) / n,
        "stopped_rate": sum(bool(r["stopped"]) for r in greedy) / n,
        "mean_completion_tokens": sum(r["completion_tokens"] for r in greedy) / n,
        "mean_rewards": {name: sum(r["rewards"].get(name, 0.0) for r in greedy) / n for name in components},
    }
    if sampled:
        per_item: dict[str, list[bool]] = {}
        for r in sampled:
            per_item.setdefault(r["id"], []).append(r["correct"])
        k_max = min(len(v) for v in per_item.values())
        counts = [sum(v[:k_max]) for v in per_item.values()]
        ks = sorted({k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= k_max} | {k_max})
        stats["pass_at_k"] = {str(k): mean_pass_at_k(counts, k_max, k) for k in ks}
        stats["samples_per_item"] = k_max
    return stats


def compare(first: str, second: str, shots: int, a: dict[str, bool], b: dict[str, bool]) -> dict[str, Any]:
    ids = [i for i in a if i in b]
    both, only_first, only_second, neither = paired_counts([a[i] for i in ids], [b[i] for i in ids])
    n = max(1, len(ids))
    return {
        "shots": shots,
        "first": first,
        "second": second,
        "n": len(ids),
        "both_correct": both,
        "only_first": only_first,
        "only_second": only_second,
        "both_wrong": neither,
        "accuracy_difference": (only_second - only_first) / n,
        "p_value": mcnemar_exact(only_first, only_second),
    }


def write_outputs(result: EvalResult, output_dir: str | Path, figure: bool = True) -> dict[str, Path]:
    """samples.jsonl, summary.json, accuracy.png and report.html in ``output_dir``."""
    from rlvr.evaluation.report import write_figure, write_report

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"samples": out / "samples.jsonl", "summary": out / "summary.json"}
    with paths["samples"].open("w", encoding="utf-8") as handle:
        for record in result.records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    paths["summary"].write_text(json.dumps(result.summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if figure:
        paths["figure"] = write_figure(result.summary, out / "accuracy.png")
        paths["report"] = write_report(result, out / "report.html", paths["figure"])
    return paths


def recount(samples_path: str | Path) -> dict[str, Any]:
    """Recompute the summary statistics from a samples.jsonl file (to check a summary.json)."""
    from rlvr.jsonl import read_jsonl

    records = read_jsonl(samples_path)
    samples = max((r["sample"] + 1 for r in records if r["sample"] is not None), default=0)
    return summarize(records, samples=samples)
