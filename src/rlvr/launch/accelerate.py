"""The exact ``accelerate launch ... -m rlvr train RECIPE`` command for a run.

:func:`plan_launch` merges three sources, first wins: the flags the user gave,
what the cluster environment says (:mod:`rlvr.launch.cluster`), and this
machine (its GPU count). It returns a :class:`LaunchPlan` that ``--dry-run``
prints and :func:`run_plan` executes; both see the same argv and environment.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rlvr.errors import RlvrError
from rlvr.launch.cluster import ClusterEnv
from rlvr.launch.configs import resolve_config, uses_deepspeed, uses_fsdp

#: Recipe keys the cluster's data and output paths are written to (as ``--set key=value``).
TRAIN_DATA_KEY = "task.data"
OUTPUT_DIR_KEY = "run.output_dir"


@dataclass
class LaunchOptions:
    """What the user asked for; None means "work it out"."""

    recipe: str
    config: str = "ddp"
    num_processes: int | None = None
    num_machines: int | None = None
    machine_rank: int | None = None
    main_process_ip: str | None = None
    main_process_port: int | None = None
    overrides: list[str] = field(default_factory=list)
    #: Passed to ``rlvr train --resume``: "latest" (newest checkpoint in the output dir) or a checkpoint path.
    resume: str | None = None


@dataclass
class LaunchPlan:
    """A command and the environment variables it adds; ``shell()`` is what ``--dry-run`` prints."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    config_path: Path | None = None
    on_cpu: bool = False
    recipe: str = ""
    overrides: list[str] = field(default_factory=list)

    def shell(self) -> str:
        prefix = " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(self.env.items()))
        return f"{prefix} {shlex.join(self.argv)}" if prefix else shlex.join(self.argv)


def local_gpu_count() -> int:
    """CUDA GPUs visible on this machine (0 without torch's CUDA build)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def plan_launch(options: LaunchOptions, cluster: ClusterEnv, gpus: int | None = None) -> LaunchPlan:
    """Build the launch command; ``gpus`` (GPUs on this machine) is probed when neither it nor the cluster says."""
    config_path = resolve_config(options.config)
    if gpus is None:
        gpus = cluster.gpus_per_machine if cluster.gpus_per_machine is not None else local_gpu_count()
    num_machines = options.num_machines or cluster.num_machines
    machine_rank = options.machine_rank if options.machine_rank is not None else cluster.machine_rank
    main_ip = options.main_process_ip or cluster.main_process_ip
    main_port = options.main_process_port or cluster.main_process_port
    num_processes = options.num_processes or max(gpus, 1) * num_machines
    _check_topology(num_processes, num_machines, machine_rank, main_ip)

    argv = ["accelerate", "launch", "--config_file", str(config_path), "--num_processes", str(num_processes)]
    if num_machines > 1:
        argv += ["--num_machines", str(num_machines), "--machine_rank", str(machine_rank)]
        argv += ["--main_process_ip", str(main_ip), "--main_process_port", str(main_port)]
    elif options.main_process_port:
        argv += ["--main_process_port", str(options.main_process_port)]
    env: dict[str, str] = {}
    on_cpu = gpus == 0
    if on_cpu:
        # Same processes, gloo instead of NCCL; no bf16 autocast on CPU. DeepSpeed configs leave out
        # ACCELERATE_USE_CPU: Accelerate would then skip DeepSpeed; DeepSpeed's own CPU accelerator joins with gloo.
        if config_path is None or not uses_deepspeed(config_path):
            env["ACCELERATE_USE_CPU"] = "true"
        argv += ["--mixed_precision", "no"]
    argv += ["-m", "rlvr", "train", options.recipe]
    if options.resume:
        argv += ["--resume", options.resume]
    overrides = cluster_overrides(cluster, options.overrides) + options.overrides
    for override in overrides:
        argv += ["--set", override]
    return LaunchPlan(argv, env, config_path, on_cpu, options.recipe, overrides)


def cluster_overrides(cluster: ClusterEnv, user_overrides: list[str]) -> list[str]:
    """``key=value`` settings the cluster implies (data, output dir), unless the user set the key."""
    given = {item.split("=", 1)[0].strip() for item in user_overrides}
    implied = {TRAIN_DATA_KEY: cluster.train_data, OUTPUT_DIR_KEY: cluster.run_output_dir}
    return [f"{key}={value}" for key, value in implied.items() if value and key not in given]


def _check_topology(num_processes: int, num_machines: int, machine_rank: int, main_ip: str | None) -> None:
    if num_processes < 1 or num_machines < 1:
        raise RlvrError("--num-processes and --num-machines must be at least 1.")
    if not 0 <= machine_rank < num_machines:
        raise RlvrError(f"--machine-rank must lie in 0..{num_machines - 1} for {num_machines} machine(s), got {machine_rank}.")
    if num_processes % num_machines:
        raise RlvrError(
            f"--num-processes ({num_processes}) counts processes on all machines and must be a multiple of "
            f"--num-machines ({num_machines})."
        )
    if num_machines > 1 and not main_ip:
        raise RlvrError("several machines need --main-process-ip (the address of the machine with rank 0).")


def check_runnable(plan: LaunchPlan) -> None:
    """Fail with one line before starting processes that cannot run here (dry runs skip this).

    Checks the config's needs, and that the recipe exists, parses and asks for no generation
    engine this machine lacks, once here rather than in every launched process. (Full recipe
    validation, which imports TRL, happens in ``rlvr train``; skipping it here keeps start-up short.)
    """
    from rlvr.config import recipe_data
    from rlvr.launch.engines import check_generation_engine

    if plan.on_cpu and plan.config_path is not None and uses_fsdp(plan.config_path):
        # Accelerate turns FSDP on for accelerator devices only: on a CPU the processes would run plain DDP.
        raise RlvrError(
            f"config {plan.config_path.stem} runs FSDP, which Accelerate runs on GPUs only (on this CPU machine it "
            "would quietly be plain DDP): use --config ddp, zero2 or zero3 here."
        )
    if plan.config_path is not None and uses_deepspeed(plan.config_path):
        if importlib.util.find_spec("deepspeed") is None:
            raise RlvrError(
                f"config {plan.config_path.stem} runs DeepSpeed, which is not installed: pip install 'rlvr[deepspeed]'."
            )
    data = recipe_data(plan.recipe, plan.overrides).data  # its base chain merged (rlvr.recipe_base)
    grpo = data.get("grpo") or {}
    if isinstance(grpo, dict):  # a malformed section is reported by rlvr train's full validation
        check_generation_engine(grpo)


def run_plan(plan: LaunchPlan) -> int:
    """Check, show and run the command with this interpreter's ``accelerate`` first on PATH; return its exit code."""
    check_runnable(plan)
    print(f"rlvr: {plan.shell()}", file=sys.stderr, flush=True)
    env = {**os.environ, **plan.env}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return subprocess.run(plan.argv, env=env, check=False).returncode
