"""Where MLflow writes: the recipe's ``run.tracking_uri`` as an MLflow URI (shared by training and resuming)."""

from __future__ import annotations

import os
from pathlib import Path


def tracking_uri(value: str) -> str:
    """An MLflow URI: a ``*.db`` path is a local SQLite store, a directory a file store, URIs pass."""
    if "://" in value or value.startswith(("databricks", "arn:")):
        return value
    path = Path(value).expanduser().resolve()
    if path.suffix == ".db":
        return f"sqlite:///{path}"
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    return path.as_uri()
