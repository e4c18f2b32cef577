"""Leaving the process group at the end of a distributed run, so that every process exits 0.

Under ``rlvr launch`` every process trains, then returns from ``rlvr train`` and exits. One that exits with its
process group still alive leaves the group's teardown to the interpreter's exit, where the communication
backend's destructors may run while the other processes are still working or already gone: a two-process
ZeRO-3 run on a CPU sometimes aborted there (SIGABRT on rank 1 after its verdict), and the launch returned 1
for a run that had finished. :func:`leave_process_group` makes the end explicit: every process waits for the
others (a barrier), then destroys the group, through DeepSpeed's communication module where DeepSpeed joined
the processes (it also drops the groups DeepSpeed keeps), else through torch's.
"""

from __future__ import annotations

import sys


def leave_process_group() -> None:
    """Barrier, then destroy the default process group; nothing when no group was started (one process)."""
    torch = sys.modules.get("torch")  # a run that never imported torch has no group: not imported to find out
    if torch is None:
        return
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return
    dist.barrier()  # no process tears its connections down while another still uses them
    deepspeed_comm = sys.modules.get("deepspeed.comm")
    if deepspeed_comm is not None and deepspeed_comm.is_initialized():
        deepspeed_comm.destroy_process_group()
    else:
        dist.destroy_process_group()
