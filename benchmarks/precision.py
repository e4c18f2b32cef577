"""float32 against bf16 on the embedded default: seconds per step (generation and update), whole command, peak memory.

    python benchmarks/precision.py --output-dir /tmp/rlvr-precision            # the whole default, both precisions
    python benchmarks/precision.py --steps 8 --repeats 2 --output-dir /tmp/p   # 8 steps without evaluations, x2

Each arm runs the command a user runs (``python -m rlvr train``, a fresh process) with ``--set model.dtype=float32``
or ``--set model.dtype=bfloat16``, one after the other (``--repeats`` alternates them again), under
``/usr/bin/time -v`` for the wall clock and the peak resident set. Every other setting is the default's, seeds
included, so both arms train on the same prompts. From the run's ``health/metrics.jsonl``: seconds per step, and
its generation and update parts; generation per completion token (the step's generation time over the tokens it
generated, prefill included). From ``summary.json``: the held-out verdict, when the run has one. Steady-state
steps only (the first is left out: it warms up allocators and the shared-prompt check). Ratios are float32 over
bf16, computed from the medians of the arms' runs.

The bf16 arm needs a CPU with bf16 units to mean anything (``rlvr.precision``): elsewhere it is refused, unless
``--anyway`` (to see what emulated bf16 costs).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from default_seeds import _peak_gb  # noqa: E402

ARMS = ("float32", "bfloat16")


def run_arm(dtype: str, index: int, args: argparse.Namespace) -> dict:
    out = Path(args.output_dir) / f"{dtype}-{index}"
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "rlvr", "train", *([args.recipe] if args.recipe else []), "--output-dir", str(out),
               "--set", f"model.dtype={dtype}", *sum((["--set", o] for o in args.overrides), [])]
    if args.steps:
        command += ["--set", f"grpo.max_steps={args.steps}", "--set", "run.test_items=0", "--set", "run.eval_items=0",
                    "--set", "run.keep_best=false", "--set", "grpo.save_strategy=no"]
    gnu_time = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    measures = out.parent / f"{dtype}-{index}.time"
    out.parent.mkdir(parents=True, exist_ok=True)
    if gnu_time:
        command = [gnu_time, "-v", "-o", str(measures), *command]
    print(f"[{dtype} #{index}] {' '.join(command)}", file=sys.stderr, flush=True)
    start = time.time()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL if args.quiet else None)
    result = {"dtype": dtype, "wall_seconds": round(time.time() - start, 1),
              "peak_resident_gb": _peak_gb(measures.read_text()) if gnu_time else None, **step_times(out)}
    summary = json.loads((out / "summary.json").read_text())
    result["precision"] = summary.get("precision")
    result["test"] = summary.get("test")
    return result


def step_times(run_dir: Path) -> dict:
    """Medians over steady-state steps (the first left out) of the run's per-step time split."""
    rows = [json.loads(line) for line in (run_dir / "health" / "metrics.jsonl").read_text().splitlines() if line]
    steps = [r for r in rows if "time/step" in r][1:]
    if not steps:
        return {}
    import yaml

    grpo = yaml.safe_load((run_dir / "recipe.yaml").read_text())["grpo"]
    completions = grpo["per_device_train_batch_size"] * grpo.get("gradient_accumulation_steps", 1)
    tokens = [r["completions/mean_length"] * completions for r in steps]

    def median(key: str) -> float:
        return statistics.median(r[key] for r in steps)

    return {
        "steps_timed": len(steps),
        "step_seconds": round(median("time/step"), 2),
        "generation_seconds": round(median("time/generation"), 2),
        "update_seconds": round(median("time/update"), 2),
        "generation_ms_per_token": round(statistics.median(
            1000 * r["time/generation"] / t for r, t in zip(steps, tokens, strict=True)), 2),
    }


def ratio(results: list[dict], key: str) -> float | None:
    values = {dtype: [r[key] for r in results if r["dtype"] == dtype and r.get(key)] for dtype in ARMS}
    if not all(values.values()):
        return None
    return round(statistics.median(values["float32"]) / statistics.median(values["bfloat16"]), 2)


def table(results: list[dict]) -> str:
    lines = ["| arm | step (s) | generation (s) | update (s) | generation ms / token | whole command | peak GB | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        test = r.get("test") or {}
        verdict = (f"{test['before']['accuracy']:.1%} -> {test['after']['accuracy']:.1%} (p = {test['mcnemar_p']:.2g})"
                   if test else "-")
        lines.append(f"| {r['dtype']} | {r.get('step_seconds')} | {r.get('generation_seconds')} | {r.get('update_seconds')} "
                     f"| {r.get('generation_ms_per_token')} | {r['wall_seconds'] / 60:.1f} min | {r['peak_resident_gb']} "
                     f"| {verdict} |")
    keys = ("step_seconds", "generation_seconds", "update_seconds", "generation_ms_per_token", "wall_seconds",
            "peak_resident_gb")
    lines.append("| float32 / bf16 | " + " | ".join(f"{ratio(results, k)}x" for k in keys) + " | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", help="recipe (default: the embedded default)")
    parser.add_argument("--output-dir", required=True, help="where the runs go (one folder per arm and repeat)")
    parser.add_argument("--steps", type=int, help="train this many steps without evaluations (default: the whole run)")
    parser.add_argument("--repeats", type=int, default=1, help="run both arms this many times, alternating")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override, repeatable")
    parser.add_argument("--anyway", action="store_true", help="run the bf16 arm on a CPU without bf16 units")
    parser.add_argument("--quiet", action="store_true", help="hide the runs' own output")
    args = parser.parse_args()
    from rlvr.precision import cpu_bf16_feature

    if not cpu_bf16_feature() and not args.anyway:
        sys.exit("this CPU has no bf16 units (rlvr.precision): the comparison would time emulated bf16; --anyway runs it")
    results = [run_arm(dtype, index, args) for index in range(args.repeats) for dtype in ARMS]
    (Path(args.output_dir) / "precision.json").write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
