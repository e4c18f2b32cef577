"""`rlvr launch`: the exact accelerate command for one machine and for a cluster."""

import json
import shlex

import pytest

from rlvr.cli import main
from rlvr.errors import RlvrError
from rlvr.launch import accelerate as launch_accelerate
from rlvr.launch.accelerate import LaunchOptions, check_runnable, cluster_overrides, plan_launch
from rlvr.launch.cluster import ClusterEnv
from rlvr.launch.configs import resolve_config

SCHEDULER_VARIABLES = ["SM_HOSTS", "SM_CURRENT_HOST", "SM_NUM_GPUS", "SM_CHANNEL_TRAIN", "SM_CHANNEL_VAL",
                       "SM_MODEL_DIR", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "RANK",
                       "SLURM_JOB_ID", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"]


@pytest.fixture
def bare_environment(monkeypatch):
    """No scheduler variables, and a machine with a known GPU count (4) whatever runs the test."""
    for name in SCHEDULER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(launch_accelerate, "local_gpu_count", lambda: 4)
    return monkeypatch


def dry_run(capsys, *argv: str) -> list[str]:
    assert main(["launch", "--dry-run", *argv]) == 0
    return shlex.split(capsys.readouterr().out)


def test_single_node_dry_run_prints_one_process_per_gpu(bare_environment, capsys):
    words = dry_run(capsys, "--config", "zero3", "recipe.yaml", "--set", "grpo.max_steps=10")
    assert words == [
        "accelerate", "launch", "--config_file", str(resolve_config("zero3")), "--num_processes", "4",
        "-m", "rlvr", "train", "recipe.yaml", "--set", "grpo.max_steps=10",
    ]


def test_default_config_is_ddp(bare_environment, capsys):
    words = dry_run(capsys, "recipe.yaml")
    assert words[words.index("--config_file") + 1] == str(resolve_config("ddp"))


def test_explicit_flags_give_a_multi_node_command(bare_environment, capsys):
    words = dry_run(capsys, "--config", "ddp", "--num-processes", "16", "--num-machines", "2", "--machine-rank", "1",
                    "--main-process-ip", "10.0.0.1", "--main-process-port", "6000", "recipe.yaml")
    assert words[4:16] == ["--num_processes", "16", "--num_machines", "2", "--machine_rank", "1",
                           "--main_process_ip", "10.0.0.1", "--main_process_port", "6000", "-m", "rlvr"]


def test_simulated_two_node_sagemaker_job_fills_every_launch_argument(bare_environment, capsys):
    bare_environment.setenv("SM_HOSTS", json.dumps(["algo-1", "algo-2"]))
    bare_environment.setenv("SM_CURRENT_HOST", "algo-2")
    bare_environment.setenv("SM_NUM_GPUS", "8")
    bare_environment.setenv("SM_CHANNEL_TRAIN", "/opt/ml/input/data/train")
    bare_environment.setenv("SM_MODEL_DIR", "/opt/ml/model")
    words = dry_run(capsys, "--config", "zero3", "recipe.yaml")
    assert words == [
        "accelerate", "launch", "--config_file", str(resolve_config("zero3")), "--num_processes", "16",
        "--num_machines", "2", "--machine_rank", "1", "--main_process_ip", "algo-1", "--main_process_port", "29500",
        "-m", "rlvr", "train", "recipe.yaml",
        "--set", "task.data=/opt/ml/input/data/train", "--set", "run.output_dir=/opt/ml/model",
    ]


def test_flags_win_over_the_cluster_environment():
    cluster = ClusterEnv(scheduler="sagemaker", num_machines=2, machine_rank=1, main_process_ip="algo-1",
                         main_process_port=29500, gpus_per_machine=8)
    plan = plan_launch(LaunchOptions("r.yaml", num_processes=4, main_process_port=7000), cluster)
    assert plan.argv[plan.argv.index("--num_processes") + 1] == "4"
    assert plan.argv[plan.argv.index("--main_process_port") + 1] == "7000"


def test_a_cpu_machine_launches_gloo_processes_without_mixed_precision():
    plan = plan_launch(LaunchOptions("r.yaml", num_processes=2), ClusterEnv(), gpus=0)
    assert plan.on_cpu
    assert plan.env == {"ACCELERATE_USE_CPU": "true"}
    assert plan.argv[plan.argv.index("--mixed_precision") + 1] == "no"
    assert plan.shell().startswith("ACCELERATE_USE_CPU=true accelerate launch ")


def test_user_overrides_beat_the_paths_the_cluster_implies():
    cluster = ClusterEnv(train_data="/data/train", output_dir="/opt/ml/model")
    assert cluster_overrides(cluster, ["run.output_dir=/mine"]) == ["task.data=/data/train"]


def test_several_machines_without_a_main_address_is_a_clear_error():
    with pytest.raises(RlvrError, match="--main-process-ip"):
        plan_launch(LaunchOptions("r.yaml", num_machines=2), ClusterEnv(), gpus=1)


def test_process_count_must_split_evenly_across_machines():
    with pytest.raises(RlvrError, match="multiple of"):
        plan_launch(LaunchOptions("r.yaml", num_processes=3, num_machines=2, main_process_ip="h"), ClusterEnv(), gpus=1)


def test_machine_rank_outside_the_machines_is_a_clear_error():
    with pytest.raises(RlvrError, match="machine-rank"):
        plan_launch(LaunchOptions("r.yaml", num_machines=2, machine_rank=2, main_process_ip="h"), ClusterEnv(), gpus=1)


def test_unknown_config_is_one_line_on_stderr(bare_environment, capsys):
    assert main(["launch", "--dry-run", "--config", "zero4", "recipe.yaml"]) == 2
    assert "Valid accelerate configs: ddp, fsdp, zero1, zero2, zero3" in capsys.readouterr().err


def test_deepspeed_on_a_cpu_machine_launches_without_accelerates_cpu_switch():
    plan = plan_launch(LaunchOptions("r.yaml", config="zero3", num_processes=2), ClusterEnv(), gpus=0)
    assert plan.on_cpu and plan.env == {}  # ACCELERATE_USE_CPU would make Accelerate leave DeepSpeed out
    assert plan.argv[plan.argv.index("--mixed_precision") + 1] == "no"


def test_fsdp_on_a_cpu_machine_is_refused_rather_than_run_as_plain_ddp():
    plan = plan_launch(LaunchOptions("r.yaml", config="fsdp", num_processes=2), ClusterEnv(), gpus=0)
    with pytest.raises(RlvrError, match="FSDP, which Accelerate runs on GPUs only.*--config ddp, zero2 or zero3"):
        check_runnable(plan)


def test_deepspeed_config_without_deepspeed_installed_names_the_extra(monkeypatch):
    monkeypatch.setattr(launch_accelerate.importlib.util, "find_spec", lambda name: None)
    plan = plan_launch(LaunchOptions("r.yaml", config="zero2"), ClusterEnv(), gpus=1)
    with pytest.raises(RlvrError, match=r"rlvr\[deepspeed\]"):
        check_runnable(plan)


def test_a_missing_recipe_stops_before_any_process_starts(bare_environment, capsys, monkeypatch):
    monkeypatch.setattr(launch_accelerate.subprocess, "run", _no_subprocess)
    assert main(["launch", "no-such-recipe.yaml"]) == 2
    assert "recipe not found" in capsys.readouterr().err


def test_vllm_asked_on_a_machine_without_it_stops_before_launching(bare_environment, capsys, monkeypatch):
    monkeypatch.setattr(launch_accelerate.subprocess, "run", _no_subprocess)
    monkeypatch.setattr("rlvr.launch.engines.vllm_installed", lambda: False)
    assert main(["launch", "cpu-default", "--set", "grpo.use_vllm=true"]) == 2
    assert "vLLM is not installed" in capsys.readouterr().err


def _no_subprocess(*args, **kwargs):
    raise AssertionError("no process may start")


def test_resume_is_passed_on_to_rlvr_train(bare_environment, capsys):
    words = dry_run(capsys, "recipe.yaml", "--resume")
    assert words[words.index("train"):] == ["train", "recipe.yaml", "--resume", "latest"]
