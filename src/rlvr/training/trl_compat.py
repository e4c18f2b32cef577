"""The one place rlvr touches TRL's private names.

rlvr extends TRL's ``GRPOTrainer`` at points TRL does not make public: how one
turn of completions is generated, how rewards are scored, the rollout dict that
feeds the loss, the per-token log-prob forward, the training sampler, and its metric and sample logs.
:class:`TrlHooks` turns each of those private methods into an rlvr hook that
receives TRL's own implementation as a callable, and exposes the private
attributes rlvr reads under public names. No other rlvr module names a private
TRL attribute.

Importing this module checks the installed TRL: its version (the release rlvr
is tested against; ``RLVR_ALLOW_TRL_VERSION=1`` tries another), that the
private methods rlvr hooks exist with the parameters it passes, and that the
rollout dict TRL builds holds no key rlvr does not know how to handle. A
mismatch raises :class:`rlvr.errors.RlvrError` with one line.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import trl
from packaging.version import Version
from trl import GRPOTrainer

from rlvr.errors import RlvrError

TESTED_TRL = "1.16"  # major.minor of the TRL release rlvr is built and tested against (pyproject pins it)

# Keys of the rollout dict (GRPOTrainer._generate_and_score_completions' output), by layout.
LEFT_PADDED = ("prompt_ids", "prompt_mask")
RIGHT_PADDED = (
    "completion_ids",
    "completion_mask",
    "old_per_token_logps",
    "ref_per_token_logps",
    "sampling_per_token_logps",
    "importance_sampling_ratio",
    "tool_mask",
)
ROW_KEYS = ("advantages",)
BATCH_KEYS = ("num_items_in_batch",)
# Image inputs: not one row per completion, so rows cannot be moved between batches.
MULTIMODAL_KEYS = (
    "pixel_values",
    "image_grid_thw",
    "pixel_attention_mask",
    "spatial_shapes",
    "image_sizes",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
    "num_images",
    "num_tiles",
)
REQUIRED_KEYS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages", "num_items_in_batch")
KNOWN_KEYS = frozenset(LEFT_PADDED + RIGHT_PADDED + ROW_KEYS + BATCH_KEYS + MULTIMODAL_KEYS)

# Private methods rlvr hooks, with the parameters it passes them.
HOOKED = {
    "_tokenize_prompts": ("prompts",),
    "_generate": ("prompts",),
    "_calculate_rewards": ("inputs", "prompts", "completions", "completion_ids_list"),
    "_generate_single_turn": ("prompt_ids", "images", "multimodal_fields", "num_generations"),
    "_generate_and_score_completions": ("inputs",),
    "_save_checkpoint": ("model", "trial"),
    "_get_train_sampler": ("dataset",),
    "_get_per_token_logps_and_entropies": (
        "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size", "compute_entropy", "compute_aux_loss",
    ),
}


def rollout_keys(source: str) -> set[str]:
    """The keys a rollout-building function's source puts in its ``output`` dict."""
    literal = re.search(r"output\s*=\s*\{(.*?)\n\s*\}", source, re.DOTALL)
    keys = set(re.findall(r'"(\w+)"\s*:', literal.group(1))) if literal else set()
    return keys | set(re.findall(r'output\["(\w+)"\]\s*=', source))


def check_trl() -> None:
    """Fail with one line unless the installed TRL is the one rlvr's hooks and key lists were written for."""
    found = Version(trl.__version__)
    if f"{found.major}.{found.minor}" != TESTED_TRL and os.environ.get("RLVR_ALLOW_TRL_VERSION") != "1":
        raise RlvrError(
            f"rlvr is built against trl {TESTED_TRL}.x and found trl {found}: pip install 'trl=={TESTED_TRL}.0' "
            "(or set RLVR_ALLOW_TRL_VERSION=1 to try this one)."
        )
    for name, parameters in HOOKED.items():
        method = getattr(GRPOTrainer, name, None)
        present = inspect.signature(method).parameters if method is not None else {}
        if not set(parameters) <= set(present):
            raise RlvrError(f"trl {found}: GRPOTrainer.{name}{tuple(parameters)} changed or is gone; rlvr cannot hook it.")
    try:
        source = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    except (OSError, TypeError):
        return  # no source shipped: the version check above is all we can do
    keys = rollout_keys(source)
    unknown, missing = sorted(keys - KNOWN_KEYS), sorted(set(REQUIRED_KEYS) - keys)
    if unknown or missing:
        raise RlvrError(
            f"trl {found}: the rollout dict has keys rlvr does not know ({', '.join(unknown) or 'none'}) "
            f"or lacks keys it needs ({', '.join(missing) or 'none'}); update rlvr.training.trl_compat."
        )


