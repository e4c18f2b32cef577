"""Evaluation speed: the published notebook's loop vs ``rlvr eval``, on the same GSM8K test problems.

Both sides use the same model, the same 8-shot prompts and the same judge
(the gsm8k task's ``judge``: the strict answer-line verifier). The notebook's way: one problem at a time,
``max_new_tokens=1024``, no stop strings, decode the new tokens only. rlvr's
way: :func:`rlvr.evaluation.evaluate.evaluate` (batched, left-padded, sorted by length,
the k-shot prefix every prompt shares run once, each row stopped at its answer
line and dropped from the batch then). With ``--without-compaction`` rlvr also
runs once with plain ``generate()`` (rows stopped but kept in the batch, no
shared prefix), to show what ``rlvr.evaluation.decoding`` adds. Prints wall
and CPU times (on a shared machine CPU time is closer to the uncontended
cost), the speed ratios and the accuracies.

    OMP_NUM_THREADS=2 python benchmarks/eval_speed.py --data ../shared/data/gsm8k --items 20 --without-compaction
"""

from __future__ import annotations

import argparse
import json
import time

from rlvr.evaluation.evaluate import EvalConfig, ModelSpec, evaluate, load_for_eval, load_items
from rlvr.tasks import get_task


def notebook_way(model_ref: str, dataset, max_new_tokens: int) -> tuple[float, float, list[bool]]:
    import torch

    start, cpu = time.time(), time.process_time()
    model, tokenizer, _ = load_for_eval(ModelSpec(model_ref))
    verdicts = []
    task = get_task("gsm8k")
    for number, row in enumerate(dataset):
        inputs = tokenizer(row["prompt"], return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                    temperature=None, top_p=None, top_k=None, pad_token_id=tokenizer.pad_token_id)
        text = tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        verdicts.append(task.judge([text], [row])[0].correct)
        print(f"  notebook way: problem {number + 1}/{len(dataset)}, {output.shape[1] - inputs['input_ids'].shape[1]} "
              f"new tokens, {time.time() - start:.0f} s so far", flush=True)
    return time.time() - start, time.process_time() - cpu, verdicts


def rlvr_way(model_ref: str, data: str, items: int, shots: int, batch_size: int, max_new_tokens: int,
             compact: bool = True) -> tuple[float, float, list[bool]]:
    start, cpu = time.time(), time.process_time()
    config = EvalConfig(models=[ModelSpec(model_ref)], task="gsm8k", task_options={"data": data}, shots=[shots],
                        limit=items, batch_size=batch_size, max_new_tokens=max_new_tokens, backend="hf",
                        compact_batches=compact)
    result = evaluate(config)
    return time.time() - start, time.process_time() - cpu, [r["correct"] for r in result.records]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--data", default="../shared/data/gsm8k")
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--shots", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=256, help="rlvr's limit (the notebook uses 1024)")
    parser.add_argument("--without-compaction", action="store_true",
                        help="also time rlvr with plain generate() (stopped rows stay in the batch, no shared prefix)")
    parser.add_argument("--skip-notebook", action="store_true",
                        help="rlvr only: with and without rlvr.evaluation.decoding (implies --without-compaction)")
    args = parser.parse_args()
    args.without_compaction = args.without_compaction or args.skip_notebook

    dataset = load_items("gsm8k", {"data": args.data}, "test", [args.shots], args.items)[args.shots]
    print(f"{len(dataset)} GSM8K test problems, {args.shots}-shot, {args.model}")
    ours_s, ours_cpu, ours = rlvr_way(args.model, args.data, args.items, args.shots, args.batch_size, args.max_new_tokens)
    print(f"rlvr eval: {ours_s:.1f} s wall, {ours_cpu:.1f} s CPU, accuracy {sum(ours)}/{len(ours)}", flush=True)
    plain = None
    if args.without_compaction:
        plain = rlvr_way(args.model, args.data, args.items, args.shots, args.batch_size, args.max_new_tokens, False)
        print(f"rlvr eval, plain generate(): {plain[0]:.1f} s wall, {plain[1]:.1f} s CPU, "
              f"accuracy {sum(plain[2])}/{len(plain[2])}", flush=True)
    if args.skip_notebook:
        print(json.dumps({"items": len(dataset), "shots": args.shots, "rlvr_seconds": round(ours_s, 1),
                          "rlvr_generate_seconds": round(plain[0], 1), "speedup_of_rlvr_decoding": round(plain[0] / ours_s, 2),
                          "same_verdicts": ours == plain[2]}, indent=2))
        return
    base_s, base_cpu, base = notebook_way(args.model, dataset, 1024)
    print(f"notebook way: {base_s:.1f} s wall, {base_cpu:.1f} s CPU, accuracy {sum(base)}/{len(base)}", flush=True)
    agree = sum(a == b for a, b in zip(base, ours, strict=True))
    result = {
        "items": len(dataset), "shots": args.shots, "model": args.model,
        "notebook_seconds": round(base_s, 1), "rlvr_seconds": round(ours_s, 1), "speedup": round(base_s / ours_s, 2),
        "notebook_cpu_seconds": round(base_cpu, 1), "rlvr_cpu_seconds": round(ours_cpu, 1),
        "cpu_speedup": round(base_cpu / ours_cpu, 2),
        "notebook_accuracy": sum(base) / len(base), "rlvr_accuracy": sum(ours) / len(ours),
        "per_item_agreement": f"{agree}/{len(base)}",
    }
    if plain is not None:
        result.update({
            "rlvr_generate_seconds": round(plain[0], 1), "rlvr_generate_cpu_seconds": round(plain[1], 1),
            "rlvr_generate_accuracy": sum(plain[2]) / len(plain[2]),
            "speedup_without_compaction": round(base_s / plain[0], 2),
            "compaction_speedup": round(plain[0] / ours_s, 2),
        })
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
