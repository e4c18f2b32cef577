"""Stop generation at the end of the answer, row by row, and mark it finished.

Base models ramble past the answer into the next ``Question:``. A task names
``stop_patterns`` (regexes on the generated text); :class:`AnswerStop`

* ends each row's generation as soon as one pattern matches (a per-row
  ``StoppingCriteria``, so the batch ends when every row has stopped), and
* cuts each completion at the token where the match completed and appends EOS,
  so TRL counts it as finished rather than truncated, the loss does not train
  on the rambling, and the model learns to end after its answer.

HF ``stop_strings`` cannot express "the end of the ``####`` line", needs the
tokenizer passed to ``generate`` (TRL does not), and leaves stopped rows
without EOS; this class avoids all three.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from transformers import StoppingCriteria, StoppingCriteriaList


class AnswerStop:
    """Stop patterns bound to a tokenizer."""

    def __init__(self, tokenizer: Any, patterns: Sequence[str], eos_token_id: int | None = None):
        self.tokenizer = tokenizer
        self.patterns = [re.compile(p, re.MULTILINE) for p in patterns]
        self.eos_token_id = tokenizer.eos_token_id if eos_token_id is None else eos_token_id

    def matches(self, text: str) -> bool:
        return any(p.search(text) for p in self.patterns)

    def stopped(self, ids: Sequence[int]) -> bool:
        """Whether the generated ``ids`` already match a stop pattern."""
        return self.matches(self._decode(ids))

    def criteria(self, prompt_length: int) -> StoppingCriteria:
        return _RowStop(self, prompt_length)

    def cut(self, ids: Sequence[int]) -> tuple[list[int], bool]:
        """(ids up to the stop match + EOS, True) if a pattern matches, else (ids, False)."""
        ids = list(ids)
        if self.eos_token_id in ids:
            ids = ids[: ids.index(self.eos_token_id) + 1]
        body = ids[:-1] if ids and ids[-1] == self.eos_token_id else ids
        if not self.matches(self._decode(body)):
            return ids, False
        low, high = 1, len(body)  # smallest prefix that matches: matching is monotone in the prefix
        while low < high:
            middle = (low + high) // 2
            if self.matches(self._decode(body[:middle])):
                high = middle
            else:
                low = middle + 1
        return body[:low] + [self.eos_token_id], True

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    @contextlib.contextmanager
    def installed(self, model: Any) -> Iterator[None]:
        """Within the block, ``model.generate`` stops each row at the patterns."""
        original = model.generate
        shadowed = vars(model).get("generate")

        def generate(*args: Any, **kwargs: Any) -> Any:
            inputs = kwargs.get("input_ids", args[0] if args else None)
            if inputs is not None:
                extra = StoppingCriteriaList(kwargs.pop("stopping_criteria", None) or [])
                extra.append(self.criteria(inputs.shape[1]))
                kwargs["stopping_criteria"] = extra
            return original(*args, **kwargs)

        model.generate = generate
        try:
            yield
        finally:
            if shadowed is None:
                del model.generate  # back to the class's method
            else:
                model.generate = shadowed


class _RowStop(StoppingCriteria):
    """True for each row whose generated text matches a stop pattern."""

    def __init__(self, stop: AnswerStop, prompt_length: int):
        self.stop = stop
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        generated = input_ids[:, self.prompt_length :].tolist()
        done = [self.stop.matches(self.stop._decode(row)) for row in generated]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)
