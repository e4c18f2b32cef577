"""``rlvr launch``: run ``rlvr train`` under ``accelerate launch`` on several processes or machines."""

from __future__ import annotations

import argparse
import os

from rlvr.launch.configs import DESCRIPTIONS


def register(subparsers: argparse._SubParsersAction) -> None:
    configs = "; ".join(f"{name}: {text}" for name, text in DESCRIPTIONS.items())
    parser = subparsers.add_parser(
        "launch",
        help="train on several processes/GPUs/machines (accelerate launch + DDP, DeepSpeed ZeRO or FSDP)",
        description=(
            "Run `rlvr train RECIPE` under `accelerate launch`. Values not given as flags come from the cluster "
            "environment (SageMaker, torchrun variables, Slurm), then from this machine (one process per GPU)."
        ),
    )
    parser.add_argument("recipe", help="recipe YAML, as for rlvr train")
    parser.add_argument("--config", default="ddp", help=f"accelerate config name or YAML path (default ddp). {configs}")
    parser.add_argument("--num-processes", type=int, help="processes on all machines together (default: GPUs x machines)")
    parser.add_argument("--num-machines", type=int, help="machines taking part")
    parser.add_argument("--machine-rank", type=int, help="this machine's rank, 0 for the main one")
    parser.add_argument("--main-process-ip", help="address of the rank-0 machine")
    parser.add_argument("--main-process-port", type=int, help="port of the rank-0 machine")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="recipe override passed on to rlvr train, repeatable")
    parser.add_argument("--resume", nargs="?", const="latest", metavar="CHECKPOINT",
                        help="resume from the newest checkpoint in the output directory, or from CHECKPOINT")
    parser.add_argument("--dry-run", action="store_true", help="print the exact command and exit")
    parser.set_defaults(func=run_launch)


def run_launch(args: argparse.Namespace) -> int:
    from rlvr.launch.accelerate import LaunchOptions, plan_launch, run_plan
    from rlvr.launch.cluster import detect_cluster

    options = LaunchOptions(
        recipe=args.recipe,
        config=args.config,
        num_processes=args.num_processes,
        num_machines=args.num_machines,
        machine_rank=args.machine_rank,
        main_process_ip=args.main_process_ip,
        main_process_port=args.main_process_port,
        overrides=list(args.overrides),
        resume=args.resume,
    )
    cluster = detect_cluster(os.environ)
    plan = plan_launch(options, cluster)
    if args.dry_run:
        print(plan.shell())
        return 0
    return run_plan(plan)
