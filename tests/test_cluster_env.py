"""Cluster environment detection: environment mapping -> launch arguments."""

import json

import pytest

from rlvr.errors import RlvrError
from rlvr.launch.cluster import SAGEMAKER_CHECKPOINT_DIR, ClusterEnv, detect_cluster, expand_nodelist


def no_dirs(path: str) -> bool:
    return False


def sagemaker_env(hosts, current, gpus="8", **extra):
    env = {"SM_HOSTS": json.dumps(hosts), "SM_CURRENT_HOST": current, "SM_NUM_GPUS": gpus}
    env.update(extra)
    return env


def test_an_empty_environment_is_one_local_machine():
    cluster = detect_cluster({}, no_dirs)
    assert cluster == ClusterEnv()
    assert cluster.num_machines == 1 and cluster.machine_rank == 0 and cluster.num_processes is None


def test_sagemaker_second_host_of_two_is_rank_one_and_talks_to_the_first():
    cluster = detect_cluster(sagemaker_env(["algo-1", "algo-2"], "algo-2"), no_dirs)
    assert cluster.scheduler == "sagemaker"
    assert (cluster.num_machines, cluster.machine_rank) == (2, 1)
    assert cluster.main_process_ip == "algo-1"
    assert cluster.main_process_port == 29500
    assert cluster.num_processes == 16


def test_sagemaker_channels_and_model_dir_become_data_and_output_paths():
    env = sagemaker_env(
        ["algo-1"],
        "algo-1",
        SM_CHANNEL_TRAIN="/opt/ml/input/data/train",
        SM_CHANNEL_VAL="/opt/ml/input/data/val",
        SM_MODEL_DIR="/opt/ml/model",
    )
    cluster = detect_cluster(env, no_dirs)
    assert cluster.train_data == "/opt/ml/input/data/train"
    assert cluster.val_data == "/opt/ml/input/data/val"
    assert cluster.output_dir == "/opt/ml/model"
    assert cluster.checkpoint_dir is None
    assert cluster.run_output_dir == "/opt/ml/model"


def test_sagemaker_checkpoint_dir_is_used_for_the_run_when_it_exists():
    env = sagemaker_env(["algo-1"], "algo-1", SM_MODEL_DIR="/opt/ml/model")
    cluster = detect_cluster(env, lambda path: path == SAGEMAKER_CHECKPOINT_DIR)
    assert cluster.checkpoint_dir == SAGEMAKER_CHECKPOINT_DIR
    assert cluster.run_output_dir == SAGEMAKER_CHECKPOINT_DIR


def test_sagemaker_cpu_instance_runs_one_process_per_machine():
    cluster = detect_cluster(sagemaker_env(["algo-1", "algo-2"], "algo-1", gpus="0"), no_dirs)
    assert cluster.gpus_per_machine == 0
    assert cluster.num_processes == 2


def test_sagemaker_network_interface_is_reported_for_nccl():
    env = sagemaker_env(["algo-1"], "algo-1", SM_NETWORK_INTERFACE_NAME="eth0")
    assert detect_cluster(env, no_dirs).network_interface == "eth0"


def test_sagemaker_current_host_missing_from_hosts_is_a_clear_error():
    with pytest.raises(RlvrError, match="SM_CURRENT_HOST 'algo-9'"):
        detect_cluster(sagemaker_env(["algo-1", "algo-2"], "algo-9"), no_dirs)


def test_sagemaker_hosts_that_are_not_json_are_a_clear_error():
    with pytest.raises(RlvrError, match="SM_HOSTS"):
        detect_cluster({"SM_HOSTS": "algo-1,algo-2", "SM_CURRENT_HOST": "algo-1"}, no_dirs)


def test_torchrun_variables_with_local_world_size_count_processes():
    env = {"MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "23456", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8",
           "RANK": "9", "GROUP_RANK": "1"}
    cluster = detect_cluster(env, no_dirs)
    assert cluster.scheduler == "torchrun"
    assert (cluster.num_machines, cluster.machine_rank, cluster.gpus_per_machine) == (2, 1, 8)
    assert (cluster.main_process_ip, cluster.main_process_port) == ("10.0.0.5", 23456)


