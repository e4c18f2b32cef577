"""Shared-prompt GRPO: each group's prompt runs once in generation and in the loss, and the loss is TRL's.

The exactness tests build a real trainer on the tiny model with a LoRA adapter whose B matrices are
random (so the policy differs from the reference and every LoRA weight gets a gradient), then compare
the shared-prompt path with TRL's per-row path on the same rollout: the reference and old-policy
log-probs, the loss and every LoRA gradient.
"""

from __future__ import annotations

import json

import pytest
import torch

from rlvr.config import load_recipe
from rlvr.training.run import build_trainer, train

ROWS = 16  # one generation batch: 4 prompts x 4 completions, trained on as 2 micro-batches of 8


def tiny_recipe(model_dir, output_dir, *extra):
    return load_recipe(None, [
        f"model.name_or_path={model_dir}", "task.train_size=16", "task.shots=1", "grpo.max_steps=1",
        "grpo.per_device_train_batch_size=8", "grpo.num_generations=4", "grpo.steps_per_generation=2",
        "grpo.gradient_accumulation_steps=2", "grpo.max_completion_length=12", "grpo.save_strategy=no",
        "grpo.report_to=[]", "run.eval_items=0", "run.keep_best=false", f"run.output_dir={output_dir}", *extra,
    ])


def trainer_with_random_adapter(model_dir, tmp_path, *extra):
    trainer = build_trainer(tiny_recipe(model_dir, tmp_path / "out", *extra), quiet=True)
    torch.manual_seed(0)
    for name, parameter in trainer.model.named_parameters():
        if "lora_B" in name:
            parameter.data.normal_(0, 0.3)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 2
    return trainer


def rollout(trainer, shared_loss: bool, seed: int = 1):
    """The generation batch for the first prompts, with old/reference log-probs from the chosen path."""
    trainer.shared_prompt.loss = None if shared_loss else "TRL's path, for comparison"
    torch.manual_seed(seed)
    return trainer.rollout_batch(next(iter(trainer.get_train_dataloader())))


def micro_batch(batch, rows):
    """``rows`` of a generation batch, as TRL's shuffle and split hand them to the loss."""
    return {k: v[rows] if torch.is_tensor(v) and v.dim() > 0 else v for k, v in batch.items()}


def loss_and_lora_grads(trainer, inputs, shared: bool, by_group: bool | None = None):
    """The loss and LoRA gradients of one micro-batch; ``shared=False`` is TRL's own computation (per row, whole batch)."""
    trainer.shared_prompt.loss = None if shared else "TRL's path, for comparison"
    by_group = shared if by_group is None else by_group
    trainer.shared_prompt.chunks = None if by_group else "TRL's whole batch, for comparison"
    trainer.model.zero_grad(set_to_none=True)
    loss = trainer.compute_loss(trainer.model, inputs)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if "lora_" in n}
    return loss.item(), grads


def backbone_input_shapes(trainer):
    """Record the input shape of every backbone forward (a list filled as the model runs)."""
    shapes = []
    backbone = trainer.model.get_base_model().base_model
    handle = backbone.register_forward_pre_hook(lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)),
                                                with_kwargs=True)
    return shapes, handle


@pytest.mark.parametrize("num_iterations, beta", [(1, 0.0), (1, 0.04), (2, 0.0), (2, 0.04)])
def test_shared_prompt_loss_and_lora_gradients_equal_trls_per_row_ones(tiny_model_dir, tmp_path, num_iterations, beta):
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path, f"grpo.num_iterations={num_iterations}",
                                          f"grpo.beta={beta}")
    shared, per_row = rollout(trainer, shared_loss=True), rollout(trainer, shared_loss=False)
    assert torch.equal(shared["completion_ids"], per_row["completion_ids"])
    for key in ("old_per_token_logps", "ref_per_token_logps"):
        assert (key in shared) == (key in per_row)
        if key in shared:
            torch.testing.assert_close(shared[key], per_row[key], rtol=1e-5, atol=1e-5)
    assert ("old_per_token_logps" in shared) == (num_iterations == 2)
    assert ("ref_per_token_logps" in shared) == (beta > 0)
    if num_iterations == 2:  # the second iteration trains a policy that has moved since the rollout
        for name, parameter in trainer.model.named_parameters():
            if "lora_A" in name:
                parameter.data.add_(0.05 * torch.randn_like(parameter))
    inputs = micro_batch(shared, torch.randperm(ROWS, generator=torch.Generator().manual_seed(2))[:8])
    inputs["advantages"] = torch.randn(8, generator=torch.Generator().manual_seed(3))  # a random model earns none
    inputs["completion_mask"][0] = 0  # one dropped row, as run.zero_variance_groups=drop leaves it
    loss, grads = loss_and_lora_grads(trainer, inputs, shared=True)
    reference_loss, reference_grads = loss_and_lora_grads(trainer, inputs, shared=False)
    assert loss == pytest.approx(reference_loss, rel=1e-5, abs=1e-7)
    assert any(g.abs().max() > 0 for g in grads.values())
    for name, grad in grads.items():
        torch.testing.assert_close(grad, reference_grads[name], rtol=1e-4, atol=1e-7, msg=name)
    assert trainer.shared_prompt.loss == "TRL's path, for comparison"  # set by the last call, not by a fallback


