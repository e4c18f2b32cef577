"""Zero-variance group handling and advantage clipping act on TRL's rollout dict as documented."""

import pytest
import torch

from rlvr.errors import RlvrError
from rlvr.training.controls import (
    Controls,
    clip_advantages,
    drop_rows,
    group_rows,
    splice_rows,
    zero_variance_groups,
)


def rollout(rows: int, prompt_width: int, completion_width: int, fill: int) -> dict:
    return {
        "prompt_ids": torch.full((rows, prompt_width), fill),
        "prompt_mask": torch.ones(rows, prompt_width, dtype=torch.long),
        "completion_ids": torch.full((rows, completion_width), fill),
        "completion_mask": torch.ones(rows, completion_width, dtype=torch.long),
        "advantages": torch.arange(rows, dtype=torch.float32) + fill,
        "num_items_in_batch": torch.tensor(rows * completion_width),
    }


def test_zero_variance_groups_flags_groups_whose_rewards_are_all_equal():
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.5, 0.5])
    assert zero_variance_groups(rewards, 4).tolist() == [False, False]
    assert zero_variance_groups(rewards, 2).tolist() == [True, False, False, True]


def test_clip_advantages_bounds_them_and_reports_the_share_clipped():
    clipped, share = clip_advantages(torch.tensor([2.47, -0.35, -0.35, -3.0]), 1.0)
    assert clipped.tolist() == pytest.approx([1.0, -0.35, -0.35, -1.0])
    assert share == 0.5


def test_no_clip_leaves_advantages_unchanged():
    advantages = torch.tensor([2.47, -0.35])
    assert clip_advantages(advantages, None)[0] is advantages


def test_drop_rows_masks_dropped_completions_out_of_the_loss_and_its_token_count():
    batch = drop_rows(rollout(4, 3, 5, 1), torch.tensor([True, True, False, False]))
    assert batch["completion_mask"].sum(dim=1).tolist() == [0, 0, 5, 5]
    assert batch["advantages"].tolist() == [0.0, 0.0, 3.0, 4.0]
    assert int(batch["num_items_in_batch"]) == 10


def test_splice_rows_replaces_rows_and_repads_prompts_left_and_completions_right():
    batch, fresh = rollout(4, 2, 3, 1), rollout(2, 4, 5, 7)
    splice_rows(batch, fresh, [2, 3], [0, 1], pad_id=0)
    assert batch["prompt_ids"].shape == (4, 4) and batch["completion_ids"].shape == (4, 5)
    assert batch["prompt_ids"][0].tolist() == [0, 0, 1, 1]  # old rows padded on the left
    assert batch["completion_mask"][0].tolist() == [1, 1, 1, 0, 0]  # and masked on the right
    assert batch["prompt_ids"][3].tolist() == [7, 7, 7, 7]
    assert batch["advantages"].tolist() == [1.0, 2.0, 7.0, 8.0]
    assert int(batch["num_items_in_batch"]) == 2 * 3 + 2 * 5


def test_group_rows_lists_the_rows_of_consecutive_groups():
    assert group_rows([0, 2], 3) == [0, 1, 2, 6, 7, 8]


@pytest.mark.parametrize(
    "options", [{"zero_variance_groups": "ignore"}, {"advantage_clip": 0}, {"resample_attempts": -1}]
)
def test_invalid_controls_are_rejected_with_a_clear_error(options):
    with pytest.raises(RlvrError):
        Controls(**options)
