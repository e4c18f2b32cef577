"""`rlvr sagemaker submit`: the job request printed by --dry-run, staging, and the job's entry script."""

import datetime as dt
import json

import pytest

from rlvr.cli import main
from rlvr.errors import RlvrError
from rlvr.launch import sagemaker_entry
from rlvr.launch.sagemaker import (
    DEFAULT_BUCKET,
    MASK,
    NCCL_EFA_ENVIRONMENT,
    SubmitOptions,
    build_job_request,
    masked,
    stage_source,
)

NOW = dt.datetime(2026, 12, 2, 12, 0, 0, tzinfo=dt.timezone.utc)
SECRET = "hf_not_a_real_token_123"


@pytest.fixture
def recipe(tmp_path):
    path = tmp_path / "gsm8k-qwen.yaml"
    path.write_text("model:\n  name_or_path: tiny\n", encoding="utf-8")
    return path


def request_for(recipe, **options):
    return build_job_request(SubmitOptions(recipe=str(recipe), instance_type="ml.g6.48xlarge", **options),
                             {"HF_TOKEN": SECRET, "AWS_SECRET_ACCESS_KEY": "not-passed"}, now=NOW)


def submit_dry_run(capsys, monkeypatch, *argv):
    monkeypatch.setenv("HF_TOKEN", SECRET)
    assert main(["sagemaker", "submit", "--dry-run", *argv]) == 0
    out = capsys.readouterr().out
    return out, json.loads(out)


def test_dry_run_prints_a_complete_job_request_without_aws(recipe, capsys, monkeypatch):
    out, request = submit_dry_run(capsys, monkeypatch, str(recipe), "--instance-type", "ml.g6.48xlarge",
                                  "--instance-count", "2", "--train", "s3://data/gsm8k/train",
                                  "--val", "s3://data/gsm8k/val", "--set", "grpo.max_steps=500")
    assert set(request) >= {"base_job_name", "role", "training_image", "source_code", "compute", "input_data_config",
                            "checkpoint_config", "output_data_config", "stopping_condition", "environment"}
    assert request["base_job_name"] == "rlvr-gsm8k-qwen"
    assert request["compute"] == {"instance_type": "ml.g6.48xlarge", "instance_count": 2,
                                  "volume_size_in_gb": 200, "keep_alive_period_in_seconds": 1800}
    assert request["source_code"]["command"] == (
        "python rlvr_entry.py --config zero3 gsm8k-qwen.yaml --set grpo.max_steps=500")
    assert request["source_code"]["requirements"] == "requirements.txt"
    assert request["input_data_config"] == [
        {"channel_name": "train", "data_source": "s3://data/gsm8k/train"},
        {"channel_name": "val", "data_source": "s3://data/gsm8k/val"},
    ]
    assert request["uploads"] == []
    assert request["stopping_condition"] == {"max_runtime_in_seconds": 24 * 3600}
    assert SECRET not in out


def test_checkpoints_and_output_go_under_one_job_prefix(recipe):
    request = request_for(recipe, bucket="my-bucket")
    prefix = "s3://my-bucket/rlvr/rlvr-gsm8k-qwen/20261202-120000"
    assert request["checkpoint_config"] == {"s3_uri": f"{prefix}/checkpoints", "local_path": "/opt/ml/checkpoints"}
    assert request["output_data_config"] == {"s3_output_path": f"{prefix}/output"}


def test_without_a_bucket_the_request_names_the_session_default_bucket(recipe):
    request = request_for(recipe)
    assert request["output_data_config"]["s3_output_path"].startswith(f"s3://{DEFAULT_BUCKET}/rlvr/")


