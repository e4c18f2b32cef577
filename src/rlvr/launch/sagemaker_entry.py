"""Entry point of an rlvr SageMaker training job (copied into the job's source as ``rlvr_entry.py``).

SageMaker runs ``python rlvr_entry.py [rlvr launch arguments]`` on every instance,
in the job's code directory, after installing its requirements.txt. This script
puts the staged rlvr package on the path (for the launched processes too), points
NCCL at the instance's network interface, runs ``rlvr launch`` (which reads the
SageMaker environment: hosts, rank, GPUs, channels, checkpoint dir; with ``--resume`` when
the synced checkpoint dir already holds a checkpoint, as after a spot interruption), and finally,
on the main instance, copies the finished run from the synced checkpoint
directory into SM_MODEL_DIR so it becomes the job's model artifact.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def use_staged_package(env: dict[str, str]) -> None:
    staged = HERE / "src"
    if (staged / "rlvr").is_dir():
        sys.path.insert(0, str(staged))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(staged), env.get("PYTHONPATH", "")) if p)


def publish_model(run_dir: str, model_dir: str) -> None:
    """Copy the run's final files (not its intermediate checkpoint-N folders) into the model directory."""
    for item in Path(run_dir).iterdir():
        target = Path(model_dir) / item.name
        if item.is_dir() and not item.name.startswith("checkpoint-"):
            shutil.copytree(item, target, dirs_exist_ok=True)
        elif item.is_file():
            shutil.copy2(item, target)


def main(argv: list[str]) -> int:
    use_staged_package(os.environ)  # type: ignore[arg-type]
    if os.environ.get("SM_NETWORK_INTERFACE_NAME"):
        os.environ.setdefault("NCCL_SOCKET_IFNAME", os.environ["SM_NETWORK_INTERFACE_NAME"])
    from rlvr.cli import main as rlvr_main
    from rlvr.launch.cluster import detect_cluster

    cluster = detect_cluster(os.environ)
    if cluster.checkpoint_dir and "--resume" not in argv and _resumable(Path(cluster.checkpoint_dir)):
        argv = ["--resume", *argv]  # a restarted job (spot interruption, retry) continues from the synced checkpoint
    code = rlvr_main(["launch", *argv])
    if code == 0 and cluster.machine_rank == 0 and cluster.checkpoint_dir and cluster.output_dir:
        publish_model(cluster.checkpoint_dir, cluster.output_dir)
    return code


def _resumable(checkpoint_dir: Path) -> bool:
    """A complete checkpoint to continue from (one cut short by the interruption does not count)."""
    from rlvr.checkpoints import latest_checkpoint

    return latest_checkpoint(checkpoint_dir) is not None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

