"""Which precision a run computes in (rlvr.precision), and what bf16 weights change in training and evaluation."""

import pytest
import torch

from rlvr import precision
from rlvr.errors import RlvrError


@pytest.fixture
def bf16_cpu(monkeypatch):
    monkeypatch.setenv(precision.ENV_OVERRIDE, "1")


@pytest.fixture
def float32_cpu(monkeypatch):
    monkeypatch.setenv(precision.ENV_OVERRIDE, "0")


def test_auto_is_bf16_weights_with_float32_lora_on_a_cpu_with_bf16_units(bf16_cpu):
    chosen = precision.choose("auto", cuda=False)
    assert (chosen.dtype, chosen.adapters) == ("bfloat16", "float32")
    assert "bf16" in chosen.reason and chosen.warning is None


def test_auto_is_float32_on_a_cpu_without_bf16_units_and_says_why(float32_cpu):
    chosen = precision.choose("auto", cuda=False)
    assert chosen.dtype == "float32" and chosen.adapters is None
    assert "no bf16 units" in chosen.line() and "avx512_bf16" in chosen.line()


def test_a_forced_dtype_is_kept_either_way(bf16_cpu):
    assert precision.choose("float32", cuda=False).dtype == "float32"
    assert precision.choose("bfloat16", cuda=False).warning is None


def test_bf16_forced_on_a_cpu_without_it_runs_with_a_warning(float32_cpu):
    chosen = precision.choose("bfloat16", cuda=False)
    assert chosen.dtype == "bfloat16" and "emulated" in chosen.warning


def test_auto_keeps_float32_when_every_weight_is_trained_or_4bit(bf16_cpu):
    assert precision.choose("auto", trains_base=True, cuda=False).dtype == "float32"
    assert precision.choose("auto", four_bit=True, cuda=False).dtype == "float32"


def test_an_unknown_dtype_is_one_clear_error():
    with pytest.raises(RlvrError, match="model.dtype must be one of"):
        precision.choose("bf16", cuda=False)


def test_cpu_flags_are_read_from_x86_and_arm_cpuinfo(tmp_path):
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 sse2\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16 sve\n")
    assert "avx512_bf16" in precision.cpu_flags(str(x86))
    assert "bf16" in precision.cpu_flags(str(arm))
    assert precision.cpu_flags(str(tmp_path / "missing")) == set()


def test_the_recipe_model_section_chooses_the_same_precision_for_training_and_evaluation(bf16_cpu):
    from rlvr.models import model_precision
    from rlvr.recipe_sections import ModelConfig

    assert model_precision(ModelConfig(dtype="auto", lora=True)).dtype == "bfloat16"
    assert model_precision(ModelConfig(dtype="auto", lora=False)).dtype == "float32"  # full fine-tuning
    assert model_precision(ModelConfig(dtype="auto", lora=False), evaluating=True).dtype == "bfloat16"


def test_an_evaluation_line_names_the_weights_dtype_and_no_optimizer(bf16_cpu):
    from rlvr.models import model_precision
    from rlvr.recipe_sections import ModelConfig

    line = model_precision(ModelConfig(dtype="auto", lora=True), evaluating=True).line()
    assert line.startswith("rlvr: precision: bfloat16 weights (auto:") and "optimizer" not in line


# ------------------------------------------------------------------ bf16 weights in a model


def _tiny_lora_model(model_dir, dtype):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    model = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    torch.manual_seed(0)
    for name, parameter in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(parameter, std=0.05)
    return model


def test_lora_merged_into_bf16_weights_gives_them_back_bit_for_bit(tiny_model_dir):
    from rlvr.lora_merge import lora_merged

    model = _tiny_lora_model(tiny_model_dir, torch.bfloat16)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        unmerged = model(input_ids=ids).logits
        for _ in range(3):
            with lora_merged(model) as merged:
                assert merged
                merged_logits = model(input_ids=ids).logits
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    assert (merged_logits.float() - unmerged.float()).abs().max() < 0.1  # bf16 rounding, not a different model


def test_lora_merged_into_bf16_weights_is_what_merge_and_unload_saves(tiny_model_dir):
    from rlvr.lora_merge import lora_merged

    model = _tiny_lora_model(tiny_model_dir, torch.bfloat16)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        with lora_merged(model):
            ours = model(input_ids=ids).logits
        theirs = model.merge_and_unload()(input_ids=ids).logits
    assert torch.equal(ours, theirs)  # rlvr eval --adapter judges the same weights the run judged