def test_local_data_is_listed_for_upload_to_the_job_prefix(recipe, tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text("{}\n")
    request = request_for(recipe, train=str(data), bucket="b")
    uri = "s3://b/rlvr/rlvr-gsm8k-qwen/20261202-120000/data/train"
    assert request["uploads"] == [{"local_path": str(data), "s3_uri": uri}]
    assert request["input_data_config"] == [{"channel_name": "train", "data_source": uri}]


def test_missing_local_data_is_a_clear_error(recipe, tmp_path):
    with pytest.raises(RlvrError, match="--train .* neither an s3:// URI nor an existing"):
        request_for(recipe, train=str(tmp_path / "nope"))


def test_environment_carries_nccl_efa_settings_and_mlflow(recipe):
    env = request_for(recipe, mlflow_uri="arn:aws:sagemaker:us-east-1:1:mlflow-tracking-server/t")["environment"]
    for key, value in NCCL_EFA_ENVIRONMENT.items():
        assert env[key] == value
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1" and env["NCCL_PROTO"] == "simple"
    assert env["MLFLOW_TRACKING_URI"] == "arn:aws:sagemaker:us-east-1:1:mlflow-tracking-server/t"


def test_mlflow_arn_adds_the_sagemaker_mlflow_plugin_to_requirements(recipe):
    with_arn = request_for(recipe, mlflow_uri="arn:aws:sagemaker:us-east-1:1:mlflow-tracking-server/t")
    assert "sagemaker-mlflow" in with_arn["staging"]["requirements_txt"]
    assert "sagemaker-mlflow" not in request_for(recipe)["staging"]["requirements_txt"]


def test_hf_token_is_passed_through_but_masked_when_printed(recipe):
    request = request_for(recipe)
    assert request["environment"]["HF_TOKEN"] == SECRET
    assert "AWS_SECRET_ACCESS_KEY" not in request["environment"]
    assert masked(request)["environment"]["HF_TOKEN"] == MASK
    assert SECRET not in json.dumps(masked(request))
    assert request["environment"]["HF_TOKEN"] == SECRET  # masking copies


def test_no_hf_token_in_the_caller_environment_means_none_in_the_job(recipe):
    request = build_job_request(SubmitOptions(recipe=str(recipe), instance_type="ml.g6.48xlarge"), {}, now=NOW)
    assert "HF_TOKEN" not in request["environment"]


def test_a_secret_given_with_env_is_refused(recipe):
    with pytest.raises(RlvrError, match="export it"):
        request_for(recipe, extra_env=["HF_TOKEN=abc"])


def test_extra_env_pairs_reach_the_job(recipe):
    assert request_for(recipe, extra_env=["NCCL_DEBUG=INFO"])["environment"]["NCCL_DEBUG"] == "INFO"


def test_requirements_follow_the_config_and_leave_torch_to_the_image(recipe):
    zero3 = request_for(recipe)["staging"]["requirements_txt"]
    ddp = request_for(recipe, config="ddp")["staging"]["requirements_txt"]
    assert any(line.startswith("deepspeed") for line in zero3)
    assert not any(line.startswith("deepspeed") for line in ddp)
    assert any(line.startswith("trl") for line in ddp)
    assert not any(line.split("=")[0].split(">")[0] == "torch" for line in zero3 + ddp)


def test_keep_alive_beyond_the_warm_pool_limit_is_refused(recipe):
    with pytest.raises(RlvrError, match="keep-alive"):
        request_for(recipe, keep_alive_seconds=7200)


def test_instance_type_must_be_a_sagemaker_type(recipe):
    with pytest.raises(RlvrError, match="ml.g6.48xlarge"):
        build_job_request(SubmitOptions(recipe=str(recipe), instance_type="g6.48xlarge"), {}, now=NOW)


def test_missing_recipe_is_one_line_on_stderr(capsys, tmp_path):
    code = main(["sagemaker", "submit", "--dry-run", str(tmp_path / "none.yaml"), "--instance-type", "ml.g5.xlarge"])
    assert code == 2
    assert "does not exist" in capsys.readouterr().err


def test_staged_source_holds_package_recipe_requirements_entry_and_no_secret(recipe, tmp_path):
    request = request_for(recipe)
    staged = stage_source(request, tmp_path / "staged")
    assert (staged / "src" / "rlvr" / "cli.py").is_file()
    assert (staged / "src" / "rlvr" / "configs" / "accelerate" / "zero3.yaml").is_file()
    assert (staged / "gsm8k-qwen.yaml").read_text() == recipe.read_text()
    assert (staged / "rlvr_entry.py").is_file()
    assert "trl==1.16.0" in (staged / "requirements.txt").read_text().splitlines()
    for path in staged.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="ignore"), path


def test_entry_publishes_the_final_run_but_not_intermediate_checkpoints(tmp_path):
    run, model = tmp_path / "checkpoints", tmp_path / "model"
    (run / "checkpoint-100").mkdir(parents=True)
    (run / "checkpoint-100" / "optimizer.pt").write_text("x")
    (run / "adapter").mkdir()
    (run / "adapter" / "adapter_model.safetensors").write_text("w")
    (run / "metrics.jsonl").write_text("{}")
    model.mkdir()
    sagemaker_entry.publish_model(str(run), str(model))
    assert sorted(p.name for p in model.iterdir()) == ["adapter", "metrics.jsonl"]
    assert (model / "adapter" / "adapter_model.safetensors").read_text() == "w"


