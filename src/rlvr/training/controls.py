"""Practitioners' controls on GRPO's advantages: zero-variance groups and advantage clipping.

GRPO's advantage is a completion's reward minus its group's mean (divided by
the group's std with ``scale_rewards: group``). A group whose completions all
earn the same reward has advantage 0 everywhere: it costs a full rollout and
teaches nothing. Three ways to handle such groups (``run.zero_variance_groups``):

* ``keep`` (TRL's behaviour): they stay in the batch with advantage 0, and
  their tokens still count in the loss normaliser (``dapo``/``bnpo``), diluting
  the groups that do carry signal.
* ``drop``: their completions are masked out of the loss and the normaliser, so
  the update is made of informative groups only.
* ``resample`` (DAPO's dynamic sampling): fresh prompts are drawn from the
  training set and rolled out in their place, up to ``run.resample_attempts``
  extra rollouts per step; groups still without variance are then dropped.

``run.advantage_clip`` bounds |advantage|: in a group of 8 where one sample is
right, scaled advantages are +2.47 for it and -0.35 for the rest; a clip limits
how far one lucky sample can move the policy.

The functions here act on TRL's rollout dict (its keys: :mod:`rlvr.training.trl_compat`),
so TRL's own loss runs unchanged on the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from rlvr.errors import RlvrError
from rlvr.training.trl_compat import BATCH_KEYS, LEFT_PADDED, RIGHT_PADDED, ROW_KEYS

ZERO_VARIANCE_MODES = ("keep", "drop", "resample")
_MASKS = ("completion_mask", "tool_mask")


@dataclass
class Controls:
    """What the trainer does to each rollout batch's advantages before TRL's loss."""

    zero_variance_groups: str = "keep"
    resample_attempts: int = 2
    advantage_clip: float | None = None

    def __post_init__(self) -> None:
        if self.zero_variance_groups not in ZERO_VARIANCE_MODES:
            raise RlvrError(
                f"run.zero_variance_groups must be one of {', '.join(ZERO_VARIANCE_MODES)}, "
                f"got {self.zero_variance_groups!r}."
            )
        if self.resample_attempts < 0:
            raise RlvrError("run.resample_attempts must be 0 or more.")
        if self.advantage_clip is not None and self.advantage_clip <= 0:
            raise RlvrError("run.advantage_clip must be a positive number (or null for no clipping).")


def zero_variance_groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """One bool per group: True when every completion of the group earned the same total reward."""
    grouped = torch.nan_to_num(rewards.float(), nan=0.0).view(-1, group_size)
    spread = grouped.max(dim=1).values - grouped.min(dim=1).values
    return torch.isclose(spread, torch.zeros_like(spread))


def clip_advantages(advantages: torch.Tensor, limit: float | None) -> tuple[torch.Tensor, float]:
    """(advantages clamped to [-limit, limit], share of completions that were clipped)."""
    if limit is None or advantages.numel() == 0:
        return advantages, 0.0
    clipped = advantages.abs() > limit
    return advantages.clamp(-limit, limit), clipped.float().mean().item()


def drop_rows(batch: dict[str, Any], drop: torch.Tensor) -> dict[str, Any]:
    """Mask the completions where ``drop`` is True out of the loss and its token normaliser."""
    keep = (~drop).to(batch["completion_mask"].dtype).unsqueeze(1)
    for key in _MASKS:
        if key in batch:
            batch[key] = batch[key] * keep.to(batch[key].dtype)
    batch["advantages"] = batch["advantages"] * (~drop).to(batch["advantages"].dtype)
    batch["num_items_in_batch"] = loss_tokens(batch)
    return batch


def loss_tokens(batch: dict[str, Any]) -> torch.Tensor:
    mask = batch["completion_mask"]
    if "tool_mask" in batch:
        mask = mask * batch["tool_mask"]
    return mask.sum()


def unspliceable_keys(batch: dict[str, Any]) -> list[str]:
    """Keys of a rollout dict that :func:`splice_rows` cannot move row by row (image inputs, unknown keys)."""
    return sorted(set(batch) - set(LEFT_PADDED + RIGHT_PADDED + ROW_KEYS + BATCH_KEYS))


def splice_rows(batch: dict[str, Any], source: dict[str, Any], rows: list[int], source_rows: list[int], pad_id: int) -> dict[str, Any]:
    """Replace ``batch``'s ``rows`` with ``source``'s ``source_rows``, re-padding both to a common width."""
    if not rows:
        return batch
    target = torch.tensor(rows, device=batch["advantages"].device)
    taken = torch.tensor(source_rows, device=batch["advantages"].device)
    for key in batch:
        if key == "num_items_in_batch" or key not in source:
            continue
        left = key in LEFT_PADDED
        fill = pad_id if key.endswith("_ids") else 0
        mine, theirs = batch[key], source[key]
        if mine.dim() == 2:
            width = max(mine.size(1), theirs.size(1))
            mine, theirs = _pad(mine, width, left, fill), _pad(theirs, width, left, fill)
        mine = mine.clone()
        mine[target] = theirs[taken].to(mine.dtype)
        batch[key] = mine
    batch["num_items_in_batch"] = loss_tokens(batch)
    return batch


def _pad(tensor: torch.Tensor, width: int, left: bool, value: float) -> torch.Tensor:
    missing = width - tensor.size(1)
    if missing <= 0:
        return tensor
    filler = torch.full((tensor.size(0), missing), value, dtype=tensor.dtype, device=tensor.device)
    return torch.cat([filler, tensor] if left else [tensor, filler], dim=1)


def group_rows(groups: list[int], group_size: int) -> list[int]:
    """The row indices of ``groups`` (groups are consecutive runs of ``group_size`` rows)."""
    return [g * group_size + i for g in groups for i in range(group_size)]