def test_float32_weights_widen_for_a_check_and_restore_exactly(tiny_model_dir):
    from rlvr.lora_merge import float32_weights

    model = _tiny_lora_model(tiny_model_dir, torch.bfloat16)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    with float32_weights(model):
        assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert all(p.dtype == before[n].dtype and torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_training_under_bf16_keeps_lora_and_its_optimizer_in_float32_and_the_base_untouched(
        tiny_model_dir, tmp_path, bf16_cpu):
    from rlvr.config import load_recipe
    from rlvr.training.run import build_trainer

    rewards = tmp_path / "length_reward.py"  # varies within every group, so every step learns something
    rewards.write_text("def length(completions, **kw):\n"
                       "    return [float(len(str(c))) for c in completions]\n")
    recipe = load_recipe(None, [
        f'rewards=[{{name: "{rewards}:length", weight: 1.0}}]',
        f"model.name_or_path={tiny_model_dir}", "task.train_size=16", "task.shots=1", "grpo.max_steps=2",
        "grpo.per_device_train_batch_size=8", "grpo.num_generations=4", "grpo.max_completion_length=8",
        "grpo.save_strategy=no", "grpo.report_to=[]", "run.eval_items=0", "run.keep_best=false",
        "run.test_items=0", f"run.output_dir={tmp_path / 'out'}", "grpo.learning_rate=0.01",
    ])
    trainer = build_trainer(recipe, quiet=True)
    assert trainer.rlvr_precision.dtype == "bfloat16"
    frozen = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if not p.requires_grad}
    lora = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert {p.dtype for p in frozen.values()} == {torch.bfloat16}
    assert {p.dtype for p in lora.values()} == {torch.float32}
    trainer.train()
    params = dict(trainer.model.named_parameters())
    assert all(torch.equal(params[n], p) for n, p in frozen.items())  # rollouts merged and gave them back
    assert any(not torch.equal(params[n], p) for n, p in lora.items())  # and LoRA learned
    states = [s for s in trainer.optimizer.state.values() if s]
    assert states and all(t.dtype == torch.float32 for s in states for t in s.values() if torch.is_tensor(t)
                          and t.is_floating_point() and t.dim() > 0)


def test_the_summary_and_the_verdict_record_the_precision(tiny_model_dir, tmp_path, bf16_cpu):
    import json

    from rlvr.config import load_recipe
    from rlvr.training.run import train

    recipe = load_recipe(None, [
        f"model.name_or_path={tiny_model_dir}", "task.train_size=16", "task.test_size=8", "task.validation_size=4",
        "task.shots=1", "grpo.max_steps=1", "grpo.per_device_train_batch_size=8", "grpo.num_generations=4",
        "grpo.max_completion_length=8", "grpo.save_strategy=no", "grpo.report_to=[]", "run.eval_items=0",
        "run.keep_best=false", "run.test_items=8", "run.eval_max_new_tokens=8", f"run.output_dir={tmp_path / 'out'}",
    ])
    train(recipe, quiet=True)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["precision"]["dtype"] == "bfloat16" and summary["precision"]["adapters"] == "float32"
    assert summary["test"]["precision"] == "bfloat16"


def test_the_fused_head_backward_with_a_cached_float32_weight_gives_trls_gradients_bit_for_bit():
    from trl.kernels.chunked_logprob import ChunkedLogProbFunction

    from rlvr.training.trl_compat import Float32Copies, frozen_head_in_float32

    torch.manual_seed(0)
    weight = torch.randn(4096, 256).to(torch.bfloat16)  # a frozen LM head of 1M values
    targets = torch.randint(0, 4096, (24,))

    def gradient(copies=None):
        hidden = torch.randn(24, 256, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16).requires_grad_()
        log_probs = ChunkedLogProbFunction.apply(hidden, weight, None, targets, 0.7, 4096)[0]
        log_probs.sum().backward()
        return hidden.grad

    expected = gradient()
    copies = Float32Copies()
    with frozen_head_in_float32(copies):
        assert torch.equal(gradient(copies), expected)
        assert torch.equal(gradient(copies), expected)
    assert copies.copies  # the widened chunks were kept for the next backward


def test_lora_merged_in_place_into_bf16_weights_gives_them_back_bit_for_bit_without_copies(tiny_model_dir):
    from rlvr.lora_merge import lora_merged

    model = _tiny_lora_model(tiny_model_dir, torch.bfloat16)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    storage = {n: p.data_ptr() for n, p in model.named_parameters()}
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        with lora_merged(model) as merged:
            copies = model(input_ids=ids).logits
        for _ in range(5):
            with lora_merged(model, in_place=True) as merged:
                assert merged and all(p.data_ptr() == storage[n] for n, p in model.named_parameters())
                in_place = model(input_ids=ids).logits
    assert torch.equal(in_place, copies)  # the same merged weights either way
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_importing_rlvr_bounds_onednn_kernel_cache_unless_the_user_set_it():
    import os
    import subprocess
    import sys

    code = "import rlvr, os; print(os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'])"
    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.strip() == "64"
    env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = "512"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.strip() == "512"