def test_entry_runs_rlvr_launch_with_the_sagemaker_environment(monkeypatch, capsys):
    monkeypatch.setenv("SM_HOSTS", '["algo-1", "algo-2"]')
    monkeypatch.setenv("SM_CURRENT_HOST", "algo-2")
    monkeypatch.setenv("SM_NUM_GPUS", "8")
    monkeypatch.setenv("SM_NETWORK_INTERFACE_NAME", "eth7")
    monkeypatch.delenv("NCCL_SOCKET_IFNAME", raising=False)
    assert sagemaker_entry.main(["--config", "zero3", "--dry-run", "recipe.yaml"]) == 0
    out = capsys.readouterr().out
    assert "--num_processes 16 --num_machines 2 --machine_rank 1 --main_process_ip algo-1" in out
    import os

    assert os.environ["NCCL_SOCKET_IFNAME"] == "eth7"


def test_entry_resumes_when_the_synced_checkpoint_dir_has_a_checkpoint(monkeypatch, tmp_path, capsys):
    (tmp_path / "checkpoint-20").mkdir()
    (tmp_path / "checkpoint-20" / "rlvr_state.json").write_text("{}")  # marked complete
    (tmp_path / "checkpoint-30").mkdir()  # cut short by the interruption
    monkeypatch.setattr("rlvr.launch.cluster.SAGEMAKER_CHECKPOINT_DIR", str(tmp_path))
    monkeypatch.setenv("SM_HOSTS", '["algo-1"]')
    monkeypatch.setenv("SM_CURRENT_HOST", "algo-1")
    monkeypatch.setenv("SM_NUM_GPUS", "1")
    monkeypatch.setenv("SM_MODEL_DIR", str(tmp_path / "model"))
    (tmp_path / "model").mkdir()
    assert sagemaker_entry.main(["--config", "ddp", "--dry-run", "recipe.yaml"]) == 0
    out = capsys.readouterr().out
    assert f"train recipe.yaml --resume latest --set run.output_dir={tmp_path}" in out


def test_mlflow_tags_name_the_recipe_the_commit_and_the_rlvr_version(recipe, tmp_path):
    from rlvr import __version__

    named = tmp_path / "named.yaml"
    named.write_text("name: my-run\nmodel:\n  name_or_path: tiny\n", encoding="utf-8")
    options = SubmitOptions(recipe=str(named), instance_type="ml.g6.48xlarge", mlflow_uri="http://mlflow:5000")
    request = build_job_request(options, {}, now=NOW, git_commit=lambda: "abc123")
    tags = json.loads(request["environment"]["MLFLOW_TAGS"])
    assert tags == {"rlvr.recipe": "my-run", "rlvr.recipe_file": "named.yaml", "rlvr.git_commit": "abc123",
                    "rlvr.version": __version__}


def test_mlflow_tags_follow_a_name_override_and_keep_the_users_own_tags(recipe):
    options = SubmitOptions(recipe=str(recipe), instance_type="ml.g6.48xlarge", overrides=["name=renamed"],
                            extra_env=['MLFLOW_TAGS={"team": "math", "rlvr.version": "mine"}'])
    tags = json.loads(build_job_request(options, {}, now=NOW, git_commit=lambda: None)["environment"]["MLFLOW_TAGS"])
    assert tags["rlvr.recipe"] == "renamed" and tags["rlvr.git_commit"] == "unknown"
    assert tags["team"] == "math" and tags["rlvr.version"] == "mine"


def test_mlflow_tags_from_env_must_be_a_json_object(recipe):
    options = SubmitOptions(recipe=str(recipe), instance_type="ml.g6.48xlarge", extra_env=["MLFLOW_TAGS=team"])
    with pytest.raises(RlvrError, match="MLFLOW_TAGS must be a JSON object"):
        build_job_request(options, {}, now=NOW)


def test_the_shipped_commit_is_read_from_git():
    from rlvr.launch.sagemaker import rlvr_git_commit

    commit = rlvr_git_commit()
    assert commit is None or len(commit.removesuffix("-dirty")) == 40


def test_no_tracking_uri_warns_that_the_runs_would_be_lost(recipe, capsys, monkeypatch):
    submit_dry_run(capsys, monkeypatch, str(recipe), "--instance-type", "ml.g6.48xlarge")
    assert main(["sagemaker", "submit", "--dry-run", str(recipe), "--instance-type", "ml.g6.48xlarge"]) == 0
    err = capsys.readouterr().err
    assert "rlvr: warning: no MLflow tracking URI" in err and "lost when the job ends" in err


@pytest.mark.parametrize("extra", [
    {"mlflow_uri": "arn:aws:sagemaker:us-east-1:1:mlflow-tracking-server/t"},
    {"extra_env": ["MLFLOW_TRACKING_URI=http://mlflow:5000"]},
    {"overrides": ["run.tracking_uri=http://mlflow:5000"]},
])
def test_a_tracking_uri_from_the_flag_the_env_or_the_recipe_silences_the_warning(recipe, extra):
    assert request_for(recipe, **extra)["warnings"] == []
