"""Which ``pyfunc`` templates the test split holds out (``test_templates: K``): near-duplicates go together.

A model that learned ``x + k`` has nearly learned ``x - k``, so holding out one of them and training on the other
would measure new constants, not a new kind of function. :data:`NEAR_DUPLICATES` groups such templates, and
:func:`held_out_templates` chooses whole groups, spread over the kinds of argument.
"""

from __future__ import annotations

import random

from rlvr.errors import RlvrError
from rlvr.tasks.pyfunc_templates import TEMPLATES

#: Templates whose functions differ by one operator, direction, constant's role or argument type
#: (``x + k`` / ``x - k``, ``s[:k]`` / ``xs[:k]``): a model that learned one has nearly learned the other, so
#: ``test_templates: K`` holds such a group out whole. Every other template is a group of its own.
NEAR_DUPLICATES: tuple[tuple[str, ...], ...] = (
    ("add_n", "subtract_n", "add_two"),                  # x + k, x - k, a + b + k
    ("multiply_by", "times_plus"),                       # x * k, x * a + b
    ("remainder", "int_divide", "is_divisible"),         # x % k, x // k, x % k == 0
    ("is_greater", "is_at_most"),                        # x > k, x <= k
    ("larger_of", "smaller_of"),                         # max(x, k), min(x, k)
    ("first_chars", "last_chars", "first_items"),        # s[:k], s[-k:], xs[:k]
    ("add_suffix", "add_prefix"),                        # s + w, w + s
    ("count_letter", "count_value"),                     # s.count(ch), xs.count(k)
    ("starts_with", "ends_with"),                        # s.startswith(ch), s.endswith(ch)
    ("remove_letter", "replace_letter"),                 # s.replace(ch, ""), s.replace(ch, d)
    ("add_to_each", "scale_each"),                       # [x + k ...], [x * k ...]
    ("count_above", "keep_above"),                       # count / keep the x > k
)
#: The kinds of argument a template's function takes; ``test_templates: K`` takes groups from each in turn.
KINDS = {"x": "integer", "a, b": "integer", "s": "string", "xs": "list"}


def template_groups() -> list[list[str]]:
    """Every template in one group: :data:`NEAR_DUPLICATES`, then each other template alone (``TEMPLATES`` order)."""
    grouped = {name for group in NEAR_DUPLICATES for name in group}
    groups = [list(group) for group in NEAR_DUPLICATES]
    return groups + [[t.name] for t in TEMPLATES if t.name not in grouped]


def held_out_templates(count: int, seed: int) -> list[str]:
    """``count`` template names held out for the test split, deterministically from ``seed``.

    Near-duplicates (:func:`template_groups`) go together, spread over the kinds of argument (integer, string,
    list): each kind's groups are shuffled, then the kinds take turns (in a shuffled order), each taking its next
    group that still fits, first up to an even share of ``count`` per kind, then up to ``count``. Only when no
    whole group fits the remainder is a group split. Names come back in ``TEMPLATES`` order.
    """
    if count < 1 or count >= len(TEMPLATES):
        raise RlvrError(f"pyfunc test_templates must be between 1 and {len(TEMPLATES) - 1} (of {len(TEMPLATES)} "
                        f"templates; train keeps the rest), got {count}.")
    rng = random.Random(seed)
    kind_of = {t.name: KINDS[t.params] for t in TEMPLATES}
    kinds = sorted(set(KINDS.values()))
    rng.shuffle(kinds)
    pending = {kind: [g for g in template_groups() if kind_of[g[0]] == kind] for kind in kinds}
    for groups in pending.values():
        rng.shuffle(groups)
    chosen: list[str] = []
    per_kind = dict.fromkeys(kinds, 0)
    for limit in (-(-count // len(kinds)), count):
        progress = True
        while progress:
            progress = False
            for kind in kinds:
                group = next((g for g in pending[kind] if len(chosen) + len(g) <= count
                              and per_kind[kind] + len(g) <= limit), None)
                if group is not None:
                    pending[kind].remove(group)
                    chosen += group
                    per_kind[kind] += len(group)
                    progress = True
    for name in (name for kind in kinds for group in pending[kind] for name in group):
        if len(chosen) == count:
            break
        chosen.append(name)
    rank = {t.name: i for i, t in enumerate(TEMPLATES)}
    return sorted(chosen, key=rank.__getitem__)

