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
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr import faults
from rlvr.errors import RlvrError
from rlvr.evaluation.backends import Sampling, choose_backend, render_prompts
from rlvr.evaluation.items import check_split, load_items, task_for
from rlvr.evaluation.outputs import write_outputs
from rlvr.evaluation.record_sink import RecordSink, run_key
from rlvr.evaluation.scoring import score
from rlvr.evaluation.specs import ModelSpec, adapter_config, load_for_eval, model_specs
from rlvr.evaluation.summary import compare, config_stats, recount, summarize

__all__ = [  # the library API; the helpers live in items, specs, summary and outputs
    "EvalConfig", "EvalResult", "ModelSpec", "check_split", "compare", "config_stats", "evaluate", "generate_and_score",
    "load_for_eval", "load_items", "model_specs", "recount", "summarize", "write_outputs",
]

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
    #: "published": also score each completion the published way (rlvr.evaluation.published), beside the strict verdict.
    scoring: str = "strict"
    #: "published": no stop at the answer line (EOS or max_new_tokens only), as the published notebook decoded.
    decoding: str = "strict"
    #: The run recipe.yaml whose settings filled what the command line left open (rlvr.evaluation.from_run).
    #: A run's ``model.chat_format``, put on every model evaluated without the run's own tokenizer (the base).
    chat_format: str | None = None
    settings_from: str | None = None
    #: The model may call these tools (a recipe's ``task.tools``; a run's, read from its recipe.yaml): conversations
    #: decoded turn by turn (rlvr.tools.turns), prompts with the tool's exemplars, the tool template on the tokenizer.
    tools: list[Any] = field(default_factory=list)
    tool_choice: str = "auto"
    tool_turns: int = 2
    tool_template: str = "auto"

    def with_tools(self, task: Any) -> Any:
        """``task`` as the model with :attr:`tools` sees it (itself without tools)."""
        from rlvr.tools.task_tools import TaskWithTools

        return TaskWithTools(task, self.tool_callables, self.tool_choice) if self.tools else task

    @property
    def tool_callables(self) -> list[Any]:
        if "_tool_callables" not in self.__dict__:
            from rlvr.tools.specs import build_tools, parse_tool_specs

            self.__dict__["_tool_callables"] = build_tools(parse_tool_specs(self.tools))
        return self.__dict__["_tool_callables"]


@dataclass
class EvalResult:
    records: list[dict[str, Any]]
    summary: dict[str, Any]


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
    render = getattr(backend, "render", None)  # a backend with tools renders them into the prompt (rlvr.tools.turns)
    prompts = render(items["prompt"]) if render else render_prompts(items["prompt"], tokenizer)
    rows = items.to_list()
    runs = [(None, sampling)]
    if samples > 0:
        runs.append(("sampled", Sampling(samples, temperature, 1.0, sampling.max_new_tokens, sampling.seed)))
    records = []
    for kind, how in runs:
        name = f"{label} {shots}-shot" + (f" x{how.n} samples" if kind else "")
        with tqdm(total=len(prompts), desc=name, unit="prompt", file=sys.stderr, disable=not progress, leave=True) as bar:
            generations = backend.generate(prompts, how, bar)
        flat = [(i, j, g) for i, outs in enumerate(generations) for j, g in enumerate(outs)]
        meta = [{"model": label, "shots": shots, "sample": j if kind else None, "completion_tokens": g.tokens,
                 "stopped": g.stopped, **(g.extra or {})} for _, j, g in flat]
        records += score(task, [rows[i] for i, _, _ in flat], [g.text for _, _, g in flat], meta,
                         [prompts[i] for i, _, _ in flat])
    return records


def make_backend(name: str, spec: ModelSpec, config: EvalConfig, task: Any) -> tuple[Any, str]:
    """(backend, resolved base path) for one configuration."""
    from rlvr.evaluation.backends import HFBackend, VLLMBackend

    if name == "vllm":
        from rlvr.model_sources import resolve_model
        from rlvr.models import load_tokenizer

        if spec.adapter:
            adapter_config(spec.adapter)
        if config.chat_format:
            raise RlvrError(f"--backend vllm does not put the run's chat format ({config.chat_format}) on the model; "
                            "use --backend hf.")
        path = resolve_model(spec.model)
        published = config.decoding == "published"  # no answer-line stop, no next-question stop
        stops, strings = ([], ()) if published else (task.stop_patterns, task.stop_strings)
        return VLLMBackend(path, load_tokenizer(path), stops, spec.adapter, strings, config.dtype), path
    model, tokenizer, path = load_for_eval(spec, config.dtype, config.chat_format)
    published = config.decoding == "published"
    stops, strings = ([], ()) if published else (task.stop_patterns, task.stop_strings)
    backend = HFBackend(model, tokenizer, stops, config.batch_size, config.compact_batches, strings)
    if config.tools:  # conversations with the tools, the tool template on the tokenizer (rlvr.tools.turns)
        from rlvr.tools.turns import with_tools

        backend = with_tools(backend, config.tool_callables, config.tool_turns, task.opener, config.tool_template)
    return backend, path


# ----------------------------------------------------------------------------- the whole evaluation


