"""rlvr.training.process_group: a finished run leaves its process group before the interpreter's exit.

The two-process launches (tests/test_launch_ddp.py, tests/test_launch_zero3.py) check it on real runs."""

from __future__ import annotations

import torch.distributed as dist

from rlvr.training.process_group import leave_process_group


def test_a_started_group_is_destroyed_after_the_barrier(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        leave_process_group()
        assert not dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def test_without_a_group_there_is_nothing_to_leave():
    assert not dist.is_initialized()
    leave_process_group()
    assert not dist.is_initialized()