def test_the_loss_forward_runs_each_distinct_prompt_once(tiny_model_dir, tmp_path):
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path)
    batch = rollout(trainer, shared_loss=True)
    inputs = micro_batch(batch, torch.arange(8))  # two whole groups of 4
    inputs["advantages"] = torch.ones(8)
    loss_and_lora_grads(trainer, inputs, shared=True, by_group=False)  # the first call checks itself against TRL's
    shapes, handle = backbone_input_shapes(trainer)
    try:
        loss_and_lora_grads(trainer, inputs, shared=True, by_group=False)
    finally:
        handle.remove()
    prompt_width, completion_width = inputs["prompt_ids"].size(1), inputs["completion_ids"].size(1)
    assert shapes == [(2, prompt_width - 1), (8, completion_width + 1)]


def test_the_loss_runs_one_group_at_a_time_each_prompt_once(tiny_model_dir, tmp_path):
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path, "run.loss_chunk_rows=4")  # whole groups of 4
    inputs = micro_batch(rollout(trainer, shared_loss=True), torch.arange(8))  # two whole groups of 4
    inputs["advantages"] = torch.ones(8)
    loss_and_lora_grads(trainer, inputs, shared=True)
    shapes, handle = backbone_input_shapes(trainer)
    try:
        loss_and_lora_grads(trainer, inputs, shared=True)
    finally:
        handle.remove()
    prompt_width = inputs["prompt_ids"].size(1)
    assert [shape[0] for shape in shapes] == [1, 4, 1, 4]  # prompt, then its 4 completions; then the next group
    assert shapes[0][1] == shapes[2][1] == prompt_width - 1


@pytest.mark.parametrize("loss_type, beta", [("dapo", 0.0), ("dapo", 0.04), ("grpo", 0.0), ("bnpo", 0.04),
                                             ("dr_grpo", 0.0), ("cispo", 0.0)])
def test_the_loss_by_group_equals_trls_whole_batch_loss_and_gradients(tiny_model_dir, tmp_path, loss_type, beta):
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path, f"grpo.loss_type={loss_type}", f"grpo.beta={beta}")
    batch = rollout(trainer, shared_loss=True)
    inputs = micro_batch(batch, torch.randperm(ROWS, generator=torch.Generator().manual_seed(4))[:12])  # split groups
    inputs["advantages"] = torch.randn(12, generator=torch.Generator().manual_seed(5))
    inputs["completion_mask"][1] = 0  # a dropped row
    loss, grads = loss_and_lora_grads(trainer, inputs, shared=True)
    reference_loss, reference_grads = loss_and_lora_grads(trainer, inputs, shared=False)
    assert loss == pytest.approx(reference_loss, rel=1e-5, abs=1e-7)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, reference_grads[name], rtol=1e-4, atol=1e-7, msg=name)


def split_groups_of_two_rows(tiny_model_dir, tmp_path):
    """A trainer whose loss cuts each group of 4 into pieces of 2, and a micro-batch of two whole groups."""
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path, "run.loss_chunk_rows=2")
    inputs = micro_batch(rollout(trainer, shared_loss=True), torch.arange(8))
    inputs["advantages"] = torch.randn(8, generator=torch.Generator().manual_seed(6))
    loss_and_lora_grads(trainer, inputs, shared=True)  # the first call checks itself against TRL's
    return trainer, inputs


def test_a_group_larger_than_loss_chunk_rows_is_split_its_prompt_run_once_and_still_equals_trls_loss(
        tiny_model_dir, tmp_path):
    trainer, inputs = split_groups_of_two_rows(tiny_model_dir, tmp_path)
    shapes, handle = backbone_input_shapes(trainer)
    try:
        loss, grads = loss_and_lora_grads(trainer, inputs, shared=True)
    finally:
        handle.remove()
    reference_loss, reference_grads = loss_and_lora_grads(trainer, inputs, shared=False)
    assert [shape[0] for shape in shapes] == [1, 2, 2] * 2  # each group's prompt once, then its two pieces
    assert loss == pytest.approx(reference_loss, rel=1e-5, abs=1e-7)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, reference_grads[name], rtol=1e-4, atol=1e-7, msg=name)


