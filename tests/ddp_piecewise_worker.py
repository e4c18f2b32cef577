"""One rank of tests/test_ddp_piecewise_loss.py: a GRPO optimizer step's gradients under DDP, three ways.

Run as ``python ddp_piecewise_worker.py MODEL_DIR OUT_DIR`` with torchrun's environment (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT). Each rank builds the trainer on the tiny model, rolls out one generation
batch, fixes its advantages (rank 1's first micro-batch has one group with all-zero advantages, its second,
which ends the optimizer step, nothing to learn, so the ranks run different numbers of loss pieces), wraps the model in DDP as the Trainer does, and
runs one optimizer step's two micro-batches (the first under ``no_sync``, as the Trainer's loop does) through
``training_step``, from the same weights and on the same rollouts:

* ``whole``: TRL's computation, the whole micro-batch through DDP's forward and one backward (DDP averages);
* ``pieces``: the loss one group at a time, TRL's per-row forward, gradients averaged by rlvr;
* ``shared``: the same with the shared-prompt forward and groups split in pieces of 2 rows.

It saves per path the micro-batch losses, the trainable gradients, how often DDP's reducer all-reduced (a
counting communication hook), and the metric lists, to OUT_DIR/rank-R.pt.
"""

from __future__ import annotations

import contextlib
import os
import sys

import torch
from two_ranks import fixed_micro_batches, tiny_run  # this script's directory is on sys.path


def main(model_dir: str, out_dir: str) -> None:
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    from rlvr.config import load_recipe
    from rlvr.training.run import build_trainer

    rank = int(os.environ["RANK"])
    recipe = load_recipe(None, tiny_run(model_dir, out_dir))
    trainer = build_trainer(recipe, quiet=True)
    plan = {"chunks": trainer.shared_prompt.chunks, "loss": trainer.shared_prompt.loss,
            "summary": trainer.shared_prompt.summary(), "processes": trainer.accelerator.num_processes}
    torch.manual_seed(0)  # the same random adapter on every rank (DDP would broadcast rank 0's anyway)
    for name, parameter in trainer.model.named_parameters():
        if "lora_B" in name:
            parameter.data.normal_(0, 0.3)
    trainer.model.train()
    torch.manual_seed(1 + rank)
    batch = trainer.rollout_batch(next(iter(trainer.get_train_dataloader())))
    micros = fixed_micro_batches(batch, rank)

    calls = {"count": 0}

    def counting_allreduce(state, bucket):  # noqa: ANN001, ANN202
        calls["count"] += 1
        return default_hooks.allreduce_hook(state, bucket)

    ddp = trainer.accelerator.prepare_model(trainer.model)
    ddp.register_comm_hook(None, counting_allreduce)
    trainer.model_wrapped = ddp
    trainer._prepare_inputs = lambda inputs: inputs  # the micro-batches above, not TRL's generation buffer
    trainer.current_gradient_accumulation_steps = 2
    start = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}

    def step(chunks: str | None, loss: str | None, loss_chunk_rows: int) -> dict:
        trainer.shared_prompt.chunks, trainer.shared_prompt.loss = chunks, loss
        trainer.loss_chunk_rows = loss_chunk_rows
        with torch.no_grad():
            for n, p in trainer.model.named_parameters():
                p.copy_(start[n])
        ddp.zero_grad(set_to_none=True)
        calls["count"] = 0
        trainer.metric_lists["train"].clear()
        losses = []
        for i, micro in enumerate(micros):
            last = i == len(micros) - 1
            trainer.accelerator.gradient_state._set_sync_gradients(last)
            context = contextlib.nullcontext() if last else trainer.accelerator.no_sync(ddp)
            with context:
                losses.append(trainer.training_step(ddp, dict(micro), None).item())
        return {
            "losses": losses,
            "grads": {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad},
            "ddp_allreduces": calls["count"],
            "metrics": {k: list(v) for k, v in trainer.metric_lists["train"].items()},
        }

    results = {
        "plan": plan,
        "whole": step("TRL's whole micro-batch, for comparison", "TRL's per-row path, for comparison", 4),
        "pieces": step(None, "TRL's per-row path, for comparison", 4),
        "shared": step(None, None, 2),
    }
    results["shared_loss_after"] = trainer.shared_prompt.loss  # None unless the shared forward disagreed
    torch.save(results, os.path.join(out_dir, f"rank-{rank}.pt"))
    torch.distributed.barrier()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
