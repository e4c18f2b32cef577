"""``rlvr report RUN_DIR``: an HTML page of a training run's health curves, evaluation and samples."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="render an HTML report of a training run (curves, eval table, samples)",
        description="Read a training run's output directory (health/metrics.jsonl, samples.jsonl, ...) and write "
        "report.html with PNG curves beside it.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the output directory of an `rlvr train` run")
    parser.add_argument("--output", help="directory for report.html and the PNGs (default: RUN_DIR/report)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rlvr.training.report import write_report

    path = write_report(args.run_dir, args.output)
    print(f"report: {path}")
    return 0