def test_only_chunks_of_one_split_groups_rows_share_its_prompt():
    from rlvr.training.chunked_loss import loss_chunks, split_group_runs

    prompts = torch.tensor([[5, 6]] * 4 + [[7, 8]] * 1 + [[9, 9]] * 6)  # groups of 4, 1 and 6 rows
    inputs = {"prompt_ids": prompts, "prompt_mask": torch.ones_like(prompts),
              "completion_mask": torch.ones(11, 3, dtype=torch.long)}
    runs = split_group_runs(inputs, loss_chunks(inputs, "dapo", 3))
    # 4 rows -> pieces of 2 and 2, the second packed with the 1-row group; 6 rows -> pieces of 3 and 3
    assert [[rows.tolist() for rows, _ in run] for _, run in runs] == [[[0, 1]], [[2, 3, 4]], [[5, 6, 7], [8, 9, 10]]]
    assert [None if prompt is None else prompt.tolist() for prompt, _ in runs] == [None, None, [9, 9, 1, 1]]


@pytest.mark.parametrize("times", [0, 2])
def test_a_split_groups_prompt_gradient_counted_other_than_once_differs_from_trls(tiny_model_dir, tmp_path,
                                                                                  monkeypatch, times):
    """The prompt's share of the gradient is material in every layer, so the exact match above counts it once."""
    from rlvr.training.shared_prompt import SplitGroupPrompt

    trainer, inputs = split_groups_of_two_rows(tiny_model_dir, tmp_path)
    reference_loss, reference_grads = loss_and_lora_grads(trainer, inputs, shared=False)
    once = SplitGroupPrompt.backward

    def counted(self):
        for leaf in self.leaves:
            if leaf.grad is not None:
                leaf.grad.mul_(times)
        once(self)

    monkeypatch.setattr(SplitGroupPrompt, "backward", counted)
    loss, grads = loss_and_lora_grads(trainer, inputs, shared=True)
    assert loss == pytest.approx(reference_loss, rel=1e-5, abs=1e-7)  # the forward is the same
    layers = {name.split(".layers.")[1].split(".")[0] for name in grads}
    for layer in layers:
        names = [name for name in grads if f".layers.{layer}." in name]
        assert any(not torch.allclose(grads[n], reference_grads[n], rtol=1e-4, atol=1e-7) for n in names), layer


def test_a_group_whose_advantages_are_all_zero_is_not_forwarded(tiny_model_dir, tmp_path):
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path, "run.loss_chunk_rows=4")  # whole groups of 4
    inputs = micro_batch(rollout(trainer, shared_loss=True), torch.arange(8))  # two whole groups of 4
    inputs["advantages"] = torch.tensor([0.0] * 4 + [1.0, -1.0, 0.5, -0.5])
    loss_and_lora_grads(trainer, inputs, shared=True)
    shapes, handle = backbone_input_shapes(trainer)
    try:
        loss, grads = loss_and_lora_grads(trainer, inputs, shared=True)
    finally:
        handle.remove()
    reference_loss, reference_grads = loss_and_lora_grads(trainer, inputs, shared=False)
    assert [shape[0] for shape in shapes] == [1, 4]  # only the second group
    assert loss == pytest.approx(reference_loss, rel=1e-5, abs=1e-7)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, reference_grads[name], rtol=1e-4, atol=1e-7, msg=name)
    assert trainer.metric_lists["train"]["update/skipped_share"][-2] == 0.5


def test_a_model_where_the_shared_forward_disagrees_with_trl_falls_back_to_trls_path(tiny_model_dir, tmp_path,
                                                                                    monkeypatch, capsys):
    import rlvr.training.trainer as trainer_module

    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path)
    inputs = micro_batch(rollout(trainer, shared_loss=True), torch.arange(8))
    inputs["advantages"] = torch.ones(8)
    expected, _ = loss_and_lora_grads(trainer, inputs, shared=False)
    shifted = trainer_module.shared_token_logps

    def wrong(*args, **kwargs):  # a model that ignored the prompt's KV cache would give other log-probs
        logps, entropies = shifted(*args, **kwargs)
        return logps + 0.1, entropies

    monkeypatch.setattr(trainer_module, "shared_token_logps", wrong)
    trainer.shared_prompt.loss = None
    assert trainer.compute_loss(trainer.model, inputs).item() == pytest.approx(expected, rel=1e-5)
    assert "differ from TRL's" in trainer.shared_prompt.loss
    assert "shared-prompt loss off" in capsys.readouterr().err