def evaluate(config: EvalConfig, records_path: str | Path | None = None) -> EvalResult:
    """Evaluate every configuration at every shot count on the same items; return records and summary.

    ``records_path``: a samples.jsonl that grows as each configuration finishes, so a failure later
    (another model, the summary) keeps what was already generated.
    """
    from rlvr.evaluation.published import (
        DECODINGS,
        SCORINGS,
        add_published,
        add_published_summary,
        check_choice,
    )

    check_split(config.split, config.allow_train_split)
    check_choice(config.scoring, SCORINGS, "--scoring")
    check_choice(config.decoding, DECODINGS, "--decoding")
    if config.samples < 0:
        raise RlvrError(f"--samples must be 0 or more, got {config.samples}.")
    if config.max_new_tokens < 1 or config.batch_size < 1:
        raise RlvrError("--max-new-tokens and --batch-size must be positive integers.")
    backend_name = choose_backend(config.backend)
    from rlvr.model_sources import resolve_model

    precision = eval_precision(config.dtype, backend_name)
    if config.progress and precision:
        print(precision.line(), file=sys.stderr, flush=True)

    for spec in config.models:  # a missing model or adapter is reported before any data is read
        resolve_model(spec.model)
        if spec.adapter:
            adapter_config(spec.adapter)
    if config.tools and backend_name == "vllm":
        raise RlvrError("evaluating with tools runs rlvr's own decoding: use --backend hf (or --no-tools).")
    items = load_items(config.task, config.task_options, config.split, config.shots, config.limit, config.with_tools)
    sampling = Sampling(1, 0.0, 1.0, config.max_new_tokens, config.seed)
    records: list[dict[str, Any]] = []
    sink = RecordSink(records_path, run_key(config))
    start = time.time()
    for spec in config.models:
        if all(sink.done(spec.label, shots) for shots in items):
            for shots in items:
                records += sink.reuse(spec.label, shots)
            continue
        backend, _ = make_backend(backend_name, spec, config, config.with_tools(task_for(config.task, config.task_options)))
        for shots, dataset in items.items():
            if sink.done(spec.label, shots):
                records += sink.reuse(spec.label, shots)
                continue
            task = config.with_tools(task_for(config.task, config.task_options, shots))
            try:
                new = generate_and_score(
                    backend, task, dataset, spec.label, shots, sampling, config.samples, config.temperature, config.progress
                )
            finally:
                task.close()
            if config.scoring == "published":
                prompts = dict(zip(map(str, dataset["id"]), dataset["prompt"], strict=True))
                add_published(new, [prompts[str(r["id"])] for r in new])
            records += new
            sink.add(new, spec.label, shots)
            faults.point("eval-generation")
        del backend
        gc.collect()
    notes = [spec.note for spec in config.models if spec.note]
    if config.split == "train":
        notes.append("Evaluated on the TRAIN split: these numbers measure memorisation, not generalisation.")
    task = task_for(config.task, config.task_options)
    summary = summarize(records, config.models, samples=config.samples, task=task)
    summary["constant_answer"] = held_out_baseline(task, next(iter(items.values())))
    if config.scoring == "published":
        add_published_summary(summary, records)
    evaluated = len(next(iter(items.values())))
    summary.update(
        task=config.task,
        accuracy_name=task.accuracy_name,
        takes_shots=task.takes_shots,
        task_options=config.task_options,
        split=config.split,
        train_split=config.split == "train",
        items=evaluated,
        item_selection=_item_selection(config.limit, evaluated),
        backend=backend_name,
        decoding={"greedy": True, "max_new_tokens": config.max_new_tokens, "samples": config.samples,
                  "temperature": config.temperature if config.samples else None, "seed": config.seed,
                  "stop_at_answer": config.decoding != "published", "style": config.decoding},
        scoring=config.scoring,
        seconds=round(time.time() - start, 1),
        warnings=notes,
        settings_from=config.settings_from,
        overlap=split_overlap(config.task, config.task_options),
        precision=precision.summary() if precision else {"dtype": config.dtype, "backend": backend_name},
    )
    return EvalResult(records, summary)


def held_out_baseline(task: Any, items: Any) -> dict[str, Any]:
    """The training verdict's baseline on these items (:func:`rlvr.evaluation.baselines.constant_baseline`): the
    train split's most common answer, or the best fixed completion of the task's references."""
    from rlvr.evaluation.baselines import constant_baseline

    try:
        return constant_baseline(task, items)
    except RlvrError as error:  # e.g. a task whose train split cannot be read here: said, not fatal
        return {"answer": None, "accuracy": None, "note": f"no constant baseline: {error}"}


def eval_precision(dtype: str, backend: str) -> Any:
    """The precision the models are evaluated in (``rlvr.precision``); None for vLLM, which chooses its own."""
    if backend != "hf":
        return None
    from rlvr.models import model_precision
    from rlvr.recipe_sections import ModelConfig

    return model_precision(ModelConfig(dtype=dtype), evaluating=True)


def _item_selection(limit: int | None, evaluated: int) -> str:
    """How the items were chosen, in words: a limit above the split's size kept the whole split."""
    if limit and evaluated >= limit:
        return f"first {limit} items of the split"
    return "the whole split"


def split_overlap(task_name: str, options: dict[str, Any]) -> dict[str, Any]:
    """Questions the task's splits share (normalised text); the evaluated split must share none with train."""
    from rlvr.tasks import get_task

    try:
        return get_task(task_name, options).overlap()
    except RlvrError as error:
        return {"unchecked": str(error)}
