"""Which training prompts a run draws (``run.prompt_selection``), and what the draws gave.

``uniform`` (the default) is TRL's own sampler, untouched: each epoch a seeded permutation of the train split, cut
into generation batches. ``online`` draws each generation batch's prompts by weight from per-prompt pass estimates
(:mod:`rlvr.training.prompt_estimates`) that every rollout updates, resampled groups
(``run.zero_variance_groups: resample``) included: a prompt likely to give a group with some right and some wrong
completions weighs up to 1, one always right or always wrong down to ``run.prompt_selection_revisit``, so it is
revisited now and then and its estimate stays honest. :class:`OnlineSampler` keeps TRL's ``RepeatSampler`` layout
(each prompt ``num_generations`` times in a row, each generation batch repeated ``num_iterations x
steps_per_generation`` times), so groups, the shared-prompt loss and the controls see batches of the same shape;
only which prompts come changes. A batch's prompts are drawn when the data loader reaches it, which is one
generation batch ahead of the rollouts (the loader fetches the next batch before handing out the current one): the
estimates it reads lack the latest rollout.

Under both modes (one process) the run records how many distinct prompts its rollouts saw, the share of groups with
signal over its first and last steps (``1 - zero_variance/share``), and the selection's own time as a share of step
time: ``summary.json`` → ``prompt_selection``. Online runs also log per step (``selection/*``): distinct prompts
seen, the signal share the estimates expect of a drawn group and of a uniformly drawn one, and the overhead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils.data import Sampler
from transformers import TrainerCallback

from rlvr.errors import RlvrError
from rlvr.training.prompt_estimates import PassEstimates, dataset_keys, group_passes, prompt_key, read_prior

SELECTION_MODES = ("uniform", "online")


class OnlineSampler(Sampler[int]):
    """TRL's ``RepeatSampler`` layout with each generation batch's ``batch_size`` prompts drawn by ``selection``'s
    weights (distinct within a batch) as the batch is reached; an epoch has as many batches as TRL's."""

    def __init__(self, selection: PromptSelection, size: int, mini_repeat_count: int, batch_size: int,
                 repeat_count: int, seed: int):
        self.selection = selection
        self.size, self.mini_repeat_count, self.batch_size, self.repeat_count = size, mini_repeat_count, batch_size, repeat_count
        self.generator = torch.Generator()
        self.generator.manual_seed(seed)

    def __len__(self) -> int:
        return (self.size // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count

    def __iter__(self) -> Iterator[int]:
        for _ in range(self.size // self.batch_size):
            chunk = self.selection.draw(self.batch_size, self.generator)
            for _ in range(self.repeat_count):
                for index in chunk:
                    for _ in range(self.mini_repeat_count):
                        yield index


class PromptSelection:
    """The run's estimates, its sampler (online) and the record of what the rollouts saw."""

    def __init__(self, mode: str, revisit: float, estimates: PassEstimates, seed: int, prior: str | None = None):
        self.mode, self.revisit, self.estimates, self.prior = mode, revisit, estimates, prior
        self.fresh_generator = torch.Generator()  # online: the prompts run.zero_variance_groups=resample rolls out
        self.fresh_generator.manual_seed(seed + 1)
        self.curriculum: Any = None  # the task's curriculum levels: only their rows are drawn (training/curriculum.py)
        self.seconds = 0.0  # spent drawing, updating and measuring
        self.step_seconds = 0.0  # the steps' own time (time/step), the overhead's denominator

    @classmethod
    def install(cls, trainer: Any, recipe: Any, quiet: bool = False) -> PromptSelection | None:
        """``trainer.prompt_selection`` for ``recipe``'s ``run.prompt_selection`` (None where it cannot be kept: a
        uniform run over several processes or an iterable dataset), with its callback; online runs say so in a line."""
        run = recipe.run
        online = run.prompt_selection == "online"
        dataset = trainer.train_dataset
        several = trainer.accelerator.num_processes > 1
        if online and several:
            raise RlvrError("run.prompt_selection=online needs a single process (every process would have to draw the "
                            "same prompts from the same estimates); use uniform when distributed.")
        if online and not hasattr(dataset, "column_names"):
            raise RlvrError("run.prompt_selection=online needs a task whose train split is a datasets.Dataset "
                            "(indexable); use uniform.")
        selection = None
        if not several and hasattr(dataset, "column_names"):
            estimates = PassEstimates(dataset_keys(dataset), trainer.num_generations)
            prior_path = (run.prompt_selection_prior or run.difficulty_filter) if online else None
            note = None
            if prior_path:
                matched = estimates.seed(read_prior(prior_path, trainer.num_generations))
                if not matched:
                    raise RlvrError(f"run.prompt_selection_prior: no id in {prior_path} is a training prompt of this "
                                    "task; give the file `rlvr filter` or `rlvr probe` wrote for this recipe.")
                note = f"{prior_path} ({matched} of {len(estimates)} prompts)"
            selection = cls(run.prompt_selection, run.prompt_selection_revisit, estimates, trainer.args.seed, note)
            trainer.add_callback(SelectionCallback(trainer, selection))
        trainer.prompt_selection = selection
        from rlvr.training import curriculum

        if (levels := curriculum.install(trainer, selection, quiet)) is not None and selection is not None:
            selection.curriculum = levels
        if online and not quiet and trainer.accelerator.is_main_process:
            seeded = f"estimates seeded from {note}" if note else "estimates from the rollouts, no prior file"
            print(f"rlvr: prompt selection: online, revisit {run.prompt_selection_revisit:g}, {seeded}.", flush=True)
        return selection

    @contextmanager
    def timed(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - start

    # --- drawing -------------------------------------------------------------------------------------------------

    def sampler(self, trainer: Any, dataset: Any, trl: Callable[[], Any]) -> Any:
        """The training sampler: TRL's (uniform) or an :class:`OnlineSampler` with TRL's layout and seed."""
        if self.mode != "online" and self.curriculum is None:
            return trl()
        if len(dataset) != len(self.estimates):
            raise RlvrError("run.prompt_selection=online: the sampled dataset is not the train split the estimates "
                            "were made for.")
        args = trainer.args
        return OnlineSampler(self, len(dataset), trainer.num_generations,
                             args.generation_batch_size // trainer.num_generations,
                             trainer.num_iterations * args.steps_per_generation, args.seed)

    def draw(self, count: int, generator: torch.Generator) -> list[int]:
        """``count`` prompt indices by weight (uniform: alike; a curriculum: its eligible rows only), distinct where
        there are that many."""
        with self.timed():
            weights = (self.estimates.weights(self.revisit) if self.mode == "online"
                       else torch.ones(len(self.estimates), dtype=torch.float64))
            if self.curriculum is not None:  # only the rows at each dataset's current level
                weights = weights * self.curriculum.eligible()
            drawable = int((weights > 0).sum())
            return torch.multinomial(weights, count, replacement=count > drawable, generator=generator).tolist()

    def fresh_picks(self, groups: int) -> list[int] | None:
        """Online: the prompts a resample rolls out in place of ``groups`` zero-variance groups (None: uniform's)."""
        return self.draw(groups, self.fresh_generator) if self.mode == "online" or self.curriculum else None

    # --- what the rollouts gave ------------------------------------------------------------------------------------

    def observe(self, inputs: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], task: Any) -> None:
        """Count one rollout's judged completions (``rows``, scored in the order of ``inputs``) into the estimates."""
        with self.timed():
            size = self.estimates.group_size
            for group, (right, total) in enumerate(group_passes(rows, task, size)):
                self.estimates.observe(prompt_key(inputs[group * size]), right, total)
            if self.curriculum is not None:
                self.curriculum.observe(inputs, rows, task)

    def expected_signal(self) -> tuple[float, float]:
        """(share of groups with signal the estimates expect of the sampler's draws, of uniform draws)."""
        signal = self.estimates.signal()
        weights = self.estimates.weights(self.revisit, signal) if self.mode == "online" else torch.ones_like(signal)
        return float((weights * signal).sum() / weights.sum()), float(signal.mean())

    def summary(self, log_history: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """``summary.json`` → ``prompt_selection``."""
        shares = [1.0 - entry["zero_variance/share"] for entry in log_history if "zero_variance/share" in entry]
        window = max(1, len(shares) // 4)
        selected, uniform = self.expected_signal()
        block = {
            "mode": self.mode,
            "prompts": len(self.estimates),
            "distinct_prompts_seen": int(self.estimates.seen.sum()),
            # groups with signal (mixed rewards) in each step's first rollout, over the first and last quarter of steps
            "signal_share_first": _mean(shares[:window]),
            "signal_share_last": _mean(shares[-window:]),
            "overhead": round(self.seconds / self.step_seconds, 5) if self.step_seconds else None,
            "seconds": round(self.seconds, 3),
        }
        if self.mode == "online":
            block.update({"revisit": self.revisit, "prior": self.prior,
                          "expected_signal_selected": round(selected, 4), "expected_signal_uniform": round(uniform, 4)})
        return block


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


class SelectionCallback(TrainerCallback):
    """At each optimizer step's end: the selection's time against the step's (``time/step``), and, online, the
    ``selection/*`` metrics in TRL's lists (logged with the step)."""

    def __init__(self, trainer: Any, selection: PromptSelection):
        self.trainer, self.selection = trainer, selection
        self._seconds_before = 0.0

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        selection = self.selection
        metrics = self.trainer.metric_lists["train"]
        step = metrics["time/step"][-1] if metrics.get("time/step") else None
        if selection.mode == "online":
            with selection.timed():
                selected, uniform = selection.expected_signal()
            metrics["selection/distinct_prompts"].append(float(selection.estimates.seen.sum()))
            metrics["selection/expected_signal"].append(selected)
            metrics["selection/uniform_signal"].append(uniform)
        spent = selection.seconds - self._seconds_before
        self._seconds_before = selection.seconds
        if step:
            selection.step_seconds += step
            if selection.mode == "online":
                metrics["selection/overhead"].append(spent / step)