check_trl()


class TrlHooks(GRPOTrainer):
    """``GRPOTrainer`` whose private extension points call public rlvr hooks.

    Each hook receives TRL's implementation as ``trl`` (a callable with the
    arguments already bound, or taking the rollout inputs) and by default just
    calls it, so this class alone behaves exactly like ``GRPOTrainer``.
    """

    # --- private attributes, under public names --------------------------------------------------------------

    @property
    def metric_lists(self) -> dict[str, dict[str, list[float]]]:
        """TRL's per-mode metric lists (``{"train": {name: [values]}}``), averaged and logged at each log step."""
        return self._metrics

    @property
    def completion_log(self) -> dict[str, Any]:
        """TRL's log of prompts and completions (``"prompt"``, ``"completion"`` deques) for its tables."""
        return self._logs

    @property
    def micro_step(self) -> int:
        """Micro-batches (``training_step`` calls) done so far."""
        return self._step

    @property
    def pad_token_id(self) -> int:
        return self._tokenizer.pad_token_id

    @property
    def entropy_bonus_on(self) -> bool:
        return bool(getattr(self, "_entropy_bonus_enabled", False))

    @staticmethod
    def trl_rollout(trainer: GRPOTrainer, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's own rollout of ``inputs`` (generation, rewards, advantages), without rlvr's controls."""
        return GRPOTrainer._generate_and_score_completions(trainer, inputs)

    # --- private methods -> hooks --------------------------------------------------------------------------------

    def _tokenize_prompts(self, prompts):  # noqa: ANN001, ANN202
        return self.tokenize_prompts(partial(super()._tokenize_prompts, prompts))

    def _generate(self, prompts):  # noqa: ANN001, ANN202
        return self.generate_rollouts(partial(super()._generate, prompts))

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # noqa: ANN001, ANN202
        return self.score_rollouts(partial(super()._calculate_rewards, inputs, prompts, completions, completion_ids_list))

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs):  # noqa: ANN001, ANN202
        trl_turn = partial(super()._generate_single_turn, prompt_ids, images, multimodal_fields, num_generations,
                           *args, **kwargs)
        return self.generate_turn(prompt_ids, images, multimodal_fields, trl_turn)

    def _generate_and_score_completions(self, inputs):  # noqa: ANN001, ANN202
        return self.rollout_batch(inputs)

    def _get_per_token_logps_and_entropies(  # noqa: ANN202
        self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False,  # noqa: ANN001
        compute_aux_loss=False, **multimodal,  # noqa: ANN001, ANN003
    ):
        trl_logps = partial(super()._get_per_token_logps_and_entropies, model, input_ids, attention_mask, logits_to_keep,
                            batch_size, compute_entropy, compute_aux_loss, **multimodal)
        extra = any(value is not None for value in multimodal.values()) or compute_aux_loss
        return self.token_logps(model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy,
                                extra, trl_logps)

    def _save_checkpoint(self, model, trial):  # noqa: ANN001, ANN202
        return self.save_checkpoint(partial(super()._save_checkpoint, model, trial))

    def _get_train_sampler(self, dataset=None):  # noqa: ANN001, ANN202
        return self.train_sampler(dataset, partial(super()._get_train_sampler, dataset))

    # --- hooks (TRL's behaviour unless a subclass overrides them) ----------------------------------------------

    def save_checkpoint(self, trl: Callable[[], Any]) -> None:
        """Write ``checkpoint-N`` (weights, optimizer, scheduler, RNG, trainer state) and rotate old ones."""
        trl()

    def train_sampler(self, dataset: Any, trl: Callable[[], Any]) -> Any:
        """The training sampler over ``dataset``: TRL's ``RepeatSampler`` (each prompt ``num_generations`` times in a
        row, generation batches repeated ``num_iterations x steps_per_generation`` times, seeded by ``args.seed``)."""
        return trl()

    def tokenize_prompts(self, trl: Callable[[], Any]) -> Any:
        """(prompt ids per row, images, multimodal fields) for a rollout's prompts, chat templates applied."""
        return trl()

    def generate_rollouts(self, trl: Callable[[], Any]) -> Any:
        """One rollout's generation (tokenizing, turns, tools, decoding, length metrics)."""
        return trl()

    def score_rollouts(self, trl: Callable[[], Any]) -> Any:
        """One rollout's rewards: a (completions x reward functions) tensor gathered over processes."""
        return trl()

    def generate_turn(self, prompt_ids: list[list[int]], images: Any, multimodal_fields: Any,
                      trl: Callable[[], Any]) -> tuple[list[list[int]], Any]:
        """(completion ids per row, sampling log-probs or None) for the rows' prompt ids."""
        return trl()

    def rollout_batch(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """The rollout dict the loss trains on (keys: :data:`KNOWN_KEYS`)."""
        return self.trl_rollout(self, inputs)

    def token_logps(self, model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, batch_size: int | None,
                    compute_entropy: bool, extra_inputs: bool, trl: Callable[[], Any]) -> Any:
        """(per-token log-probs, entropies or None, aux loss or None) of the last ``logits_to_keep`` tokens.

        ``extra_inputs`` is True when TRL passes images or asks for a MoE auxiliary loss.
        """
        return trl()


# ----------------------------------------------------------------------------- the fused LM head on a CPU, in bf16


class Float32Copies:
    """Float32 copies of frozen half-precision tensors (the LM head's weight), made once and reused while the
    tensor is unchanged (same storage, offset, shape and version counter). At most ``size`` are kept."""

    def __init__(self, size: int = 4):
        self.size = size
        self.copies: dict[tuple[Any, ...], Any] = {}

    def of(self, tensor: Any) -> Any:
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape),
               tuple(tensor.stride()), tensor._version)
        copy = self.copies.pop(key, None)
        if copy is None:
            copy = tensor.float()
        self.copies[key] = copy  # most recently used last
        while len(self.copies) > self.size:
            self.copies.pop(next(iter(self.copies)))
        return copy

    def clear(self) -> None:
        self.copies.clear()


