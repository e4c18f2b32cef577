"""QLoRA on a CPU: NF4 base weights through bitsandbytes' CPU backend, float32 compute, LoRA trained on top.

Needs bitsandbytes (the ``qlora`` extra, which CI installs); a machine without it is covered by the
fallback tests in test_train.py.
"""

import pytest
import torch
from test_train import tiny_recipe

from rlvr.models import adapters_in_compute_dtype, four_bit_unavailable, keep_cpu_4bit_layers_trainable
from rlvr.training.run import train

bnb = pytest.importorskip("bitsandbytes")
if four_bit_unavailable():
    pytest.skip(f"4-bit unavailable here: {four_bit_unavailable()}", allow_module_level=True)


def four_bit_lora(model_dir, keep_trainable=True):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from rlvr.models import quantization_config

    model = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32, quantization_config=quantization_config(torch.float32, zero3=False))
    if keep_trainable:
        keep_cpu_4bit_layers_trainable(model)
    torch.manual_seed(0)
    return get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))


def lora_gradients(model, after_generation):
    ids = torch.tensor([[3, 5, 7, 9, 11, 13]])
    if after_generation:  # what GRPO does before each update: an eval-mode forward without gradients
        model.eval()
        with torch.no_grad():
            model(input_ids=ids)
    model.train()
    model(input_ids=ids, labels=ids).loss.backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.requires_grad}


def test_lora_gradients_through_4bit_layers_are_the_same_before_and_after_a_generation_pass(tiny_model_dir):
    fresh = lora_gradients(four_bit_lora(tiny_model_dir), after_generation=False)
    after = lora_gradients(four_bit_lora(tiny_model_dir), after_generation=True)
    assert fresh.keys() == after.keys()
    for name in fresh:
        assert torch.equal(fresh[name], after[name]), name


def test_trainable_adapters_of_a_4bit_model_take_its_float32_compute_dtype(tiny_model_dir):
    model = four_bit_lora(tiny_model_dir)
    for parameter in model.parameters():
        if parameter.requires_grad:
            parameter.data = parameter.data.to(torch.bfloat16)  # what TRL's GRPOTrainer does to quantized models
    assert adapters_in_compute_dtype(model) > 0
    assert {p.dtype for p in model.parameters() if p.requires_grad} == {torch.float32}


def test_a_4bit_run_on_cpu_trains_nf4_layers_saves_an_adapter_and_merges_it_at_full_precision(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file

    from rlvr.training.run import build_trainer

    recipe = tiny_recipe(tiny_model_dir, tmp_path / "out", "model.load_in_4bit=true", "model.quantization_fallback=error",
                         "run.merge_adapter=true")
    trainer = build_trainer(recipe, quiet=True)
    layers = [m for m in trainer.model.modules() if isinstance(m, bnb.nn.Linear4bit)]
    assert layers and all(m.weight.quant_state.quant_type == "nf4" for m in layers)
    assert {p.dtype for p in trainer.model.parameters() if p.requires_grad} == {torch.float32}

    result = train(recipe, quiet=True)
    assert result.steps == 2
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()
    merged = load_file(result.merged_dir / "model.safetensors")
    assert {t.dtype for t in merged.values()} == {torch.float32}  # a full-precision model, no packed 4-bit weights
    assert not any("quant" in key or "absmax" in key for key in merged)
