"""A KV cache with room reserved for the tokens still to be decoded.

transformers' ``DynamicLayer`` appends each new token with ``torch.cat``, which copies the layer's whole cache
into a newly allocated tensor, every layer, every step: decoding 32 tokens on top of a 200-token prompt moves the
prompt's keys and values 32 times, and each fresh allocation is paid again in page faults. On a CPU that copying
was the largest single cost of a decoding step (30% of the default's rollouts, BENCHMARKS.md).
:class:`ReservedLayer` allocates the prompt's cache plus ``room`` positions once and writes each step's keys and
values into place; attention reads a view of the filled part.

The view is strided (the reserved positions sit between rows). Keys can be kept transposed,
``[rows, heads, dim, positions]``, so that the score matmul of :mod:`rlvr.evaluation.attention` reads them as an
ordinary matrix with a leading dimension instead of copying the view first; SDPA (float32) reads the plain layout
faster, so that is the default.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicLayer


class ReservedLayer(DynamicLayer):
    """A full-attention cache layer whose keys and values ``[rows, heads, length, dim]`` are views of larger
    buffers; :meth:`update` writes into them (growing them, amortised, if ``room`` runs out)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, room: int, transposed_keys: bool = False):
        super().__init__()
        self.device = keys.device
        self.is_initialized = True
        self.length = keys.shape[-2]
        self.transposed_keys = transposed_keys
        self._keys = _with_room(keys.transpose(-1, -2) if transposed_keys else keys, room, self._key_axis)
        self._values = _with_room(values, room, -2)
        self._refresh()

    @property
    def _key_axis(self) -> int:
        return -1 if self.transposed_keys else -2

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
               ) -> tuple[torch.Tensor, torch.Tensor]:
        new = key_states.shape[-2]
        if self.length + new > self._values.shape[-2]:
            room = max(new, self._values.shape[-2])  # double: appending stays linear in the tokens
            self._keys = _with_room(self._keys.narrow(self._key_axis, 0, self.length), room, self._key_axis)
            self._values = _with_room(self._values[:, :, : self.length], room, -2)
        keys = key_states.transpose(-1, -2) if self.transposed_keys else key_states
        self._keys.narrow(self._key_axis, self.length, new).copy_(keys)
        self._values[:, :, self.length : self.length + new] = value_states
        self.length += new
        self._refresh()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._keys = self._keys[indices]
        self._values = self._values[indices]
        self._refresh()

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._keys = self._keys.repeat_interleave(repeats, dim=0)
        self._values = self._values.repeat_interleave(repeats, dim=0)
        self._refresh()

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes the (negative) number of tokens to remove")
        self.length = max(0, self.length + tokens_to_remove)
        self._refresh()

    def reset(self) -> None:
        self.length = 0
        self._refresh()

    def _refresh(self) -> None:
        keys = self._keys.narrow(self._key_axis, 0, self.length)
        self.keys = keys.transpose(-1, -2) if self.transposed_keys else keys
        self.values = self._values[:, :, : self.length]


def _with_room(tensor: torch.Tensor, room: int, axis: int) -> torch.Tensor:
    shape = list(tensor.shape)
    length = shape[axis]
    shape[axis] = length + room
    buffer = tensor.new_empty(shape)
    buffer.narrow(axis, 0, length).copy_(tensor)
    return buffer


def reserve(cache: Any, room: int, transposed_keys: bool = False) -> bool:
    """Give every plain full-attention layer of ``cache`` (a filled ``DynamicCache``) ``room`` more positions in
    place of ``torch.cat`` growth; returns whether it did (other layer kinds, or an old transformers: left alone)."""
    layers = getattr(cache, "layers", None)
    if not layers or not all(type(layer) is DynamicLayer and layer.is_initialized for layer in layers):
        return False
    cache.layers = [ReservedLayer(layer.keys, layer.values, room, transposed_keys) for layer in layers]
    return True
