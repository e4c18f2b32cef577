"""rlvr: reinforcement learning with verifiable rewards on TRL's GRPOTrainer."""

import os as _os

# oneDNN (PyTorch's bf16 matrix products on a CPU) keeps up to 1,024 compiled kernels, one per shape, with their
# buffers; decoding meets a new shape at every token length, and with the default cache a bf16 run's memory grew
# ~40 MB a step (2.7 GB by step 30 of the default). 64 bounds it at no measured cost in speed (BENCHMARKS.md,
# issue 55). Read when oneDNN first runs, so set on import; a value the user set is kept.
_os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "64")

__version__ = "0.1.0"
