"""``rlvr probe``: before training, can GRPO move this model on this task? The measurement.

On the first N training prompts (the rows training draws first, in the trainer's seeded order, after
``run.difficulty_filter``, rendered with the same template and exemplars) the base model, LoRA not applied, is
decoded as training decodes it, its completions scored by the recipe's rewards and judged by the task, and the
figures (:mod:`rlvr.training.probe_figures`) and their verdict (:mod:`rlvr.training.probe_verdict`) put together
in a :class:`~rlvr.training.probe_verdict.Probe`. The checks that need no model (the item count, whether the
verifier reads the gold answers) run first.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rlvr.errors import RlvrError
from rlvr.run_parts import grpo_value, tool_turns
from rlvr.training.probe_figures import (
    Judged,
    answer_in_prompt,
    choice_chance,
    constant_on,
    flag_figures,
    form_rate,
    is_choice_task,
    item_records,
    judge_generations,
    option_counts,
    pass_at_g,
    share,
    train_answers,
    zero_variance_shares,
)
from rlvr.training.probe_render import one_line
from rlvr.training.probe_verdict import (
    CHANCE_Z,
    COMPUTED,
    COMPUTED_MIXED,
    CONSTANT_PRONE,
    FORMAT_BOUND,
    FORMED,
    GOLD_READABLE,
    TOO_EASY,
    TOO_HARD,
    TOO_LONG,
    Figures,
    Probe,
    easier_start,
    verdict,
)


def check_items(items: int, available: int, filtered: bool, option: str = "--items") -> None:
    """``items`` must lie in [1, the split's size]: one line otherwise (``option`` names where it was asked)."""
    if items < 1:
        raise RlvrError(f"{option} must be at least 1, got {items}.")
    if items > available:
        where = "after run.difficulty_filter" if filtered else "in its train split"
        raise RlvrError(f"{option} {items}: the task has {available} training rows {where}; ask for at most {available}.")


def answers_in_line(task: Any) -> bool:
    """Whether the task's completions end in the ``####`` answer line (math, file and reasoning-gym tasks), its
    answer on that line or in a block after it."""
    from rlvr.tasks.answer_line import BLOCK_STOP_PATTERNS
    from rlvr.tasks.prompts import STOP_PATTERNS

    return bool({STOP_PATTERNS[0], BLOCK_STOP_PATTERNS[0]} & set(task.stop_patterns or []))


def check_gold(task: Any, rows: Sequence[Mapping[str, Any]]) -> int | None:
    """How many rows' gold answers, written as the answer line, the task judges correct (None: not an answer-line
    task). Raises one line when fewer than :data:`GOLD_READABLE` are: the verifier cannot read the gold."""
    from rlvr.tasks.answer_line import answer_lines, gold_as_answer_line

    if not answers_in_line(task):
        return None
    block = bool(getattr(task, "block_answers", False))
    golds = [task.shown_gold(row) for row in rows]
    usable = [(row, gold) for row, gold in zip(rows, golds, strict=True) if gold is not None]
    outcomes = task.judge([gold_as_answer_line(gold, block) for _, gold in usable], [row for row, _ in usable])
    read = sum(o.correct for o in outcomes)
    if read < GOLD_READABLE * len(rows):
        first = next(((row, gold) for (row, gold), o in zip(usable, outcomes, strict=True) if not o.correct), None)
        example = f" (e.g. item {first[0].get('id', '?')}: gold {first[1]!r})" if first else ""
        raise RlvrError(f"task {task.name}: the verifier judges only {read} of {len(rows)} gold answers correct when "
                        f"written as {answer_lines('<gold>', block)!r}{example}; check the task's answer field and "
                        "verifier.")
    return read


def training_order(size: int, grpo: Mapping[str, Any]) -> list[int]:
    """The order in which TRL's GRPOTrainer draws the train split's rows: its ``RepeatSampler`` takes
    ``torch.randperm`` with a generator seeded by ``GRPOConfig.seed`` (42 unless the recipe's ``grpo.seed`` says
    otherwise), or the split's own order under ``grpo.shuffle_dataset: false``."""
    if not grpo_value(grpo, "shuffle_dataset"):
        return list(range(size))
    import torch

    generator = torch.Generator()
    generator.manual_seed(int(grpo_value(grpo, "seed")))
    return torch.randperm(size, generator=generator).tolist()


def training_rows(task: Any, difficulty_filter: str | None, items: int, dataset: Any = None,
                  option: str = "--items", grpo: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The first ``items`` rows training sees: ``task.load("train")`` with ``run.difficulty_filter`` applied, in
    the order the trainer draws them (:func:`training_order` under the recipe's ``grpo`` settings)."""
    if dataset is None:
        dataset = task.load("train")
        if difficulty_filter:
            from rlvr.training.difficulty import apply_filter

            dataset = apply_filter(dataset, difficulty_filter)
    if "level" in dataset.column_names:  # the task's curriculum: training draws its first level's rows first
        from rlvr.training.curriculum import first_level

        dataset = first_level(dataset)
    check_items(items, len(dataset), bool(difficulty_filter), option)
    return [dict(row) for row in dataset.select(training_order(len(dataset), grpo or {})[:items])]


def reward_totals(task: Any, recipe: Any, rows: Sequence[Mapping[str, Any]], texts: Sequence[Sequence[str]],
                  tokenizer: Any) -> list[list[float]]:
    """The weighted total reward of each sampled completion, called as TRL calls the recipe's reward functions."""
    funcs = task.reward_functions(recipe.rewards)
    weights = task.reward_weights(recipe.rewards, recipe.grpo.get("reward_weights"))
    prompts, completions, flat_rows = [], [], []
    for row, group in zip(rows, texts, strict=True):
        for text in group:
            chat = not isinstance(row["prompt"], str)
            prompts.append(row["prompt"])
            completions.append([{"role": "assistant", "content": text}] if chat else text)
            flat_rows.append(row)
    columns = {k: [r[k] for r in flat_rows] for k in (flat_rows[0] if flat_rows else {}) if k not in ("prompt", "completion")}
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for group in texts for t in group]
    totals = [0.0] * len(completions)
    for func, weight in zip(funcs, weights, strict=True):
        values = func(prompts=prompts, completions=completions, completion_ids=ids, trainer_state=None,
                      log_extra=_ignore, log_metric=_ignore, **columns)
        for i, value in enumerate(values):
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                totals[i] += weight * float(value)
    size = len(texts[0]) if texts else 0
    return [totals[i : i + size] for i in range(0, len(totals), size)] if size else []


def _ignore(*_: Any, **__: Any) -> None:
    return None


def generate(model: Any, tokenizer: Any, task: Any, recipe: Any, prompts: Sequence[Any], batch_size: int,
             progress: bool) -> tuple[list[Any], list[list[Any]]]:
    """(greedy generation per prompt, G sampled generations per prompt), decoded as training decodes rollouts."""
    from tqdm.auto import tqdm

    from rlvr.evaluation.backends import HFBackend, Sampling, render_prompts

    grpo = recipe.grpo
    limit = int(grpo_value(grpo, "max_completion_length"))
    stops = task.stop_patterns if recipe.run.stop_at_answer else ()
    backend: Any = HFBackend(model, tokenizer, stops, batch_size)  # no stop_strings: training keeps the text as cut
    if getattr(task, "tools", None):  # conversations with the run's tools, as TRL's tool loop runs them in training
        from rlvr.tools.turns import ToolBackend

        backend = ToolBackend(backend, task.tools, tool_turns(grpo), task.opener)
    texts = backend.render(prompts) if hasattr(backend, "render") else render_prompts(prompts, tokenizer)
    seed = int(grpo_value(grpo, "seed"))
    sampled_setting = Sampling(int(grpo_value(grpo, "num_generations")), float(grpo_value(grpo, "temperature")),
                               float(grpo_value(grpo, "top_p")), limit, seed)
    if sampled_setting.greedy:
        raise RlvrError("rlvr probe samples at grpo.temperature; it is 0 (greedy), which GRPO cannot learn from.")
    with tqdm(total=len(texts), desc="probe: greedy", unit="prompt", file=sys.stderr, disable=not progress) as bar:
        greedy = [row[0] for row in backend.generate(texts, Sampling(1, 0.0, 1.0, limit, seed), bar)]
    with tqdm(total=len(texts), desc="probe: sampling", unit="prompt", file=sys.stderr, disable=not progress) as bar:
        sampled = backend.generate(texts, sampled_setting, bar)
    return greedy, sampled


def figures_from(task: Any, recipe: Any, rows: Sequence[Mapping[str, Any]], greedy: Sequence[Any],
                 sampled: Sequence[Sequence[Any]], totals: Sequence[Sequence[float]],
                 train_golds: Sequence[str] | None = None, judged: Judged | None = None) -> Figures:
    """The figures from generations (``.text``, ``.tokens``, ``.stopped``) and their reward totals
    (``judged``: their outcomes when already judged, by :func:`judge_generations`; ``train_golds``: the train
    split's gold answers, for the constant answer and a choice task's chance)."""
    import re

    g = len(sampled[0]) if sampled else 0
    if judged is None:
        judged = judge_generations(task, rows, greedy, sampled)
    greedy_outcomes = judged.greedy
    flat = [(row, x) for row, group in zip(rows, sampled, strict=True) for x in group]
    outcomes = [o for group in judged.sampled for o in group]
    correct = [[o.correct for o in group] for group in judged.sampled]
    stops = [re.compile(p, re.MULTILINE) for p in (task.stop_patterns if recipe.run.stop_at_answer else ())]
    at_answer = [x.stopped and any(p.search(x.text) for p in stops) for _, x in flat]
    n = max(1, len(flat))
    truncated = sum(not x.stopped for _, x in flat) / n
    zero = zero_variance_shares(totals, correct)
    chance = None
    if is_choice_task(task):
        chance = choice_chance([task.shown_gold(r) or "" for r in rows], train_golds or [], option_counts(task, rows), g)
    return Figures(
        items=len(rows), group_size=g, max_tokens=int(grpo_value(recipe.grpo, "max_completion_length")),
        greedy_accuracy=share([o.correct for o in greedy_outcomes]),
        greedy_format_rate=form_rate(greedy_outcomes),
        pass_at_1=share([c for group in correct for c in group]), pass_at_g=pass_at_g(correct),
        format_rate=form_rate(outcomes), truncated=truncated,
        stopped_at_answer=sum(at_answer) / n, ended_eos=1 - truncated - sum(at_answer) / n,
        mean_tokens=sum(x.tokens for _, x in flat) / n,
        groups_all_right=sum(all(c) for c in correct) / max(1, len(correct)),
        groups_all_wrong=sum(not any(c) for c in correct) / max(1, len(correct)),
        zero_variance=zero["zero_variance"], zero_variance_all_right=zero["all_right"],
        zero_variance_all_wrong=zero["all_wrong"], zero_variance_other=zero["other"], chance=chance,
        constant=constant_on(task, rows, train_golds), flags=flag_figures(task, judged),
        answer_in_prompt=answer_in_prompt(task, rows),
    )


def prepare(task: Any, recipe: Any, items: int, dataset: Any = None,
            option: str = "--items") -> tuple[list[dict[str, Any]], int | None]:
    """(the rows to probe, how many gold answers the verifier reads): the checks that need no model, done first."""
    task.reward_functions(recipe.rewards)  # a reward the task cannot serve fails now, not after generation
    rows = training_rows(task, recipe.run.difficulty_filter, items, dataset, option, recipe.grpo)
    return rows, check_gold(task, rows)


def probe(model: Any, tokenizer: Any, task: Any, recipe: Any, rows: Sequence[dict[str, Any]], batch_size: int,
          gold_read: int | None = None, progress: bool = False) -> Probe:
    """Probe ``model`` (the base) on ``rows``, the first training rows of ``recipe``'s task (:func:`prepare`)."""
    import time

    start = time.time()
    greedy, sampled = generate(model, tokenizer, task, recipe, [r["prompt"] for r in rows], batch_size, progress)
    texts = [[x.text for x in group] for group in sampled]
    totals = reward_totals(task, recipe, rows, texts, tokenizer)
    train_golds = train_answers(task, rows)
    judged = judge_generations(task, rows, greedy, sampled)
    figures = figures_from(task, recipe, rows, greedy, sampled, totals, train_golds, judged)
    filtered = " kept by run.difficulty_filter" if recipe.run.difficulty_filter else ""
    info = {
        "recipe": recipe.name, "model": recipe.model.name_or_path, "task": recipe.task_name,
        "rows": f"the first {len(rows)} training rows{filtered}, in the order training draws them",
        "gold_readable": gold_read,
        "seconds": round(time.time() - start, 1),
        "thresholds": {"too_long": TOO_LONG, "format_bound": FORMAT_BOUND, "chance_z": CHANCE_Z,
                       "too_hard": TOO_HARD, "too_easy": TOO_EASY, "constant_prone": CONSTANT_PRONE,
                       "computed": COMPUTED, "formed": FORMED, "computed_mixed": COMPUTED_MIXED,
                       "gold_readable": GOLD_READABLE},
    }
    if getattr(task, "tools", None):
        from rlvr.tools.stats import probe_tool_use

        info["tools"] = {**probe_tool_use(sampled, judged.sampled), "tool_choice": task.tool_choice}
    return Probe(figures, verdict(figures, bool(getattr(task, "chat", False)), easier_start(task, recipe)), info,
                 item_records(task, rows, judged))


def before_training(trainer: Any, recipe: Any) -> dict[str, Any] | None:
    """``run.probe_items``: probe the trainer's model with its adapter disabled (the base) on the rows it trains on,
    print one line, and return probe.json's content for the summary (None: no probe).

    The rows are checked on every process (a bad count fails everywhere alike); the main process decodes while
    the others wait. Under DeepSpeed the weights are partitioned across processes: skipped, with a line.
    """
    import contextlib

    items = recipe.run.probe_items
    if not items:
        return None
    accelerator = trainer.accelerator
    if getattr(trainer, "is_deepspeed_enabled", False):
        if accelerator.is_main_process:
            print("rlvr: run.probe_items: skipped under DeepSpeed (partitioned weights); run `rlvr probe` on the "
                  "recipe before training instead.", flush=True)
        return None
    rows, gold_read = prepare(trainer.task, recipe, items, trainer.train_dataset, "run.probe_items")
    result = None
    if accelerator.is_main_process:
        import torch

        from rlvr.memory import release_memory
        from rlvr.training.evaluation import whole_model

        # fork_rng: sampling here seeds torch's generator; training's rollouts draw as they would without the probe.
        with torch.random.fork_rng(), whole_model(trainer) as model:
            base = model.disable_adapter() if hasattr(model, "disable_adapter") else contextlib.nullcontext()
            with base:
                result = probe(model, trainer.processing_class, trainer.task, recipe, rows, recipe.run.eval_batch_size,
                               gold_read)
        release_memory(collect=True)
        print(one_line(result), flush=True)
    accelerator.wait_for_everyone()
    return result.to_json() if result is not None else None
