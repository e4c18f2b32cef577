"""SageMaker training jobs: the job request as plain data, then ModelTrainer calls.

:func:`build_job_request` turns the user's options into a JSON-ready dict that
says everything the job will be: image, source code and entry command,
instances, input channels, checkpoint sync, output path, stopping condition,
keep-alive, environment. It needs neither AWS nor the ``sagemaker`` package, so
``rlvr sagemaker submit --dry-run`` prints it and the tests check it.
:func:`submit` then stages the code, uploads local data and hands the same
request to the SageMaker Python SDK's ``ModelTrainer``.

Secrets (``HF_TOKEN``) are only copied from the caller's environment into the
job's environment; they are never written into the staged files and are
masked whenever the request is printed.
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib.metadata
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.launch.cluster import SAGEMAKER_CHECKPOINT_DIR
from rlvr.launch.configs import ACCELERATE_CONFIGS, resolve_config, uses_deepspeed

#: Environment of the published multi-node recipe: NCCL over AWS EFA (libfabric).
NCCL_EFA_ENVIRONMENT = {
    "NCCL_DEBUG": "WARN",
    "NCCL_PROTO": "simple",
    "FI_PROVIDER": "efa",
    "FI_EFA_USE_DEVICE_RDMA": "1",
    "FI_EFA_FORK_SAFE": "1",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
#: Secrets passed through from the caller's environment when set there, and only then.
SECRET_VARIABLES = ("HF_TOKEN",)
MASK = "********"
#: Where the SDK resolves a bucket the dry run cannot know without AWS.
DEFAULT_BUCKET = "<session-default-bucket>"
DEFAULT_ROLE = "<execution role of this AWS session>"
#: SageMaker PyTorch training image used when --image-uri is not given (resolved by the SDK per region).
IMAGE_FRAMEWORK, IMAGE_VERSION, IMAGE_PY_VERSION = "pytorch", "2.10.0", "py313"
ENTRY_SCRIPT = "rlvr_entry.py"
STAGED_SOURCE = "<staged at submit: rlvr package, recipe, requirements.txt, entry script>"
CHANNELS = ("train", "val")


@dataclass
class SubmitOptions:
    """``rlvr sagemaker submit`` arguments."""

    recipe: str
    instance_type: str
    instance_count: int = 1
    config: str = "zero3"
    train: str | None = None
    val: str | None = None
    mlflow_uri: str | None = None
    overrides: list[str] = field(default_factory=list)
    role: str | None = None
    image_uri: str | None = None
    bucket: str | None = None
    job_name: str | None = None
    max_runtime_hours: float = 24.0
    keep_alive_seconds: int = 1800
    volume_size_gb: int = 200
    extra_env: list[str] = field(default_factory=list)


def build_job_request(
    options: SubmitOptions,
    caller_env: Mapping[str, str],
    now: dt.datetime | None = None,
    is_file: Callable[[str], bool] = lambda p: Path(p).is_file(),
    exists: Callable[[str], bool] = lambda p: Path(p).exists(),
    git_commit: Callable[[], str | None] | None = None,
) -> dict[str, Any]:
    """The whole job as plain data; ``caller_env`` supplies secrets, ``now`` the job's timestamp,
    ``git_commit`` the commit of the rlvr being shipped (default: asked of git)."""
    _check_options(options, is_file)
    recipe = _recipe_data(options)
    config_path = resolve_config(options.config)
    stamp = (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y%m%d-%H%M%S")
    base_name = options.job_name or _job_name(options.recipe)
    prefix = f"s3://{options.bucket or DEFAULT_BUCKET}/rlvr/{base_name}/{stamp}"
    channels, uploads = _channels(options, prefix, exists)
    recipe_name = Path(options.recipe).name
    shipped = options.config in ACCELERATE_CONFIGS
    entry_args = ["--config", options.config if shipped else config_path.name]
    entry_args += [recipe_name] + [a for o in options.overrides for a in ("--set", o)]
    return {
        "base_job_name": base_name,
        "role": options.role or DEFAULT_ROLE,
        "training_image": options.image_uri or _image_description(options.instance_type),
        "source_code": {
            "source_dir": STAGED_SOURCE,
            "requirements": "requirements.txt",
            "command": " ".join(["python", ENTRY_SCRIPT, *entry_args]),
        },
        "staging": {
            "recipe": str(Path(options.recipe)),
            "accelerate_config": None if shipped else str(config_path),
            "entry_script": ENTRY_SCRIPT,
            "requirements_txt": requirements(uses_deepspeed(config_path), options.mlflow_uri),
        },
        "compute": {
            "instance_type": options.instance_type,
            "instance_count": options.instance_count,
            "volume_size_in_gb": options.volume_size_gb,
            "keep_alive_period_in_seconds": options.keep_alive_seconds,
        },
        "input_data_config": channels,
        "uploads": uploads,
        "checkpoint_config": {"s3_uri": f"{prefix}/checkpoints", "local_path": SAGEMAKER_CHECKPOINT_DIR},
        "output_data_config": {"s3_output_path": f"{prefix}/output"},
        "stopping_condition": {"max_runtime_in_seconds": int(options.max_runtime_hours * 3600)},
        "environment": job_environment(options, caller_env, mlflow_tags(recipe, options, git_commit or rlvr_git_commit)),
        "warnings": tracking_warnings(options, recipe),
    }


def job_environment(options: SubmitOptions, caller_env: Mapping[str, str],
                    tags: Mapping[str, str] | None = None) -> dict[str, str]:
    """NCCL/EFA settings, MLflow (URI, run tags), the user's ``--env`` pairs, and secrets from the caller's environment.

    ``tags`` reach the MLflow run through ``MLFLOW_TAGS`` (JSON), which transformers' MLflow callback sets on
    the run; tags the user passes in ``--env MLFLOW_TAGS=...`` are kept and win over these.
    """
    env = dict(NCCL_EFA_ENVIRONMENT)
    if options.mlflow_uri:
        env["MLFLOW_TRACKING_URI"] = options.mlflow_uri
    if tags:
        env["MLFLOW_TAGS"] = json.dumps(dict(tags), sort_keys=True)
    for pair in options.extra_env:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise RlvrError(f"--env expects KEY=VALUE, got '{pair}'.")
        if key.strip() in SECRET_VARIABLES:
            raise RlvrError(f"do not pass {key.strip()} with --env: export it in your shell and it is passed through.")
        if key.strip() == "MLFLOW_TAGS" and "MLFLOW_TAGS" in env:
            value = json.dumps({**json.loads(env["MLFLOW_TAGS"]), **_user_tags(value)}, sort_keys=True)
        env[key.strip()] = value
    for name in SECRET_VARIABLES:
        if caller_env.get(name):
            env[name] = caller_env[name]
    return env


def mlflow_tags(recipe: Mapping[str, Any], options: SubmitOptions, git_commit: Callable[[], str | None]) -> dict[str, str]:
    """MLflow run tags that say what ran: the recipe, the commit of the rlvr shipped, rlvr's version."""
    from rlvr import __version__

    return {
        "rlvr.recipe": str(recipe.get("name") or Path(options.recipe).stem),
        "rlvr.recipe_file": Path(options.recipe).name,
        "rlvr.git_commit": git_commit() or "unknown",
        "rlvr.version": __version__,
    }


