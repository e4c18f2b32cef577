"""Where MLflow writes: the recipe's ``run.tracking_uri`` as an MLflow URI (shared by training and resuming); metrics
logged to a run after its trainer ended it."""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path
from typing import Any


def tracking_uri(value: str) -> str:
    """An MLflow URI: a ``*.db`` path is a local SQLite store, a directory a file store, URIs pass."""
    if "://" in value or value.startswith(("databricks", "arn:")):
        return value
    path = Path(value).expanduser().resolve()
    if path.suffix == ".db":
        return f"sqlite:///{path}"
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    return path.as_uri()


def log_after_run(run_id: str | None, metrics: dict[str, Any], step: int) -> None:
    """Log ``metrics`` (None values left out) to the MLflow run ``run_id`` (``MLFLOW_TRACKING_URI``'s store), which
    the trainer has ended; a failure is one warning line, never the run's end."""
    values = {name: float(value) for name, value in metrics.items() if isinstance(value, (int, float))}
    if not run_id or not values:
        return
    try:
        import mlflow

        client = mlflow.MlflowClient()
        for name, value in values.items():
            client.log_metric(run_id, name, value, step=step)
    except Exception as error:  # another store, a deleted run: the summary still has the numbers
        print(f"rlvr: warning: could not log {', '.join(values)} to MLflow: {error}"[:300], file=sys.stderr, flush=True)


def prepare_store(uri: str) -> None:
    """Create or upgrade a local SQLite store (``sqlite:///path``) once, under a lock beside it.

    Two runs starting together against a new ``mlflow.db`` (seeds side by side in one directory) otherwise race in
    MLflow's schema migration, and one dies with an alembic traceback before its first step. Other stores: nothing.
    """
    if not uri.startswith("sqlite:///"):
        return
    path = Path(uri[len("sqlite:///"):])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".rlvr-lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        import mlflow

        mlflow.MlflowClient(uri).search_experiments(max_results=1)  # creates the tables, or migrates them
