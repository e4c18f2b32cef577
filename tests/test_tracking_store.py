"""A local MLflow store is created once, even by runs that start together against a new mlflow.db."""

from __future__ import annotations

import subprocess
import sys


def test_runs_starting_together_on_a_new_sqlite_store_all_get_it(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = f"from rlvr.training.tracking import prepare_store; prepare_store({uri!r})"
    starts = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outcomes = [(p.wait(timeout=300), p.stderr.read()) for p in starts]
    assert [rc for rc, _ in outcomes] == [0, 0, 0], [err[-500:] for _, err in outcomes]
    assert (tmp_path / "mlflow.db").is_file()


def test_a_remote_store_is_left_alone(tmp_path):
    from rlvr.training.tracking import prepare_store

    prepare_store("http://127.0.0.1:1")  # no connection attempted: returns at once