def tracking_warnings(options: SubmitOptions, recipe: Mapping[str, Any]) -> list[str]:
    """A warning when the job would log MLflow runs only inside its container (lost when the job ends)."""
    env_uri = any(pair.partition("=")[0].strip() == "MLFLOW_TRACKING_URI" for pair in options.extra_env)
    run = recipe.get("run") if isinstance(recipe.get("run"), Mapping) else {}
    recipe_uri = str(run.get("tracking_uri") or "")
    remote = "://" in recipe_uri or recipe_uri.startswith(("arn:", "databricks"))
    if options.mlflow_uri or env_uri or remote:
        return []
    return [
        "no MLflow tracking URI (--mlflow-uri, or run.tracking_uri in the recipe): the job logs to "
        f"{recipe_uri or 'mlflow.db'} inside its container, and that store is lost when the job ends. Pass "
        "--mlflow-uri with a tracking server URI or a SageMaker MLflow ARN to keep the runs."
    ]


def rlvr_git_commit() -> str | None:
    """The commit of the rlvr checkout being shipped (with '-dirty' if it has uncommitted changes); None outside git."""
    import subprocess

    import rlvr

    where = str(Path(rlvr.__file__).resolve().parent)
    try:
        commit = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return None
        status = subprocess.run(["git", "-C", where, "status", "--porcelain", "--", "."], capture_output=True,
                                text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return commit.stdout.strip() + ("-dirty" if status.stdout.strip() else "")


def _user_tags(value: str) -> dict[str, Any]:
    try:
        tags = json.loads(value)
    except ValueError:
        tags = None
    if not isinstance(tags, dict):
        raise RlvrError(f"--env MLFLOW_TAGS must be a JSON object, e.g. '{{\"team\": \"math\"}}', got {value!r}.")
    return tags


def _recipe_data(options: SubmitOptions) -> dict[str, Any]:
    """The recipe's raw sections, its bases merged and the --set overrides applied (not validated here: rlvr train
    does that). The job receives the recipe file alone, so a base must be a built-in recipe (shipped with rlvr)."""
    from rlvr.config import builtin_recipes, recipe_data

    resolved = recipe_data(options.recipe, options.overrides)
    if resolved.bases and resolved.bases[0] not in builtin_recipes():
        raise RlvrError(f"{options.recipe} builds on the file {resolved.bases[0]}, which the job would not receive "
                        "(it gets the recipe file alone): submit the resolved recipe instead, written by "
                        f"rlvr recipe show {options.recipe} --plain > resolved.yaml.")
    return resolved.data


def masked(request: dict[str, Any]) -> dict[str, Any]:
    """A copy safe to print or log: secret values replaced by a mask."""
    safe = copy.deepcopy(request)
    for name in SECRET_VARIABLES:
        if name in safe.get("environment", {}):
            safe["environment"][name] = MASK
    return safe


def requirements(deepspeed: bool, mlflow_uri: str | None) -> list[str]:
    """The job's requirements.txt lines: rlvr's own dependencies (torch comes with the image)."""
    declared = declared_requirements()
    extras = {"deepspeed"} if deepspeed else set()
    lines = []
    for requirement in declared:
        spec, _, marker = requirement.partition(";")
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if (extra and extra.group(1) not in extras) or re.match(r"torch\b", spec.strip()):
            continue
        lines.append(spec.strip())
    if mlflow_uri and mlflow_uri.startswith("arn:"):
        lines.append("sagemaker-mlflow")  # lets MLflow talk to a SageMaker managed tracking server by ARN
    return lines


def declared_requirements() -> list[str]:
    """rlvr's requirements as PEP 508 strings: from pyproject.toml in a checkout, else the installed metadata."""
    import rlvr

    pyproject = Path(rlvr.__file__).resolve().parents[2] / "pyproject.toml"
    try:
        import tomllib
    except ImportError:  # Python 3.10: read the installed metadata instead
        tomllib = None
    if pyproject.is_file() and tomllib is not None:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        extras = project.get("optional-dependencies", {})
        return list(project["dependencies"]) + [f"{r}; extra == '{e}'" for e, reqs in extras.items() for r in reqs]
    try:
        return importlib.metadata.requires("rlvr") or []
    except importlib.metadata.PackageNotFoundError:
        raise RlvrError("cannot find rlvr's declared dependencies: install rlvr with pip.") from None


def _check_options(options: SubmitOptions, is_file: Callable[[str], bool]) -> None:
    if not is_file(options.recipe):
        raise RlvrError(f"recipe file '{options.recipe}' does not exist.")
    if not options.instance_type.startswith("ml."):
        raise RlvrError(f"--instance-type must be a SageMaker type such as ml.g6.48xlarge, got '{options.instance_type}'.")
    if options.instance_count < 1:
        raise RlvrError("--instance-count must be at least 1.")
    if not 0 <= options.keep_alive_seconds <= 3600:
        raise RlvrError("--keep-alive must lie between 0 and 3600 seconds (SageMaker's warm-pool limit).")
    if options.max_runtime_hours <= 0:
        raise RlvrError("--max-runtime-hours must be positive.")


def _channels(options: SubmitOptions, prefix: str, exists: Callable[[str], bool]) -> tuple[list[dict], list[dict]]:
    channels, uploads = [], []
    for name in CHANNELS:
        source = getattr(options, name)
        if not source:
            continue
        if source.startswith("s3://"):
            uri = source
        elif exists(source):
            uri = f"{prefix}/data/{name}"
            uploads.append({"local_path": str(Path(source)), "s3_uri": uri})
        else:
            raise RlvrError(f"--{name} '{source}' is neither an s3:// URI nor an existing local file or directory.")
        channels.append({"channel_name": name, "data_source": uri})
    return channels, uploads


def _job_name(recipe: str) -> str:
    """SageMaker job names: letters, digits, hyphens; the SDK appends a timestamp (so keep it short)."""
    stem = re.sub(r"[^A-Za-z0-9-]+", "-", Path(recipe).stem).strip("-")
    return f"rlvr-{stem}"[:40].rstrip("-")


def _image_description(instance_type: str) -> str:
    return f"<SageMaker {IMAGE_FRAMEWORK} {IMAGE_VERSION} {IMAGE_PY_VERSION} training image for {instance_type}>"


# ---- submission (needs the sagemaker package and AWS credentials) ---------------------------------------


def stage_source(request: dict[str, Any], into: Path) -> Path:
    """Write the job's source directory: rlvr's package, the recipe, requirements.txt, the entry script."""
    import rlvr

    package = Path(rlvr.__file__).resolve().parent
    shutil.copytree(package, into / "src" / "rlvr", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    staging = request["staging"]
    shutil.copy2(staging["recipe"], into / Path(staging["recipe"]).name)
    if staging["accelerate_config"]:
        shutil.copy2(staging["accelerate_config"], into / Path(staging["accelerate_config"]).name)
    (into / "requirements.txt").write_text("\n".join(staging["requirements_txt"]) + "\n", encoding="utf-8")
    shutil.copy2(package / "launch" / "sagemaker_entry.py", into / staging["entry_script"])
    return into


def submit(request: dict[str, Any], wait: bool) -> str:
    """Upload local data, stage the code and start the job with ModelTrainer; return the job name."""
    try:
        from sagemaker.core.helper.session_helper import Session, get_execution_role
        from sagemaker.core.training.configs import (
            CheckpointConfig,
            Compute,
            InputData,
            OutputDataConfig,
            SourceCode,
            StoppingCondition,
        )
        from sagemaker.train import ModelTrainer
    except ImportError:
        raise RlvrError("rlvr sagemaker submit needs the SageMaker SDK: pip install 'rlvr[sagemaker]'.") from None

    session = Session()
    request = _resolve_placeholders(request, session, get_execution_role)
    for upload in request["uploads"]:
        bucket, key = upload["s3_uri"][5:].split("/", 1)
        session.upload_data(upload["local_path"], bucket=bucket, key_prefix=key)
    with tempfile.TemporaryDirectory(prefix="rlvr-sagemaker-") as staging:
        source = request["source_code"]
        trainer = ModelTrainer(
            sagemaker_session=session,
            role=request["role"],
            base_job_name=request["base_job_name"],
            training_image=request["training_image"],
            source_code=SourceCode(**{**source, "source_dir": str(stage_source(request, Path(staging)))}),
            compute=Compute(**request["compute"]),
            checkpoint_config=CheckpointConfig(**request["checkpoint_config"]),
            output_data_config=OutputDataConfig(**request["output_data_config"]),
            stopping_condition=StoppingCondition(**request["stopping_condition"]),
            environment=request["environment"],
        )
        inputs = [InputData(**channel) for channel in request["input_data_config"]]
        trainer.train(input_data_config=inputs or None, wait=wait, logs=wait)
    return str(getattr(getattr(trainer, "_latest_training_job", None), "training_job_name", request["base_job_name"]))


def _resolve_placeholders(request: dict[str, Any], session: Any, get_role: Callable[..., str]) -> dict[str, Any]:
    """Fill what only AWS knows: default bucket, execution role, image URI for the session's region."""
    resolved = copy.deepcopy(request)
    bucket = session.default_bucket()
    for section, key in (("checkpoint_config", "s3_uri"), ("output_data_config", "s3_output_path")):
        resolved[section][key] = resolved[section][key].replace(DEFAULT_BUCKET, bucket)
    for item in resolved["input_data_config"] + resolved["uploads"]:
        for key in ("data_source", "s3_uri"):
            if key in item:
                item[key] = item[key].replace(DEFAULT_BUCKET, bucket)
    if resolved["role"] == DEFAULT_ROLE:
        resolved["role"] = get_role(sagemaker_session=session)
    if resolved["training_image"].startswith("<"):
        from sagemaker.core import image_uris

        resolved["training_image"] = image_uris.retrieve(
            framework=IMAGE_FRAMEWORK, region=session.boto_region_name, version=IMAGE_VERSION,
            py_version=IMAGE_PY_VERSION, instance_type=resolved["compute"]["instance_type"], image_scope="training",
        )
    return resolved
