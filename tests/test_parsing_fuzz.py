"""Every parser of model output takes linear time: no 1 MB completion stalls scoring (issue 14).

Each parser runs over the fuzz battery (``rlvr.fuzz``: 1 MB of every character class and of every token
the parsers look for) in a watchdog child; a call still running after ``LIMIT`` seconds is a stall. A
linear parser needs milliseconds to a second on these inputs, a quadratic one hours, so the bound says
nothing about speed, only about stalls. The keyword verifier walks words in Python (about 2 s per MB on
its worst input), so it gets 200 KB inputs, where a quadratic pattern still takes minutes.
"""

from __future__ import annotations

import pytest

from rlvr.fuzz import MB, adversarial_texts, parsers, time_parsers

LIMIT = 30.0
SLOW = ("keywords.judge", "keywords.judge_per_item", "sentences.split_units")
TARGETS = parsers()


@pytest.fixture(scope="module")
def battery() -> dict[int, list[tuple[str, str]]]:
    return {size: list(adversarial_texts(size)) for size in (MB, MB // 5)}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_parser_never_stalls_on_adversarial_input(name, battery):
    texts = battery[MB // 5 if name in SLOW else MB]
    worst, label = time_parsers({name: TARGETS[name]}, texts, limit=LIMIT)[name]
    assert worst < LIMIT, f"{name} stalled on {label}"
