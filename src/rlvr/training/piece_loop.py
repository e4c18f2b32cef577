"""The piece loop: running the loss's pieces (:mod:`rlvr.training.chunked_loss`) in one process, under DDP and
under DeepSpeed ZeRO-2/3, each piece back-propagated before the next.

In one process each piece is TRL's loss on its rows, weighted and back-propagated at once; the pieces of a
split group share one prompt pass on the shared-prompt path
(:class:`rlvr.training.shared_prompt.SplitGroupPrompt`).

Under DDP (several processes) each process runs its own micro-batch's pieces on the module DDP wraps, so no
piece's forward or backward touches DDP's reducer: ranks may run different numbers of pieces (all-zero
groups are skipped) without a collective per piece. At the gradient-accumulation boundary every process then
averages the trainable parameters' gradients once (:func:`average_gradients`), as DDP's own one backward per
micro-batch would: gradient times ``1 / world_size``, summed over the processes.

Under DeepSpeed ZeRO-2/3 each piece is one of the engine's micro-steps (its forward, then ``engine.backward`` with
the accumulation boundary off); the last piece is left to the Trainer's backward, which sets the boundary and steps.
ZeRO reduces gradients in every backward (ZeRO-3 also gathers parameters in every forward), so every process runs
the largest process's number of pieces, the extra ones on a real row with weight 0
(:func:`rlvr.training.chunked_loss.why_not_deepspeed` says which DeepSpeed setups this loop is checked under).

In both, TRL's metric gathers inside each piece's loss are kept to the process
(:func:`collectives_kept_local`), and the pieces' metrics are exchanged once afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from rlvr.errors import RlvrError
from rlvr.training.chunked_loss import (
    loss_chunks,
    loss_mask,
    select_rows,
    split_group_runs,
    zero_gradient_term,
)
from rlvr.training.shared_prompt import SplitGroupPrompt

#: TRL's loss of some rows: ``(model, inputs) -> loss`` (the trainer's ``super().compute_loss``).
TrlLoss = Callable[[Any, dict[str, Any]], torch.Tensor]


def loss_by_pieces(trainer: Any, model: Any, inputs: dict[str, Any], trl_loss: TrlLoss) -> torch.Tensor:
    """TRL's loss and gradients, one group at a time (:mod:`rlvr.training.chunked_loss`).

    Each group's weighted loss is back-propagated here; the returned value is the micro-batch's loss,
    detached, plus a zero term whose backward (the Trainer's) adds nothing to the gradients. The pieces
    of a split group share one prompt pass on the shared-prompt path (:class:`SplitGroupPrompt`).

    Under DDP the pieces run on the module DDP wraps, with TRL's metric collectives kept to this process,
    so processes may run different numbers of pieces; then every process exchanges the pieces' metrics once
    and, at the accumulation boundary, averages the gradients once (:func:`average_gradients`). The
    Trainer's backward of the zero term does not go through DDP's forward, so DDP does not all-reduce again.
    Under DeepSpeed ZeRO-2/3 each piece is an engine micro-step instead (:func:`_deepspeed_pieces`).
    """
    chunks = loss_chunks(inputs, trainer.loss_type, trainer.loss_chunk_rows)
    # A chunk with all advantages 0 and beta 0 has loss 0 and gradient 0: it is not forwarded.
    learning = [(rows, weight) for rows, weight in chunks
                if trainer.beta != 0.0 or bool(inputs["advantages"][rows].any())]
    if trainer.is_deepspeed_enabled:
        return _deepspeed_pieces(trainer, model, inputs, learning, len(chunks), trl_loss)
    ddp, module = ddp_module(model)
    accelerator = trainer.accelerator
    if ddp is None and accelerator.num_processes > 1:
        raise RlvrError("the piecewise loss runs under several processes only with DDP or DeepSpeed; "
                        "the model is neither")
    zero = zero_gradient_term(model)
    total = zero.detach()
    metrics = trainer.metric_lists["train"]
    with collectives_kept_local(accelerator, metrics, ddp.no_sync() if ddp is not None else None):
        for prompt, run in split_group_runs(inputs, learning):
            split = None
            if prompt is not None and trainer.shared_prompt.loss is None:
                split = SplitGroupPrompt(module, prompt, accelerator.autocast)
            trainer.split_group = split
            try:
                for rows, weight in run:
                    loss = trl_loss(module, select_rows(inputs, rows)) * weight
                    accelerator.backward(loss)
                    total = total + loss.detach()  # stays on the device: no host sync per piece
            finally:
                trainer.split_group = None
            if split is not None:
                split.backward()  # the group's prompt, once, with all its pieces' gradient
        skipped = 1.0 - len(learning) / len(chunks) if chunks else 1.0
        metrics["update/skipped_share"].append(skipped)
    if ddp is not None and accelerator.sync_gradients:
        average_gradients([p for p in model.parameters() if p.requires_grad], accelerator.num_processes)
    return zero + total


def _deepspeed_pieces(trainer: Any, engine: Any, inputs: dict[str, Any], learning: list[tuple[torch.Tensor, float]],
                      chunks: int, trl_loss: TrlLoss) -> torch.Tensor:
    """The pieces under DeepSpeed ZeRO-2/3 (:func:`rlvr.training.chunked_loss.why_not_deepspeed`).

    Each piece is one of DeepSpeed's micro-steps: TRL's loss through the engine's forward, then
    ``engine.backward`` with the accumulation boundary off and no scaling by the engine's accumulation steps
    (TRL's loss is already scaled, as the Trainer's own DeepSpeed backward assumes). The last piece is
    returned, with the other pieces' losses added detached, for the Trainer's backward: accelerate sets the
    boundary there and steps the engine at the optimizer step's last micro-batch, as on TRL's path, so the
    engine sees one boundary backward and one step per optimizer step.

    ZeRO-2/3 reduce gradients in every backward, and ZeRO-3 gathers parameters in every forward, so every
    process runs the largest process's number of pieces: the extra pieces run a real row with weight 0 (their
    gradient is exactly 0) and their metrics are dropped. A process with nothing to learn runs only those.
    """
    import torch.distributed as dist

    if not (hasattr(engine, "backward") and hasattr(engine, "set_gradient_accumulation_boundary")):
        raise RlvrError("the piecewise loss under DeepSpeed needs the DeepSpeed engine as the model")
    count = torch.tensor([len(learning)], device=trainer.accelerator.device)
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(count, op=dist.ReduceOp.MAX)
    runs = max(1, int(count.item()))
    scored = loss_mask(inputs).any(dim=1).nonzero().flatten()
    padding = (scored[:1] if scored.numel() else torch.zeros(1, dtype=torch.long, device=scored.device), 0.0)
    pieces = learning + [padding] * (runs - len(learning))
    metrics = trainer.metric_lists["train"]
    total, last = None, None
    with collectives_kept_local(trainer.accelerator, metrics, contextlib.nullcontext()):
        for index, (rows, weight) in enumerate(pieces):
            before = {key: len(values) for key, values in metrics.items()}
            loss = trl_loss(engine, select_rows(inputs, rows)) * weight
            if index >= len(learning):  # a padding piece: its metrics describe nothing learned
                _truncate_metrics(metrics, before)
            if index == runs - 1:
                last = loss
                break
            engine.set_gradient_accumulation_boundary(False)
            engine.backward(loss, scale_wrt_gas=False)
            total = loss.detach() if total is None else total + loss.detach()
        skipped = 1.0 - len(learning) / chunks if chunks else 1.0
        metrics["update/skipped_share"].append(skipped)
    return last if total is None else last + total


@contextlib.contextmanager
def collectives_kept_local(accelerator: Any, metrics: dict[str, list[Any]],
                           local: contextlib.AbstractContextManager | None) -> Iterator[None]:
    """Under several processes (``local``: entered around the pieces, e.g. ``ddp.no_sync()``): TRL's metric
    gathers and reductions in each piece's loss see this process only, and the metrics the pieces add to
    ``metrics`` are exchanged once afterwards (every process then holds every process's entries, one per piece,
    as one process's pieces log them). With ``local`` None: nothing."""
    if local is None:
        yield
        return
    from accelerate.utils import gather_object

    before = {key: len(values) for key, values in metrics.items()}
    shadowed = {name: vars(accelerator)[name] for name in ("gather", "reduce") if name in vars(accelerator)}
    accelerator.gather = lambda tensor: tensor
    accelerator.reduce = lambda tensor, reduction="sum", scale=1.0: tensor
    try:
        with local:
            yield
    finally:
        for name in ("gather", "reduce"):
            if name in shadowed:
                setattr(accelerator, name, shadowed[name])
            else:
                delattr(accelerator, name)
    added = {}
    for key, values in metrics.items():
        added[key] = values[before.get(key, 0):]
        del values[before.get(key, 0):]
    for process in gather_object([added]):
        for key, values in process.items():
            metrics[key].extend(values)


def _truncate_metrics(metrics: dict[str, list[Any]], lengths: dict[str, int]) -> None:
    """Cut each metric list back to its length in ``lengths``; a list not there before, left empty, goes."""
    for key in list(metrics):
        del metrics[key][lengths.get(key, 0):]
        if key not in lengths:
            del metrics[key]


def ddp_module(model: Any) -> tuple[Any, Any]:
    """(the DDP wrapper, the module it runs) of ``model`` (seen through ``torch.compile``); (None, model) without DDP."""
    from torch.nn.parallel import DistributedDataParallel

    wrapped = getattr(model, "_orig_mod", model)
    if isinstance(wrapped, DistributedDataParallel):
        if getattr(wrapped, "_use_python_reducer", False):
            raise RuntimeError("DDP's python reducer (compiled autograd) all-reduces in every backward; "
                               "the piecewise loss cannot run under it")
        return wrapped, wrapped.module
    return None, model


#: Elements per all-reduce in :func:`average_gradients` (DDP's default bucket is 25 MB, 6.5M float32 elements).
BUCKET_ELEMENTS = 1 << 23


def average_gradients(parameters: list[torch.nn.Parameter], world_size: int, group: Any = None) -> None:
    """Average the gradients of ``parameters`` over the processes, as DDP's reducer does after a backward.

    DDP multiplies each gradient by ``1 / world_size`` as it copies it into its bucket, then all-reduces the
    bucket with a sum; the same here, a few flat buckets at a time. A parameter with no gradient on this
    process takes part with zeros (every process must all-reduce the same tensors) and gets the average.
    Every process must call this with the same parameters in the same order.
    """
    import torch.distributed as dist

    buckets: dict[tuple[torch.dtype, torch.device], list[torch.nn.Parameter]] = {}
    for parameter in parameters:
        if parameter.grad is None:
            parameter.grad = torch.zeros_like(parameter)
        buckets.setdefault((parameter.grad.dtype, parameter.grad.device), []).append(parameter)
    scale = 1.0 / world_size
    for members in buckets.values():
        start = 0
        while start < len(members):
            stop, size = start, 0
            while stop < len(members) and (stop == start or size + members[stop].numel() <= BUCKET_ELEMENTS):
                size += members[stop].numel()
                stop += 1
            grads = [p.grad for p in members[start:stop]]
            flat = torch.cat([g.reshape(-1) for g in grads]).mul_(scale)
            dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=group)
            offset = 0
            for grad in grads:
                grad.copy_(flat[offset:offset + grad.numel()].view_as(grad))
                offset += grad.numel()
            start = stop
