"""``rlvr sagemaker submit``: run a recipe as a SageMaker training job (ModelTrainer)."""

from __future__ import annotations

import argparse
import json
import os
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sagemaker", help="run a recipe as an Amazon SageMaker training job")
    actions = parser.add_subparsers(dest="sagemaker_command", metavar="ACTION")
    submit = actions.add_parser(
        "submit",
        help="submit a training job",
        description=(
            "Package rlvr and the recipe as the job's source code, upload local data, and start a SageMaker "
            "training job that runs `rlvr launch` on every instance. --dry-run prints the job request as JSON "
            "without AWS or the sagemaker package. HF_TOKEN is passed through from your environment, masked in output."
        ),
    )
    submit.add_argument("recipe", help="recipe YAML")
    submit.add_argument("--instance-type", required=True, help="e.g. ml.g6.48xlarge")
    submit.add_argument("--instance-count", type=int, default=1, help="instances (machines), default 1")
    submit.add_argument("--config", default="zero3", help="accelerate config name or YAML (default zero3)")
    submit.add_argument("--train", help="training data: s3:// URI, or a local file/directory to upload")
    submit.add_argument("--val", help="validation data: s3:// URI, or a local file/directory to upload")
    submit.add_argument("--mlflow-uri", help="MLflow tracking URI or SageMaker MLflow tracking server ARN")
    submit.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="recipe override, repeatable")
    submit.add_argument("--env", dest="extra_env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra job environment variable (not for secrets), repeatable")
    submit.add_argument("--role", help="IAM role ARN (default: this session's SageMaker execution role)")
    submit.add_argument("--image-uri", help="training image (default: SageMaker's PyTorch training image)")
    submit.add_argument("--bucket", help="S3 bucket for data, checkpoints, output (default: session default bucket)")
    submit.add_argument("--job-name", help="base job name (default: rlvr-<recipe name>)")
    submit.add_argument("--max-runtime-hours", type=float, default=24.0, help="stop the job after this long (24)")
    submit.add_argument("--keep-alive", dest="keep_alive_seconds", type=int, default=1800,
                        help="warm-pool keep-alive in seconds, 0-3600 (1800)")
    submit.add_argument("--volume-size", dest="volume_size_gb", type=int, default=200, help="EBS volume GB (200)")
    submit.add_argument("--wait", action="store_true", help="wait for the job and stream its logs")
    submit.add_argument("--dry-run", action="store_true", help="print the job request as JSON and exit")
    submit.set_defaults(func=run_submit)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def run_submit(args: argparse.Namespace) -> int:
    from rlvr.launch.sagemaker import SubmitOptions, build_job_request, masked, submit

    fields = SubmitOptions.__dataclass_fields__
    options = SubmitOptions(**{name: getattr(args, name) for name in fields if hasattr(args, name)})
    request = build_job_request(options, os.environ)
    for warning in request["warnings"]:
        print(f"rlvr: warning: {warning}", file=sys.stderr)
    if args.dry_run:
        print(json.dumps(masked(request), indent=2))
        return 0
    job = submit(request, wait=args.wait)
    print(f"rlvr: submitted SageMaker training job {job}")
    return 0
