"""The vLLM check: one clear line before training when vLLM cannot run here."""

import pytest

from rlvr.errors import RlvrError
from rlvr.launch.engines import check_generation_engine


def yes():
    return True


def no():
    return False


def test_transformers_generation_needs_nothing():
    check_generation_engine({"use_vllm": False}, has_vllm=no, has_gpu=no)
    check_generation_engine({}, has_vllm=no, has_gpu=no)


def test_vllm_without_the_package_names_the_extra():
    with pytest.raises(RlvrError, match=r"not installed: pip install 'rlvr\[vllm\]'"):
        check_generation_engine({"use_vllm": True}, has_vllm=no, has_gpu=yes)


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_vllm_without_a_gpu_says_so_in_either_mode(mode):
    with pytest.raises(RlvrError, match=f"vllm_mode {mode}.*no CUDA GPU"):
        check_generation_engine({"use_vllm": True, "vllm_mode": mode}, has_vllm=yes, has_gpu=no)


def test_vllm_with_package_and_gpu_passes():
    check_generation_engine({"use_vllm": True, "vllm_mode": "server"}, has_vllm=yes, has_gpu=yes)


def test_vllms_cpu_build_counts_as_an_engine_on_a_machine_without_a_gpu(monkeypatch):
    monkeypatch.setattr("rlvr.launch.engines.cuda_available", no)
    monkeypatch.setattr("rlvr.launch.engines.vllm_cpu_build", yes)
    check_generation_engine({"use_vllm": True, "vllm_mode": "colocate"}, has_vllm=yes)


def test_eval_takes_vllms_cpu_build_only_when_asked(monkeypatch):
    from rlvr.evaluation import backends

    monkeypatch.setattr(backends.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr("rlvr.launch.engines.vllm_cpu_build", yes)
    monkeypatch.setattr("torch.cuda.is_available", no)
    assert backends.choose_backend("vllm") == "vllm"
    assert backends.choose_backend("auto") == "hf"  # on CPU vLLM is opt-in


def test_unknown_vllm_mode_lists_the_valid_ones():
    with pytest.raises(RlvrError, match="colocate, server"):
        check_generation_engine({"use_vllm": True, "vllm_mode": "remote"}, has_vllm=yes, has_gpu=yes)


def test_use_vllm_given_as_text_from_set_counts():
    with pytest.raises(RlvrError, match="not installed"):
        check_generation_engine({"use_vllm": "true"}, has_vllm=no, has_gpu=yes)


def test_the_messages_are_one_line():
    for grpo, has_vllm in (({"use_vllm": True}, no), ({"use_vllm": True}, yes)):
        with pytest.raises(RlvrError) as error:
            check_generation_engine(grpo, has_vllm=has_vllm, has_gpu=no)
        assert "\n" not in str(error.value)


def test_train_checks_the_engine_before_loading_anything(monkeypatch):
    from rlvr.config import Recipe, RunConfig
    from rlvr.recipe_sections import ModelConfig
    from rlvr.training.run import build_trainer

    monkeypatch.setattr("rlvr.launch.engines.vllm_installed", no)
    recipe = Recipe(name="r", model=ModelConfig(name_or_path="/nonexistent/model"), task={"name": "arithmetic"},
                    rewards=[], grpo={"use_vllm": True}, run=RunConfig())
    with pytest.raises(RlvrError, match="vLLM is not installed"):
        build_trainer(recipe, quiet=True)


def test_vllm_recipe_fields_pass_through_to_trl_grpo_config():
    from rlvr.config import load_recipe
    from rlvr.training.grpo_args import grpo_config

    overrides = ["grpo.use_vllm=true", "grpo.vllm_mode=server", "grpo.vllm_server_base_url=http://10.0.0.2:8000",
                 "grpo.vllm_gpu_memory_utilization=0.25", "run.output_dir=/tmp/rlvr-vllm-fields"]
    args = grpo_config(load_recipe("cpu-default", overrides))
    assert args.use_vllm is True
    assert args.vllm_mode == "server"
    assert args.vllm_server_base_url == "http://10.0.0.2:8000"
    assert args.vllm_gpu_memory_utilization == 0.25


def _fake_vllm(monkeypatch):
    """Stand-ins for the two vLLM modules whose load-time switches rlvr turns (vllm is not in the test env)."""
    import sys
    import types

    ops = types.ModuleType("vllm._custom_ops")
    ops._supports_onednn = True
    utils = types.ModuleType("vllm.model_executor.layers.utils")
    utils.check_cpu_sgl_kernel = lambda n, k, dtype: True
    layers = types.ModuleType("vllm.model_executor.layers")
    layers.utils = utils
    vllm = types.ModuleType("vllm")
    vllm._custom_ops = ops
    for name, module in (("vllm", vllm), ("vllm._custom_ops", ops), ("vllm.model_executor", types.ModuleType("x")),
                         ("vllm.model_executor.layers", layers), ("vllm.model_executor.layers.utils", utils)):
        monkeypatch.setitem(sys.modules, name, module)
    return ops, utils


def test_colocated_vllm_cpu_keeps_its_linear_weights_loadable_for_trls_sync(monkeypatch):
    from rlvr.training.vllm_cpu import keep_vllm_cpu_weights_loadable

    ops, utils = _fake_vllm(monkeypatch)
    monkeypatch.setattr("rlvr.launch.engines.cuda_available", no)
    monkeypatch.setattr("rlvr.launch.engines.vllm_cpu_build", yes)
    assert keep_vllm_cpu_weights_loadable({"use_vllm": "true", "vllm_mode": "colocate"})
    assert ops._supports_onednn is False  # no oneDNN packing: the layer keeps `weight` and its weight_loader
    assert utils.check_cpu_sgl_kernel(64, 64, None) is False  # nor the AMX packing


@pytest.mark.parametrize(("grpo", "gpu", "cpu_build"), [
    ({"use_vllm": False}, False, True),
    ({"use_vllm": True, "vllm_mode": "server"}, False, True),
    ({"use_vllm": True}, True, True),
    ({"use_vllm": True}, False, False),
])
def test_vllm_is_left_alone_unless_colocated_on_its_cpu_build(monkeypatch, grpo, gpu, cpu_build):
    from rlvr.training.vllm_cpu import keep_vllm_cpu_weights_loadable

    ops, utils = _fake_vllm(monkeypatch)
    monkeypatch.setattr("rlvr.launch.engines.cuda_available", lambda: gpu)
    monkeypatch.setattr("rlvr.launch.engines.vllm_cpu_build", lambda: cpu_build)
    assert not keep_vllm_cpu_weights_loadable(grpo)
    assert ops._supports_onednn is True
