"""A reward in TRL's signature: ``completions, **columns -> list[float]``, one number per completion.

Columns of the dataset arrive by name: here ``a`` and ``b``, the two numbers of each line of my.jsonl.
"""


def shows_the_sum(completions, a, b, **columns):
    """1.0 when the reasoning writes the sum out ("23 + 15"), else 0.0: a nudge to show the work."""
    return [1.0 if f"{x} + {y}" in text else 0.0 for text, x, y in zip(completions, a, b)]
