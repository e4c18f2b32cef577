"""Where a rollout's decoding time goes, against what the hardware allows: float32 and bf16, one process.

    python benchmarks/decode_profile.py                       # the default's rollout batches, both precisions
    PYTHONPATH=/path/to/older/rlvr/src python benchmarks/decode_profile.py   # the same on an earlier rlvr

A rollout batch of the embedded default: 4 training prompts x 8 completions, sampled at the recipe's temperature,
at most 32 new tokens, decoded by ``rlvr.evaluation.decoding.decode`` (what rollouts and evaluations use) on
SmolLM2-135M loaded in each precision (no LoRA: rollouts run the LoRA merged into the weights, the same shapes).
Batches alternate between the precisions; the first of each is left out. Reported per precision:

* milliseconds per decoded token (prefill included), median over batches;
* the same batch profiled (torch.profiler), its time by kind of work: the weights' matrix products, attention,
  the KV cache's copies (append and row selection), sampling, and everything else (norms, rotary, activations,
  casts, Python between the ops);
* the hardware's limits measured in the same process: the matrix-product rate of a 2048x576 by 576x1536 product
  (SmolLM2's MLP shape) and the memory copy rate, and from them the time per token if decoding only multiplied
  (2 x parameters FLOPs a token) or only read the weights (once a step, shared by the step's rows).
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time

import torch

KINDS = (("matmul", ("aten::mm", "aten::addmm", "aten::linear")),
         ("attention", ("aten::bmm", "aten::_softmax", "aten::masked_fill", "flash_attention", "scaled_dot_product")),
         ("KV cache copies", ("aten::cat", "aten::index", "aten::index_select", "aten::copy_")),
         ("sampling", ("aten::multinomial", "aten::exponential_", "aten::cumsum", "aten::searchsorted", "aten::rand",
                       "aten::div", "aten::softmax")))


def rollout_batches(count: int):  # noqa: ANN201
    from rlvr.config import load_recipe
    from rlvr.evaluation.backends import render_prompts
    from rlvr.model_sources import resolve_model
    from rlvr.models import load_tokenizer
    from rlvr.tasks import get_task

    recipe = load_recipe("cpu-default")
    task = get_task(recipe.task_name, recipe.task_options)
    rows = task.load("train").select(range(4 * count))
    path = resolve_model(recipe.model.name_or_path)
    tokenizer = load_tokenizer(path)
    prompts = render_prompts(rows["prompt"], tokenizer)
    batches = []
    for k in range(count):
        group = [p for p in prompts[4 * k: 4 * k + 4] for _ in range(8)]
        encoded = tokenizer(group, return_tensors="pt", padding=True, add_special_tokens=False)
        batches.append((encoded["input_ids"], encoded["attention_mask"]))
    return recipe, path, tokenizer, batches


def gemm_rate(dtype: torch.dtype) -> float:
    a, b = torch.randn(2048, 576, dtype=dtype), torch.randn(576, 1536, dtype=dtype)
    torch.mm(a, b)
    start, repeats = time.perf_counter(), 20
    for _ in range(repeats):
        torch.mm(a, b)
    return 2 * 2048 * 576 * 1536 * repeats / (time.perf_counter() - start)


def copy_rate() -> float:
    source = torch.empty(64 << 20, dtype=torch.uint8).fill_(1)
    target = torch.empty_like(source)
    target.copy_(source)
    start = time.perf_counter()
    for _ in range(10):
        target.copy_(source)
    return 2 * source.numel() * 10 / (time.perf_counter() - start)  # read + write


def kind_of(name: str) -> str:
    for kind, names in KINDS:
        if any(n in name for n in names):
            return kind
    return "other"


def profile_batch(model, batch, decode_args) -> dict[str, float]:  # noqa: ANN001
    from torch.profiler import ProfilerActivity, profile

    from rlvr.evaluation.decoding import decode

    # One decoding thread while profiled: the profiler does not see the ops of the worker threads a batch is
    # otherwise split over (rlvr.evaluation.decoding), so the shares are those of the one-thread loop.
    workers = os.environ.get("RLVR_DECODE_WORKERS")
    os.environ["RLVR_DECODE_WORKERS"] = "1"
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            start = time.perf_counter()
            decode(model, *batch, *decode_args)
            wall = time.perf_counter() - start
    finally:
        if workers is None:
            os.environ.pop("RLVR_DECODE_WORKERS")
        else:
            os.environ["RLVR_DECODE_WORKERS"] = workers
    kinds: dict[str, float] = collections.Counter()
    for event in prof.key_averages():
        if event.key.startswith("aten::") or "attention" in event.key:
            kinds[kind_of(event.key)] += event.self_cpu_time_total / 1e6
    kinds["other"] += max(0.0, wall - sum(kinds.values()))  # Python and dispatch between the ops
    return {kind: seconds / wall for kind, seconds in kinds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=6, help="rollout batches per precision (default 6)")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    args = parser.parse_args()
    from transformers import AutoModelForCausalLM

    from rlvr.evaluation.decoding import sampling_warpers

    recipe, path, tokenizer, batches = rollout_batches(args.batches)
    grpo = recipe.grpo
    warpers = sampling_warpers(grpo.get("temperature"), grpo.get("top_k"), grpo.get("top_p"), grpo.get("min_p"))
    decode_args = (grpo["max_completion_length"], lambda ids: False, {tokenizer.eos_token_id}, warpers)
    dtypes = args.dtypes.split(",")
    models = {name: AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, name)).eval() for name in dtypes}
    params = sum(p.numel() for p in models[dtypes[0]].parameters())
    from rlvr.evaluation.decoding import decode

    per_token: dict[str, list[float]] = {name: [] for name in dtypes}
    for index, batch in enumerate(batches):
        for name, model in models.items():
            torch.manual_seed(index)
            start = time.perf_counter()
            outputs = decode(model, *batch, *decode_args)
            per_token[name].append((time.perf_counter() - start) / sum(len(o) for o in outputs))
    rows = batches[0][0].shape[0]
    copy = copy_rate()
    print(f"{rows} rows a step, {params / 1e6:.0f}M parameters; memory copy {copy / 1e9:.1f} GB/s")
    print("| precision | ms / token | matmul rate | ms / token if only multiplying | if only reading the weights "
          "| " + " | ".join(kind for kind, _ in KINDS) + " | other |")
    print("|---|---|---|---|---|" + "---|" * (len(KINDS) + 1))
    for name, model in models.items():
        rate = gemm_rate(getattr(torch, name))
        floor_flops = 2 * params / rate  # per token
        floor_bytes = params * torch.finfo(getattr(torch, name)).bits / 8 / (copy / 2) / rows  # one read per step
        shares = profile_batch(model, batches[-1], decode_args)
        kinds = " | ".join(f"{shares.get(kind, 0):.0%}" for kind, _ in KINDS)
        print(f"| {name} | {1000 * statistics.median(per_token[name][1:]):.2f} | {rate / 1e9:.0f} GFLOPS "
              f"| {1000 * floor_flops:.2f} | {1000 * floor_bytes:.2f} | {kinds} | {shares.get('other', 0):.0%} |")
    if len(dtypes) == 2:
        first, second = (statistics.median(per_token[n][1:]) for n in dtypes)
        print(f"{dtypes[0]} / {dtypes[1]} per token: {first / second:.2f}x")


if __name__ == "__main__":
    main()