def test_a_batch_whose_advantages_are_all_zero_skips_the_forward_and_gets_zero_gradients(tiny_model_dir, tmp_path):
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path)
    inputs = micro_batch(rollout(trainer, shared_loss=True), torch.arange(8))
    inputs["advantages"] = torch.zeros_like(inputs["advantages"])
    shapes, handle = backbone_input_shapes(trainer)
    try:
        loss, grads = loss_and_lora_grads(trainer, inputs, shared=True)
    finally:
        handle.remove()
    assert shapes == [] and loss == 0.0
    assert grads and all(torch.count_nonzero(g) == 0 for g in grads.values())


def test_rollouts_prefill_each_distinct_prompt_once(tiny_model_dir, tmp_path, monkeypatch):
    # Plain 1-shot prompts: no prefix common to all of them, so no separate prefix pass to count (the chat
    # template's shared head is prefilled once more, before the distinct prompts: tested in test_decoding).
    # Two decoding threads on any machine (with one, the 4 prompts' common head is prefilled once more).
    monkeypatch.setenv("RLVR_DECODE_WORKERS", "2")
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path, "task.chat=false", "task.shots_mix=null")
    shapes, handle = backbone_input_shapes(trainer)
    try:
        batch = rollout(trainer, shared_loss=True)
    finally:
        handle.remove()
    prefills = [shape for shape in shapes if shape[1] > 1]  # the rows are decoded in two threads of 2 prompts each
    assert sum(rows for rows, _ in prefills) == ROWS // 4  # 4 prompts, each once
    assert max(width for _, width in prefills) == batch["prompt_ids"].size(1)
    steps = [shape for shape in shapes if shape[1] == 1]  # then one token per still-running row
    assert steps and all(rows <= ROWS // 2 for rows, _ in steps)


def test_the_run_says_which_path_it_takes_and_why(tiny_model_dir, tmp_path, capsys):
    result = train(tiny_recipe(tiny_model_dir, tmp_path / "out"))
    assert "rlvr: rollouts: shared prompt; loss: shared prompt, one group at a time" in capsys.readouterr().out
    summary = json.loads((result.output_dir / "summary.json").read_text())
    assert summary["shared_prompt"] == {"rollouts": "shared prompt", "loss": "shared prompt",
                                        "loss_batch": "one group at a time"}
    checkpointed = build_trainer(tiny_recipe(tiny_model_dir, tmp_path / "gc", "grpo.gradient_checkpointing=true"),
                                 quiet=True)
    assert "gradient checkpointing" in checkpointed.shared_prompt.summary()["loss"]
    assert checkpointed.shared_prompt.rollouts is None


@pytest.mark.parametrize("setting, reason", [("grpo.entropy_coef=0.01", "entropy bonus"),
                                             ("grpo.top_entropy_quantile=0.2", "top_entropy_quantile"),
                                             ("grpo.loss_type=vespo", "not split by group")])
def test_a_loss_that_spans_the_micro_batch_runs_whole_and_says_why(tiny_model_dir, tmp_path, setting, reason):
    trainer = build_trainer(tiny_recipe(tiny_model_dir, tmp_path / "out", setting), quiet=True)
    assert reason in trainer.shared_prompt.chunks
    assert trainer.shared_prompt.summary()["loss_batch"].startswith("whole micro-batch (")


def test_rollouts_decode_with_the_adapter_merged_and_leave_it_unmerged(tiny_model_dir, tmp_path):
    """Rollouts run plain linear layers (LoRA merged in), then training goes on with the adapter separate and
    the frozen weights as they were (to float rounding)."""
    trainer = trainer_with_random_adapter(tiny_model_dir, tmp_path)
    frozen = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if not p.requires_grad}
    merged_during = []
    layer = next(m for m in trainer.model.modules() if hasattr(m, "merged") and hasattr(m, "lora_A"))
    hook = layer.register_forward_pre_hook(lambda module, _args: merged_during.append(module.merged))
    try:
        rollout(trainer, shared_loss=True)
    finally:
        hook.remove()
    assert merged_during and all(merged_during)
    assert not layer.merged
    for name, parameter in trainer.model.named_parameters():
        if name in frozen:
            torch.testing.assert_close(parameter, frozen[name], rtol=1e-6, atol=1e-6, msg=name)
