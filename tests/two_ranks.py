"""Two gloo processes on CPU for the multi-process loss tests: their launch and their fixed micro-batches.

Used by ``test_ddp_piecewise_loss.py`` / ``test_deepspeed_piecewise_loss.py`` (the launch) and by their workers,
``ddp_piecewise_worker.py`` / ``deepspeed_piecewise_worker.py`` (the micro-batches); not a test module itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_environment(src: Path, **extra: str) -> dict[str, str]:
    """The environment both ranks share: rlvr's sources first, a free local port, two processes, CPU, one thread."""
    return {
        **os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
        "CUDA_VISIBLE_DEVICES": "", "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1", **extra,
    }


def run_two_ranks(worker: Path, args: list[str], env: dict[str, str], cwd: Path, label: str) -> list[Any]:
    """Run ``worker`` as ranks 0 and 1 and return what each saved as ``cwd/rank-R.pt``; a failed rank fails with both logs."""
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, str(worker), *args], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                              cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(2)]
    logs = []
    for proc in procs:
        try:
            logs.append(proc.communicate(timeout=600)[0])
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            raise
    assert [p.returncode for p in procs] == [0, 0], "\n".join(log[-4000:] for log in logs)
    print(f"two {label} ranks ran in {time.monotonic() - start:.0f} s")
    return [torch.load(cwd / f"rank-{r}.pt", weights_only=False) for r in range(2)]


def fixed_micro_batches(batch: dict[str, Any], rank: int) -> list[dict[str, Any]]:
    """``batch`` (one rollout) split into two micro-batches with fixed advantages, as TRL shuffles and splits it, such
    that the ranks run different numbers of pieces: on rank 1 one group has all-zero advantages in the first and
    nothing is learned in the second (the one that ends the step); on rank 0 one row is dropped in the second."""
    rows = batch["completion_ids"].size(0)
    order = torch.randperm(rows, generator=torch.Generator().manual_seed(2 + rank))
    micros = []
    for part, picked in enumerate(order.chunk(2)):
        micro = {k: v[picked].clone() if torch.is_tensor(v) and v.dim() > 0 and v.size(0) == rows else v
                 for k, v in batch.items()}
        micro["advantages"] = torch.randn(len(picked), generator=torch.Generator().manual_seed(10 * rank + part))
        if rank == 1 and part == 0:  # one group (every row of the first row's prompt): all-zero advantages
            same = (micro["prompt_ids"] == micro["prompt_ids"][0]).all(dim=1)
            micro["advantages"][same] = 0.0
        if rank == 1 and part == 1:
            micro["advantages"].zero_()
        if rank == 0 and part == 1:
            micro["completion_mask"][1] = 0
        micros.append(micro)
    return micros


#: The tiny run both workers build: one optimizer step of two micro-batches, 4 prompts x 4 completions per rank.
TINY_RUN = [
    "model.dtype=float32", "task.train_size=16", "task.shots=1",
    "grpo.max_steps=1", "grpo.per_device_train_batch_size=8", "grpo.num_generations=4",
    "grpo.steps_per_generation=2", "grpo.gradient_accumulation_steps=2", "grpo.max_completion_length=12",
    "grpo.save_strategy=no", "grpo.report_to=[]", "run.eval_items=0", "run.keep_best=false", "grpo.beta=0.0",
]


def tiny_run(model_dir: str, out_dir: str, *extra: str) -> list[str]:
    """The recipe overrides of the workers' run on the tiny model in ``model_dir``, writing under ``out_dir``."""
    return [f"model.name_or_path={model_dir}", *TINY_RUN, f"run.output_dir={out_dir}/run", *extra]
