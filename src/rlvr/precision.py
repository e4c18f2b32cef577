"""The floating-point precision a run computes in, chosen once from the recipe and the hardware.

``model.dtype: auto`` means bfloat16 where the processor multiplies bf16 matrices in hardware, and float32
elsewhere. On a CPU that is a capability, read from the flags the kernel reports (``avx512_bf16`` or
``amx_bf16`` on x86, ``bf16`` on Arm), never the vendor: such a CPU multiplies bf16 matrices about twice as fast
as float32 ones (BENCHMARKS.md, "bf16 on the CPU's bf16 units"). Without those units bf16 is emulated, slower
than float32, so ``auto`` keeps float32 and says so.

Under bf16 only the frozen base weights are bf16: the LoRA weights, their gradients and the optimizer's state
stay float32 (peft keeps adapters of a half-precision model in float32), so Adam's small updates are not
rounded away. Runs that train every weight (``model.lora: false``) or load 4-bit weights on a CPU keep float32
under ``auto``. On a GPU ``auto`` is bfloat16 where supported, else float16, as before.

``RLVR_CPU_BF16=0`` makes this machine's CPU count as one without bf16 units (``1``: as one with them), to see
what a float32-only CPU gets.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

DTYPES = ("auto", "float32", "bfloat16", "float16")
#: CPU flags (``/proc/cpuinfo``) that mean bf16 matrix products run in hardware.
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16", "bf16")
ENV_OVERRIDE = "RLVR_CPU_BF16"


@dataclass(frozen=True)
class Precision:
    """The precision chosen: ``dtype`` of the base weights, where, and why."""

    dtype: str  # float32, bfloat16 or float16: the base weights, and so generation and the loss's matmuls
    requested: str  # model.dtype as the recipe gives it
    device: str  # cpu or cuda
    reason: str  # one phrase: why this dtype
    adapters: str | None = None  # the trainable (LoRA) weights' dtype, when they differ from dtype
    warning: str | None = None  # something the user should know (bf16 forced on a CPU that emulates it)

    def line(self) -> str:
        """The one line a run prints at its start."""
        weights = f"{self.dtype} weights" + (f", LoRA and optimizer in {self.adapters}" if self.adapters else "")
        return f"rlvr: precision: {weights} ({self.reason})"

    def summary(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}

    def torch_dtype(self) -> Any:
        import torch

        return getattr(torch, self.dtype)


def choose(requested: str = "auto", *, trains_base: bool = False, four_bit: bool = False,
           cuda: bool | None = None) -> Precision:
    """The precision for ``model.dtype`` = ``requested`` on this machine.

    ``trains_base``: every base weight is trained (no LoRA), so ``auto`` keeps them float32 on a CPU.
    ``four_bit``: QLoRA weights; on a CPU they compute in float32 under ``auto`` (bitsandbytes' CPU path).
    """
    if requested not in DTYPES:
        from rlvr.errors import RlvrError

        raise RlvrError(f"model.dtype must be one of {', '.join(DTYPES)}, got {requested!r}.")
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    if cuda:
        return _on_gpu(requested)
    adapters = None if trains_base else "float32"
    feature = cpu_bf16_feature()
    if requested == "auto":
        if trains_base:
            return Precision("float32", requested, "cpu", "auto: every weight is trained, and bf16 weights would "
                             "round the optimizer's updates away")
        if four_bit:
            return Precision("float32", requested, "cpu", "auto: 4-bit weights compute in float32 on a CPU")
        if feature:
            return Precision("bfloat16", requested, "cpu", f"auto: this CPU multiplies bf16 in hardware ({feature})",
                             adapters)
        return Precision("float32", requested, "cpu", f"auto: this CPU has no bf16 units ({_flags_looked_for()} "
                         "not found), so float32 as before")
    if requested == "bfloat16" and not feature:
        return Precision("bfloat16", requested, "cpu", "model.dtype", adapters,
                         warning=f"model.dtype is bfloat16 but this CPU has no bf16 units ({_flags_looked_for()} not "
                                 "found): bf16 is emulated, usually slower than float32 (model.dtype: auto chooses)")
    return Precision(requested, requested, "cpu", "model.dtype",
                     adapters if requested in ("bfloat16", "float16") else None)


def loss_piece_rows(setting: int | str, precision: Precision) -> int:
    """``run.loss_chunk_rows`` as a number: ``auto`` is 2 completions per piece with float32 weights and 4 with
    half-precision ones, whose activations take half the memory (the CPU default peaks at ~2.2 GB either way)."""
    if setting != "auto":
        return int(setting)
    return 2 if precision.dtype == "float32" else 4


def _on_gpu(requested: str) -> Precision:
    import torch

    if requested != "auto":
        return Precision(requested, requested, "cuda", "model.dtype")
    if torch.cuda.is_bf16_supported():
        return Precision("bfloat16", requested, "cuda", "auto: this GPU supports bf16")
    return Precision("float16", requested, "cuda", "auto: this GPU has no bf16, float16 instead")


def cpu_bf16_feature() -> str | None:
    """The CPU flag that says bf16 matrix products run in hardware, or None (``RLVR_CPU_BF16`` overrides)."""
    override = os.environ.get(ENV_OVERRIDE, "").strip().lower()
    if override in ("0", "false", "no", "off"):
        return None
    if override in ("1", "true", "yes", "on"):
        return f"{ENV_OVERRIDE}={override}"
    return _detected_feature()


@functools.lru_cache(maxsize=1)
def _detected_feature() -> str | None:
    flags = cpu_flags()
    found = next((flag for flag in CPU_BF16_FLAGS if flag in flags), None)
    if found or flags:
        return found
    return _torch_says()  # no /proc/cpuinfo (not Linux): ask torch's own CPU checks


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags (x86 ``flags``, Arm ``Features``); empty when the file cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return flags


def _torch_says() -> str | None:
    import torch

    checks = (("amx_bf16", "_is_amx_tile_supported"), ("avx512_bf16", "_is_avx512_bf16_supported"))
    for name, check in checks:
        probe = getattr(torch.cpu, check, None)
        try:
            if probe is not None and probe():
                return name
        except Exception:  # a private helper that changed: no answer from it
            continue
    return None


def _flags_looked_for() -> str:
    return ", ".join(CPU_BF16_FLAGS)


def announce(precision: Precision, main_process: bool = True) -> None:
    """Print the precision line (and its warning) once, from the main process."""
    if not main_process:
        return
    print(precision.line(), file=sys.stderr, flush=True)
    if precision.warning:
        print(f"rlvr: warning: {precision.warning}", file=sys.stderr, flush=True)