@contextlib.contextmanager
def frozen_head_in_float32(copies: Float32Copies) -> Iterator[None]:
    """TRL's fused LM head (``trl.kernels.chunked_logprob``) on a CPU with bf16 weights, without widening the head's
    weight to float32 in every backward tile.

    TRL accumulates each vocabulary chunk's gradient product in float32 (``_addmm_fp32``: rounding each chunk's
    product to bf16 biases training, its docstring says); on a CPU, where ``mm`` has no float32 output for bf16
    inputs, it widens both operands on every call. For SmolLM2 that is the 49,152 x 576 head weight, twice per loss
    piece: ~0.1 s each, most of it page faults on the fresh 75 MB tensor (BENCHMARKS.md). A frozen weight (LoRA
    leaves the head alone) is widened once and reused from ``copies``; the arithmetic is TRL's, so the gradients are
    bit for bit the same. Everything else (CUDA, float32, a trained operand) goes to TRL's function.
    """
    import torch
    from trl.kernels import chunked_logprob as kernel

    original = kernel._addmm_fp32
    half = (torch.bfloat16, torch.float16)

    def addmm_fp32(acc: Any, a: Any, b: Any) -> None:
        if acc.device.type == "cpu" and b.dtype in half and not b.requires_grad and b.numel() >= 1 << 20:
            acc.addmm_(a.float(), copies.of(b))
        else:
            original(acc, a, b)

    kernel._addmm_fp32 = addmm_fp32
    try:
        yield
    finally:
        kernel._addmm_fp32 = original
