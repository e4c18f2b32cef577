"""Reward functions by name.

Importing this package registers every reward defined in its modules, so a new
reward module is picked up without editing any list.
"""

import importlib
import pkgutil

from rlvr.rewards.base import REWARDS, RewardFunc, build_reward, completion_text, fill_grpo_defaults

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["REWARDS", "RewardFunc", "build_reward", "completion_text", "fill_grpo_defaults"]
