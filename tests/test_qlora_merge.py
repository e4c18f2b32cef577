"""QLoRA under DeepSpeed ZeRO-3 (4-bit storage dtype), merging into a fresh full-precision base, the ChatML setup.

Config objects and the merge path are built on CPU: bitsandbytes and a GPU are not needed to check them.
"""

import pytest
import torch

from rlvr.chat_format import CHATML_TEMPLATE, apply_chat_format
from rlvr.lora_merge import merge_adapter
from rlvr.models import deepspeed_zero3, model_kwargs, quantization_config
from rlvr.recipe_sections import ModelConfig

ZERO3_ENV = {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3"}


@pytest.fixture
def register_zero3():
    """Registers a ZeRO-3 config with transformers, as TrainingArguments does under `accelerate launch`."""
    pytest.importorskip("deepspeed")
    from transformers.integrations import HfDeepSpeedConfig
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    kept = []
    yield lambda: kept.append(HfDeepSpeedConfig({"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}))
    unset_hf_deepspeed_config()


def test_four_bit_under_zero3_stores_weights_in_the_compute_dtype():
    config = quantization_config(torch.bfloat16, zero3=True)
    assert config.load_in_4bit and config.bnb_4bit_quant_type == "nf4" and config.bnb_4bit_use_double_quant
    assert config.bnb_4bit_compute_dtype == torch.bfloat16
    assert config.bnb_4bit_quant_storage == torch.bfloat16


def test_four_bit_without_zero3_keeps_the_default_uint8_storage():
    assert quantization_config(torch.float16, zero3=False).bnb_4bit_quant_storage == torch.uint8


def test_model_kwargs_compute_in_the_model_dtype():
    kwargs = model_kwargs(ModelConfig(dtype="float16", load_in_4bit=True), four_bit=True, zero3=True)
    assert kwargs["dtype"] == torch.float16
    assert kwargs["quantization_config"].bnb_4bit_compute_dtype == torch.float16
    assert kwargs["quantization_config"].bnb_4bit_quant_storage == torch.float16


def test_no_quantization_config_without_four_bit():
    assert "quantization_config" not in model_kwargs(ModelConfig(dtype="bfloat16"), four_bit=False, zero3=True)


@pytest.mark.parametrize(
    ("env", "expected"),
    [(ZERO3_ENV, True), ({**ZERO3_ENV, "ACCELERATE_DEEPSPEED_ZERO_STAGE": "2"}, False),
     ({"ACCELERATE_DEEPSPEED_ZERO_STAGE": "3"}, False), ({}, False)],
)
def test_zero3_is_read_from_the_accelerate_launch_environment(env, expected):
    assert deepspeed_zero3(env) is expected


def test_zero3_is_read_from_the_config_registered_with_transformers(register_zero3):
    register_zero3()
    assert deepspeed_zero3({}) is True


def test_load_model_asks_for_compute_dtype_storage_when_four_bit_meets_zero3(monkeypatch, tiny_model_dir):
    from types import SimpleNamespace

    from transformers import AutoModelForCausalLM

    import rlvr.models as models

    seen = {}
    monkeypatch.setattr(models, "_four_bit_available", lambda recipe: True)
    monkeypatch.setattr(models, "keep_cpu_4bit_layers_trainable", lambda model: 0)  # nothing is loaded here
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda path, **kwargs: seen.update(kwargs))
    for key, value in ZERO3_ENV.items():
        monkeypatch.setenv(key, value)
    recipe = SimpleNamespace(model=ModelConfig(dtype="bfloat16", load_in_4bit=True))
    models.load_model(str(tiny_model_dir), recipe)
    assert seen["quantization_config"].bnb_4bit_quant_storage == torch.bfloat16


def make_adapter(base_dir, out_dir, chat_format=None, modules_to_save=None):
    """A LoRA adapter with non-zero updates on q_proj/v_proj, saved with its tokenizer."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from rlvr.models import load_tokenizer

    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    tokenizer = load_tokenizer(str(base_dir))
    if chat_format:
        apply_chat_format(model, tokenizer, chat_format)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], modules_to_save=modules_to_save)
    peft_model = get_peft_model(model, config)
    torch.manual_seed(1)
    for name, parameter in peft_model.named_parameters():
        if "lora_B" in name:
            parameter.data.normal_(0, 0.5)
    peft_model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return peft_model


def test_merge_loads_a_fresh_base_and_adds_the_lora_update(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    peft_model = make_adapter(tiny_model_dir, tmp_path / "adapter")
    merged_dir = merge_adapter(tmp_path / "adapter", str(tiny_model_dir), "float32", tmp_path / "merged")

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    layer = peft_model.base_model.model.model.layers[0].self_attn.q_proj
    delta = (layer.lora_B["default"].weight @ layer.lora_A["default"].weight) * (8 / 4)
    expected = base.model.layers[0].self_attn.q_proj.weight + delta
    merged = load_file(merged_dir / "model.safetensors")
    assert torch.allclose(merged["model.layers.0.self_attn.q_proj.weight"], expected, atol=1e-6)
    assert not (merged_dir / "adapter_config.json").exists()
    assert (merged_dir / "tokenizer_config.json").is_file()


def test_merge_runs_whole_in_one_process_while_a_zero3_config_is_registered(tiny_model_dir, tmp_path, register_zero3):
    make_adapter(tiny_model_dir, tmp_path / "adapter")
    register_zero3()  # a plain from_pretrained would now start ZeRO-3's partitioned initialisation
    merged_dir = merge_adapter(tmp_path / "adapter", str(tiny_model_dir), "float32", tmp_path / "merged")
    assert (merged_dir / "model.safetensors").is_file()
    assert deepspeed_zero3({}) is True  # the registration is restored for the rest of the run


def test_chatml_setup_ends_generation_at_im_end(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    from rlvr.models import load_tokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = load_tokenizer(str(tiny_model_dir))
    apply_chat_format(model, tokenizer, "chatml")
    assert tokenizer.eos_token == tokenizer.pad_token == "<|im_end|>" and tokenizer.bos_token == "<|im_start|>"
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id == model.config.eos_token_id
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer)
    assert tokenizer.chat_template == CHATML_TEMPLATE
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_an_adapter_trained_with_chatml_and_full_embeddings_merges_into_a_fresh_base(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    make_adapter(tiny_model_dir, tmp_path / "adapter", "chatml", modules_to_save=["lm_head", "embed_tokens"])
    merged_dir = merge_adapter(tmp_path / "adapter", str(tiny_model_dir), "float32", tmp_path / "merged", "chatml")
    merged = AutoModelForCausalLM.from_pretrained(merged_dir)
    tokenizer = AutoTokenizer.from_pretrained(merged_dir)
    assert merged.get_input_embeddings().weight.shape[0] == len(tokenizer)
    assert merged.generation_config.eos_token_id == tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_an_unknown_chat_format_is_refused():
    from rlvr.errors import RlvrError

    with pytest.raises(RlvrError, match="chat_format must be chatml or null"):
        ModelConfig(chat_format="llama3")


def test_an_adapter_is_evaluated_with_the_tokenizer_it_was_trained_with(tiny_model_dir, tmp_path):
    from rlvr.evaluation.evaluate import ModelSpec, load_for_eval

    make_adapter(tiny_model_dir, tmp_path / "adapter", "chatml", modules_to_save=["lm_head", "embed_tokens"])
    model, tokenizer, _ = load_for_eval(ModelSpec(str(tiny_model_dir), str(tmp_path / "adapter")), dtype="float32")
    assert tokenizer.eos_token == "<|im_end|>"
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer)
