"""Cluster environment -> launch arguments, so one recipe runs unchanged anywhere.

:func:`detect_cluster` reads an environment mapping (``os.environ`` in real use, a
plain dict in tests) and says how many machines take part, which one this is,
where the main process listens, how many GPUs each machine has, and where data
and outputs live. It knows three schedulers, checked in this order:

- **SageMaker training jobs**: ``SM_HOSTS`` (JSON list), ``SM_CURRENT_HOST``,
  ``SM_NUM_GPUS``, ``SM_CHANNEL_TRAIN`` / ``SM_CHANNEL_VAL``, ``SM_MODEL_DIR``,
  and the checkpoint directory ``/opt/ml/checkpoints`` when it exists (SageMaker
  creates it only when the job has checkpoint S3 sync).
- **torchrun-style variables** (Kubeflow PyTorchJob, Volcano, a hand-written
  launcher): ``MASTER_ADDR`` / ``MASTER_PORT`` with ``WORLD_SIZE``. With
  ``LOCAL_WORLD_SIZE`` the sizes count processes (machines = WORLD_SIZE /
  LOCAL_WORLD_SIZE); without it they count machines, one launcher per machine.
- **Slurm**: ``SLURM_JOB_NUM_NODES`` / ``SLURM_NNODES``, ``SLURM_NODEID``,
  ``SLURM_JOB_NODELIST`` (compressed forms such as ``node[01-03,07]`` are
  expanded), ``SLURM_GPUS_ON_NODE`` / ``SLURM_GPUS_PER_NODE``. Run one
  ``rlvr launch`` per node (``srun --ntasks-per-node=1``).

Anything else is a plain local machine. The function is pure: the filesystem
probe is injected, and nothing is read from the real environment.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rlvr.errors import RlvrError

DEFAULT_PORT = 29500
SAGEMAKER_CHECKPOINT_DIR = "/opt/ml/checkpoints"


@dataclass(frozen=True)
class ClusterEnv:
    """What the scheduler says about this run; None where it says nothing."""

    scheduler: str = "local"
    num_machines: int = 1
    machine_rank: int = 0
    main_process_ip: str | None = None
    main_process_port: int | None = None
    gpus_per_machine: int | None = None
    train_data: str | None = None
    val_data: str | None = None
    output_dir: str | None = None
    checkpoint_dir: str | None = None
    network_interface: str | None = None

    @property
    def num_processes(self) -> int | None:
        """Processes across all machines (one per GPU), when the GPU count is known."""
        if self.gpus_per_machine is None:
            return None
        return max(self.gpus_per_machine, 1) * self.num_machines

    @property
    def run_output_dir(self) -> str | None:
        """Where the run writes: the synced checkpoint directory when there is one, else the model dir."""
        return self.checkpoint_dir or self.output_dir


def detect_cluster(env: Mapping[str, str], is_dir: Callable[[str], bool] = os.path.isdir) -> ClusterEnv:
    """Launch facts from ``env``; ``is_dir`` probes the filesystem (injected for tests)."""
    if "SM_HOSTS" in env or "SM_CURRENT_HOST" in env:
        return _sagemaker(env, is_dir)
    if "MASTER_ADDR" in env and "WORLD_SIZE" in env:
        return _torchrun(env)
    if "SLURM_JOB_ID" in env and ("SLURM_JOB_NUM_NODES" in env or "SLURM_NNODES" in env):
        return _slurm(env)
    return ClusterEnv()


def _sagemaker(env: Mapping[str, str], is_dir: Callable[[str], bool]) -> ClusterEnv:
    try:
        hosts = json.loads(env.get("SM_HOSTS", "[]"))
    except json.JSONDecodeError:
        raise RlvrError(f"SM_HOSTS is not a JSON list of host names: {env['SM_HOSTS']!r}.") from None
    current = env.get("SM_CURRENT_HOST", "")
    if not hosts:
        hosts = [current] if current else ["localhost"]
    if current and current not in hosts:
        raise RlvrError(f"SM_CURRENT_HOST '{current}' is not one of SM_HOSTS {hosts}.")
    return ClusterEnv(
        scheduler="sagemaker",
        num_machines=len(hosts),
        machine_rank=hosts.index(current) if current else 0,
        main_process_ip=hosts[0],
        main_process_port=_int(env, "MASTER_PORT", DEFAULT_PORT),
        gpus_per_machine=_int(env, "SM_NUM_GPUS", None),
        train_data=env.get("SM_CHANNEL_TRAIN"),
        val_data=env.get("SM_CHANNEL_VAL"),
        output_dir=env.get("SM_MODEL_DIR"),
        checkpoint_dir=SAGEMAKER_CHECKPOINT_DIR if is_dir(SAGEMAKER_CHECKPOINT_DIR) else None,
        network_interface=env.get("SM_NETWORK_INTERFACE_NAME"),
    )


def _torchrun(env: Mapping[str, str]) -> ClusterEnv:
    world = _int(env, "WORLD_SIZE", 1)
    local = _int(env, "LOCAL_WORLD_SIZE", None)
    if local:
        if world % local:
            raise RlvrError(f"WORLD_SIZE {world} is not a multiple of LOCAL_WORLD_SIZE {local}.")
        machines = world // local
        default_rank = _int(env, "RANK", 0) // local
    else:
        machines, default_rank = world, _int(env, "RANK", 0)
    rank = _int(env, "GROUP_RANK", None)
    if rank is None:
        rank = _int(env, "NODE_RANK", default_rank)
    return ClusterEnv(
        scheduler="torchrun",
        num_machines=machines,
        machine_rank=rank,
        main_process_ip=env["MASTER_ADDR"],
        main_process_port=_int(env, "MASTER_PORT", DEFAULT_PORT),
        gpus_per_machine=local,
    )


def _slurm(env: Mapping[str, str]) -> ClusterEnv:
    nodes = _int(env, "SLURM_JOB_NUM_NODES", None) or _int(env, "SLURM_NNODES", 1)
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
    hosts = expand_nodelist(nodelist) if nodelist else []
    return ClusterEnv(
        scheduler="slurm",
        num_machines=nodes,
        machine_rank=_int(env, "SLURM_NODEID", 0),
        main_process_ip=env.get("MASTER_ADDR") or (hosts[0] if hosts else None),
        main_process_port=_int(env, "MASTER_PORT", DEFAULT_PORT),
        gpus_per_machine=_slurm_gpus(env),
    )


def _slurm_gpus(env: Mapping[str, str]) -> int | None:
    """GPUs on this node: SLURM_GPUS_ON_NODE, else SLURM_GPUS_PER_NODE (``4`` or ``a100:4``)."""
    if "SLURM_GPUS_ON_NODE" in env:
        return _int(env, "SLURM_GPUS_ON_NODE", None)
    per_node = env.get("SLURM_GPUS_PER_NODE")
    if per_node:
        count = per_node.split("(")[0].rsplit(":", 1)[-1]
        if count.isdigit():
            return int(count)
    return None


_BRACKET = re.compile(r"\[([^\]]*)\]")


def expand_nodelist(nodelist: str) -> list[str]:
    """Expand Slurm's compressed host list: ``gpu[01-03,07],login1`` -> gpu01 gpu02 gpu03 gpu07 login1."""
    hosts: list[str] = []
    for item in _split_top_level(nodelist):
        hosts.extend(_expand_item(item))
    return hosts


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets."""
    items, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current += char
    items.append(current)
    return [item.strip() for item in items if item.strip()]


def _expand_item(item: str) -> list[str]:
    """One host pattern, possibly with several bracket groups (their product is taken)."""
    parts = _BRACKET.split(item)  # literal, ranges, literal, ranges, ...
    choices: list[list[str]] = []
    for index, part in enumerate(parts):
        choices.append(_expand_ranges(part, item) if index % 2 else [part])
    return ["".join(combo) for combo in itertools.product(*choices)]


def _expand_ranges(spec: str, item: str) -> list[str]:
    """``01-03,07`` -> 01 02 03 07 (zero padding kept)."""
    values = []
    for piece in spec.split(","):
        low, _, high = piece.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise RlvrError(f"cannot read Slurm node list entry '{item}'.")
        if not high:
            values.append(low)
            continue
        width = len(low)
        values.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return values


def _int(env: Mapping[str, str], key: str, default: int | None) -> int | None:
    value = env.get(key)
    if value is None or str(value).strip() == "":
        return default
    try:
        return int(str(value).strip())
    except ValueError:
        raise RlvrError(f"environment variable {key} must be an integer, got {value!r}.") from None
