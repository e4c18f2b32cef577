"""The Accelerate configs rlvr ships, resolvable by name.

They live in ``rlvr/configs/accelerate/`` inside the package (``configs/`` at the
repository root points there), so ``--config zero3`` works from a checkout and
from an installed wheel alike. A path to any other Accelerate YAML works too.
"""

from __future__ import annotations

from pathlib import Path

from rlvr.errors import RlvrError
from rlvr.registry import Registry

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs" / "accelerate"

#: One line per config, shown by ``rlvr launch --list-configs``.
DESCRIPTIONS = {
    "ddp": "data parallel (PyTorch DDP); whole model on every process; CPU (gloo) when no GPU",
    "zero1": "DeepSpeed ZeRO-1: optimizer states sharded",
    "zero2": "DeepSpeed ZeRO-2: optimizer states and gradients sharded",
    "zero3": "DeepSpeed ZeRO-3: parameters, gradients, optimizer states sharded; bf16; 16-bit model saved",
    "fsdp": "PyTorch FSDP2: parameters sharded per transformer block; GPUs only",
}

ACCELERATE_CONFIGS: Registry[Path] = Registry("accelerate config")
for _name in DESCRIPTIONS:
    ACCELERATE_CONFIGS.register(_name)(CONFIG_DIR / f"{_name}.yaml")

#: Configs that need the ``deepspeed`` package at run time.
DEEPSPEED_CONFIGS = ("zero1", "zero2", "zero3")


def resolve_config(name_or_path: str) -> Path:
    """A shipped config by name (``zero3``), or an existing Accelerate YAML file by path."""
    if name_or_path in ACCELERATE_CONFIGS:
        return ACCELERATE_CONFIGS.get(name_or_path)
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml", ".json"):
        if not candidate.is_file():
            raise RlvrError(f"accelerate config file '{name_or_path}' does not exist.")
        return candidate.resolve()
    return ACCELERATE_CONFIGS.get(name_or_path)  # raises, listing the valid names


def uses_deepspeed(config_path: Path) -> bool:
    """Whether an Accelerate config runs DeepSpeed (read from the file, so custom configs count too)."""
    return _distributed_type(config_path) == "DEEPSPEED"


def uses_fsdp(config_path: Path) -> bool:
    """Whether an Accelerate config runs FSDP (read from the file, so custom configs count too)."""
    return _distributed_type(config_path) == "FSDP"


def _distributed_type(config_path: Path) -> str:
    import yaml

    data = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    return str(data.get("distributed_type", "")).upper()
