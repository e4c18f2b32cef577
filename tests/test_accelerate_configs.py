"""The shipped Accelerate configs load through Accelerate itself, the way `accelerate launch` reads them.

Each config goes through accelerate's own config loader and launch-argument validation, then
the environment `accelerate launch` would hand to the processes is turned back into the
DeepSpeed / FSDP plugin a process would build. None of this needs a GPU or the deepspeed package.
"""

import os
from unittest import mock

import pytest
from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils import DeepSpeedPlugin, DistributedType, FullyShardedDataParallelPlugin
from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

from rlvr.errors import RlvrError
from rlvr.launch.configs import ACCELERATE_CONFIGS, CONFIG_DIR, resolve_config, uses_deepspeed

EXPECTED_TYPES = {
    "ddp": DistributedType.MULTI_GPU,
    "zero1": DistributedType.DEEPSPEED,
    "zero2": DistributedType.DEEPSPEED,
    "zero3": DistributedType.DEEPSPEED,
    "fsdp": DistributedType.FSDP,
}


def validated_launch_args(name: str, num_processes: int = 2):
    argv = ["--config_file", str(resolve_config(name)), "--num_processes", str(num_processes),
            "-m", "rlvr", "train", "recipe.yaml"]
    return _validate_launch_command(launch_command_parser().parse_args(argv))


def test_every_shipped_config_is_registered_and_present():
    assert ACCELERATE_CONFIGS.names() == sorted(EXPECTED_TYPES)
    for name in ACCELERATE_CONFIGS:
        assert resolve_config(name).is_file()
        assert resolve_config(name).parent == CONFIG_DIR


def test_repository_configs_folder_is_the_packaged_one():
    repo_configs = CONFIG_DIR.parents[3] / "configs" / "accelerate"
    assert repo_configs.resolve() == CONFIG_DIR.resolve()


@pytest.mark.parametrize("name", sorted(EXPECTED_TYPES))
def test_config_loads_through_accelerate_with_its_distributed_type(name):
    config = load_config_from_file(str(resolve_config(name)))
    assert isinstance(config, ClusterConfig)
    assert config.distributed_type == EXPECTED_TYPES[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_TYPES))
def test_config_passes_accelerate_launch_validation(name):
    args, defaults, _ = validated_launch_args(name)
    assert args.num_processes == 2
    assert args.use_deepspeed == (EXPECTED_TYPES[name] == DistributedType.DEEPSPEED)
    assert args.use_fsdp == (name == "fsdp")


def deepspeed_plugin_for(name: str) -> DeepSpeedPlugin:
    args, defaults, mp_from_config = validated_launch_args(name)
    fields = list(defaults.deepspeed_config) + (["mixed_precision"] if mp_from_config else [])
    args.deepspeed_fields_from_accelerate_config = ",".join(fields)
    _, env = prepare_deepspeed_cmd_env(args)
    with mock.patch.dict(os.environ, env, clear=True):
        return DeepSpeedPlugin()


@pytest.mark.parametrize(("name", "stage"), [("zero1", 1), ("zero2", 2), ("zero3", 3)])
def test_deepspeed_configs_give_their_zero_stage(name, stage):
    plugin = deepspeed_plugin_for(name)
    assert plugin.zero_stage == stage
    assert plugin.deepspeed_config["zero_optimization"]["stage"] == stage


def test_zero3_is_bf16_and_saves_a_16bit_model():
    args, _, _ = validated_launch_args("zero3")
    assert args.mixed_precision == "bf16"
    plugin = deepspeed_plugin_for("zero3")
    assert plugin.deepspeed_config["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True
    assert plugin.zero3_init_flag is True


def test_fsdp_config_builds_an_fsdp2_plugin_that_gathers_a_full_state_dict():
    args, _, _ = validated_launch_args("fsdp")
    env = prepare_multi_gpu_env(args)
    with mock.patch.dict(os.environ, env, clear=True):
        plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2
    assert plugin.reshard_after_forward is True
    assert plugin.state_dict_type.name == "FULL_STATE_DICT"


def test_resolved_zero3_settings_are_valid_for_deepspeed_itself():
    pytest.importorskip("deepspeed")
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig

    zero = DeepSpeedZeroConfig(**deepspeed_plugin_for("zero3").deepspeed_config["zero_optimization"])
    assert int(zero.stage) == 3
    assert zero.gather_16bit_weights_on_model_save is True


def test_uses_deepspeed_reads_the_file():
    assert uses_deepspeed(resolve_config("zero3"))
    assert not uses_deepspeed(resolve_config("ddp"))
    assert not uses_deepspeed(resolve_config("fsdp"))


def test_a_config_given_by_path_is_accepted(tmp_path):
    custom = tmp_path / "mine.yaml"
    custom.write_text((CONFIG_DIR / "ddp.yaml").read_text())
    assert resolve_config(str(custom)) == custom.resolve()


def test_unknown_config_name_lists_the_valid_ones():
    with pytest.raises(RlvrError, match=r"Did you mean 'zero3'\?.*ddp, fsdp, zero1, zero2, zero3"):
        resolve_config("zero4")


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(RlvrError, match="does not exist"):
        resolve_config(str(tmp_path / "nope.yaml"))
