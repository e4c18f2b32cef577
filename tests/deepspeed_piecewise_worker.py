"""One rank of tests/test_deepspeed_piecewise_loss.py: a GRPO optimizer step under DeepSpeed ZeRO, three ways.

Run as ``python deepspeed_piecewise_worker.py MODEL_DIR OUT_DIR STAGE`` with torchrun's environment (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and accelerate's DeepSpeed one (ACCELERATE_USE_DEEPSPEED, the
ZeRO stage, no offload), as ``accelerate launch --config zero3`` sets it. Each rank builds the trainer on the tiny
model, lets the Trainer build the DeepSpeed engine (``_prepare_for_training``, as ``train()`` does), rolls out one
generation batch through the engine, fixes its advantages (rank 1's first micro-batch has one group with
all-zero advantages, its second, which ends the optimizer step, nothing to learn, so the ranks have different
numbers of loss pieces), and runs one optimizer step's two micro-batches through ``training_step``, from the same
weights (SGD with learning rate 0: the weights do not move) and on the same rollouts:

* ``whole``: TRL's computation, the whole micro-batch through the engine and one engine backward;
* ``pieces``: the loss one group at a time;
* ``split``: the same with groups cut in pieces of 2 rows.

It saves per path the micro-batch losses, the gradient the optimizer stepped with (this rank's partition, as
DeepSpeed hands it to the torch optimizer), how many optimizer steps and engine backwards ran, how many pieces
this rank had to learn, and the metric lists, to OUT_DIR/rank-R.pt.
"""

from __future__ import annotations

import os
import sys

import torch
from two_ranks import fixed_micro_batches, tiny_run  # this script's directory is on sys.path


def main(model_dir: str, out_dir: str) -> None:
    from rlvr.config import load_recipe
    from rlvr.training.run import build_trainer

    rank = int(os.environ["RANK"])
    recipe = load_recipe(None, tiny_run(model_dir, out_dir, "grpo.optim=sgd", "grpo.learning_rate=0.0",
                                        "grpo.max_grad_norm=0.0", "grpo.lr_scheduler_type=constant"))
    trainer = build_trainer(recipe, quiet=True)
    plan = {"chunks": trainer.shared_prompt.chunks, "loss": trainer.shared_prompt.loss,
            "deepspeed": trainer.is_deepspeed_enabled, "processes": trainer.accelerator.num_processes}
    torch.manual_seed(0)  # the same random adapter on every rank (the engine partitions each rank's own copy)
    for name, parameter in trainer.model.named_parameters():
        if "lora_B" in name:
            parameter.data.normal_(0, 0.3)
    engine, _ = trainer._prepare_for_training(1, trainer.get_train_dataloader(), None)
    plan["zero_stage"] = engine.zero_optimization_stage()
    plan["partitioned"] = sum(hasattr(p, "ds_tensor") for p in engine.module.parameters())
    engine.train()
    torch.manual_seed(1 + rank)
    batch = trainer.rollout_batch(next(iter(trainer.get_train_dataloader())))
    micros = fixed_micro_batches(batch, rank)

    record = {"grads": [], "backwards": 0}
    inner = engine.optimizer.optimizer  # the torch optimizer ZeRO steps with this rank's fp32 partition

    def recording_step(*args, _step=inner.step, **kwargs):  # noqa: ANN002, ANN003, ANN202
        record["grads"].append([p.grad.detach().clone() for group in inner.param_groups for p in group["params"]
                                if p.grad is not None])
        return _step(*args, **kwargs)

    def counting_backward(*args, _backward=engine.backward, **kwargs):  # noqa: ANN002, ANN003, ANN202
        record["backwards"] += 1
        return _backward(*args, **kwargs)

    inner.step = recording_step
    engine.backward = counting_backward
    trainer._prepare_inputs = lambda inputs: inputs  # the micro-batches above, not TRL's generation buffer
    trainer.current_gradient_accumulation_steps = 2
    learning_pieces = []
    trainer_loss_chunks = sys.modules["rlvr.training.piece_loop"].loss_chunks

    def counting_chunks(inputs, loss_type, rows_per_chunk):  # noqa: ANN001, ANN202
        chunks = trainer_loss_chunks(inputs, loss_type, rows_per_chunk)
        learning_pieces.append(sum(bool(inputs["advantages"][r].any()) for r, _ in chunks))
        return chunks

    sys.modules["rlvr.training.piece_loop"].loss_chunks = counting_chunks

    def step(chunks: str | None, loss_chunk_rows: int) -> dict:
        trainer.shared_prompt.chunks = chunks
        trainer.loss_chunk_rows = loss_chunk_rows
        record["grads"].clear()
        record["backwards"] = 0
        learning_pieces.clear()
        trainer.metric_lists["train"].clear()
        steps_before = engine.global_steps
        losses = []
        for i, micro in enumerate(micros):
            trainer.accelerator.gradient_state._set_sync_gradients(i == len(micros) - 1)
            losses.append(trainer.training_step(engine, dict(micro), None).item())
        return {
            "losses": losses,
            "grads": list(record["grads"]),
            "optimizer_steps": engine.global_steps - steps_before,
            "backwards": record["backwards"],
            "learning_pieces": list(learning_pieces),
            "metrics": {k: list(v) for k, v in trainer.metric_lists["train"].items()},
        }

    results = {
        "plan": plan,
        "whole": step("TRL's whole micro-batch, for comparison", 4),
        "pieces": step(None, 4),
        "split": step(None, 2),
    }
    torch.save(results, os.path.join(out_dir, f"rank-{rank}.pt"))
    torch.distributed.barrier()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
