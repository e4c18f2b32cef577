"""The ``overlong`` reward: TRL's soft overlong punishment (DAPO, eq. 13), so notes learn to end.

A small model that never ends its completions is cut at ``grpo.max_completion_length``; what comes after the cut
(a clinical note's treatment and follow-up) is never written, so the task's own reward cannot pay for it and the
model gets no signal to stop. In one seed of ``keywords-named-12-cpu-smollm2`` the sampled notes averaged 150 of
160 tokens at every logged step and nothing was learnt (BENCHMARKS.md, "Keywords: the condition's name as the
diagnosis"). This reward is 0 for a completion of up to ``max_tokens - cache`` tokens, falls linearly to -1 at
``max_tokens``, and is -1 beyond: TRL's :func:`trl.rewards.get_soft_overlong_punishment`, which counts the
``completion_ids`` GRPOTrainer passes every reward.

``max_tokens`` defaults to the recipe's ``grpo.max_completion_length`` (filled in when the recipe is read, see
:func:`rlvr.rewards.base.grpo_defaults`), ``cache`` to a fifth of it. Called without token ids (the reward audit's hand-written
texts), it has no length to judge and returns None for each completion, which TRL and the audit leave out.
"""

from __future__ import annotations

from typing import Any

from rlvr.errors import RlvrError
from rlvr.rewards.base import REWARDS, RewardFunc, default_weight, grpo_defaults, named


@REWARDS.register("overlong")
@default_weight(1.0)
@grpo_defaults(max_tokens="max_completion_length")
def overlong_reward(max_tokens: int | None = None, cache: int | None = None) -> RewardFunc:
    """0 up to ``max_tokens - cache`` completion tokens, linear to -1 at ``max_tokens``, -1 beyond (default
    weight 1.0). ``cache`` defaults to ``max_tokens // 5``."""
    from trl.rewards import get_soft_overlong_punishment

    max_tokens = _positive_int(max_tokens, "max_tokens", "the token limit, e.g. grpo.max_completion_length")
    cache = max_tokens // 5 if cache is None else _positive_int(cache, "cache", "tokens before the limit where -1 is reached")
    if cache > max_tokens:
        raise RlvrError(f"reward 'overlong': cache ({cache}) must not exceed max_tokens ({max_tokens}).")
    punish = get_soft_overlong_punishment(max_completion_len=max_tokens, soft_punish_cache=cache)

    def overlong(completions: list[Any], completion_ids: list[Any] | None = None, **_columns: Any) -> list[float | None]:
        if not isinstance(completion_ids, (list, tuple)) or len(completion_ids) != len(completions):
            return [None] * len(completions)
        return [float(punish([ids])[0]) if hasattr(ids, "__len__") else None for ids in completion_ids]

    return named("overlong", overlong)


def _positive_int(value: Any, name: str, meaning: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RlvrError(f"reward 'overlong': {name} must be a positive whole number ({meaning}), got {value!r}.")
    return value