def test_torchrun_machine_rank_falls_back_to_rank_over_local_world_size():
    env = {"MASTER_ADDR": "h0", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "RANK": "5"}
    assert detect_cluster(env, no_dirs).machine_rank == 1


def test_one_launcher_per_node_variables_count_machines():
    env = {"MASTER_ADDR": "trainer-master-0", "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": "2"}
    cluster = detect_cluster(env, no_dirs)
    assert (cluster.num_machines, cluster.machine_rank, cluster.gpus_per_machine) == (3, 2, None)


def test_node_rank_is_read_when_group_rank_is_absent():
    env = {"MASTER_ADDR": "h0", "WORLD_SIZE": "4", "NODE_RANK": "3"}
    assert detect_cluster(env, no_dirs).machine_rank == 3


def test_world_size_not_divisible_by_local_world_size_is_a_clear_error():
    with pytest.raises(RlvrError, match="multiple of LOCAL_WORLD_SIZE"):
        detect_cluster({"MASTER_ADDR": "h0", "WORLD_SIZE": "6", "LOCAL_WORLD_SIZE": "4"}, no_dirs)


def test_slurm_compressed_node_list_gives_the_main_host():
    env = {"SLURM_JOB_ID": "77", "SLURM_NNODES": "3", "SLURM_NODEID": "2",
           "SLURM_JOB_NODELIST": "node[01-03]", "SLURM_GPUS_ON_NODE": "4"}
    cluster = detect_cluster(env, no_dirs)
    assert cluster.scheduler == "slurm"
    assert (cluster.num_machines, cluster.machine_rank) == (3, 2)
    assert cluster.main_process_ip == "node01"
    assert cluster.num_processes == 12


def test_slurm_gpus_per_node_with_a_type_is_read():
    env = {"SLURM_JOB_ID": "1", "SLURM_JOB_NUM_NODES": "2", "SLURM_NODEID": "0",
           "SLURM_JOB_NODELIST": "gpu7,gpu9", "SLURM_GPUS_PER_NODE": "h100:8"}
    cluster = detect_cluster(env, no_dirs)
    assert cluster.gpus_per_machine == 8
    assert cluster.main_process_ip == "gpu7"


def test_slurm_master_addr_overrides_the_node_list():
    env = {"SLURM_JOB_ID": "1", "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "a[1-2]", "MASTER_ADDR": "10.1.1.1"}
    # MASTER_ADDR without WORLD_SIZE is not torchrun: Slurm still describes the job.
    cluster = detect_cluster(env, no_dirs)
    assert cluster.scheduler == "slurm"
    assert cluster.main_process_ip == "10.1.1.1"


def test_sagemaker_takes_precedence_over_torchrun_variables():
    env = sagemaker_env(["algo-1", "algo-2"], "algo-1", MASTER_ADDR="x", WORLD_SIZE="2")
    assert detect_cluster(env, no_dirs).scheduler == "sagemaker"


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("node01", ["node01"]),
        ("node[01-03]", ["node01", "node02", "node03"]),
        ("gpu[1-2,10],login", ["gpu1", "gpu2", "gpu10", "login"]),
        ("rack[1-2]-n[08-09]", ["rack1-n08", "rack1-n09", "rack2-n08", "rack2-n09"]),
        ("a[9-11],b[007]", ["a9", "a10", "a11", "b007"]),
    ],
)
def test_slurm_node_lists_expand_like_scontrol_show_hostnames(nodelist, hosts):
    assert expand_nodelist(nodelist) == hosts


def test_unreadable_slurm_node_list_is_a_clear_error():
    with pytest.raises(RlvrError, match="Slurm node list"):
        expand_nodelist("node[a-c]")


def test_non_integer_gpu_count_is_a_clear_error():
    with pytest.raises(RlvrError, match="SM_NUM_GPUS"):
        detect_cluster(sagemaker_env(["algo-1"], "algo-1", gpus="eight"), no_dirs)
