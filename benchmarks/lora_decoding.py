"""LoRA over bf16 weights while decoding: merged by rounding to nearest or dithered, or beside, against float32.

    python benchmarks/lora_decoding.py --adapter outputs/cpu-default/adapter [--batches 6]

A trained adapter of the embedded default on SmolLM2-135M, loaded over float32 weights (the reference) and over
bf16 weights, three ways of computing with it in bf16:

* **nearest**: the update added to each bf16 weight, rounded to nearest (``rlvr.lora_merge.lora_merged``: what
  rollouts, the verdict and ``rlvr eval`` decode);
* **dithered**: the same sum rounded up or down at random, unbiased (a fixed pseudo-random threshold per weight);
* **beside**: the weights untouched, peft's adapter products added to each layer's output under bf16 autocast
  (the loss's forward, ``rlvr.training.half_precision``).

Fidelity: completions sampled from the float32 model on the default's training prompts, then the mean per-token
KL(float32 || bf16 way) of their next-token distributions, with the adapter's update scaled to 10%, 33% and 100%
of its trained size (an update early in training is small against a bf16 weight's rounding step). The update's own
size is the KL of the float32 model with the update against without it. Speed: seconds per merge and
milliseconds per decoded token of the default's rollout batches (4 prompts x 8 completions, at most 32 new
tokens), nearest and dithered alternating, the first batch of each left out (the dithered merge here draws its
thresholds afresh each time: a fixed table, as a library would keep, costs less).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from decode_profile import rollout_batches  # noqa: E402


def dithered_bf16(values: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    """Float32 ``values`` rounded to bf16 up or down, up with the chance of the distance below: bf16 is float32's
    upper half, so a random lower half (``thresholds``, 0..65535) is added to the bits, then cut off."""
    bits = values.view(torch.int32)
    bits.add_(thresholds[: bits.numel()].view(bits.shape)).bitwise_and_(-65536)
    return values.to(torch.bfloat16)


@contextlib.contextmanager
def merged_into_copies(model, dithered: bool):  # noqa: ANN001, ANN201
    """The update added to bf16 copies of the weights for the block, rounded to nearest or dithered."""
    from peft.tuners.lora import LoraLayer

    generator = torch.Generator().manual_seed(0)
    saved = []
    with torch.no_grad():
        for layer in (m for m in model.modules() if isinstance(m, LoraLayer)):
            weight = layer.get_base_layer().weight
            original = weight.data
            total = original.float() + sum(layer.get_delta_weight(name).float() for name in layer.active_adapters)
            if dithered:
                thresholds = torch.randint(0, 1 << 16, (total.numel(),), dtype=torch.int32, generator=generator)
                weight.data = dithered_bf16(total, thresholds)
            else:
                weight.data = total.to(original.dtype)
            layer.merged_adapters.extend(layer.active_adapters)
            saved.append((layer, weight, original))
    try:
        yield
    finally:
        for layer, weight, original in saved:
            weight.data = original
            layer.merged_adapters.clear()


def scale_update(model, factor: float) -> None:  # noqa: ANN001
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.mul_(factor)


def log_probs(model, ids, mask, prompt_width):  # noqa: ANN001, ANN201
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[:, prompt_width - 1:-1].float()
    return torch.log_softmax(logits, dim=-1)


def kl(truth, other) -> float:  # noqa: ANN001
    """Mean per-token KL(truth || other) of two log-probability tensors."""
    return float((truth.exp() * (truth - other)).sum(-1).mean())


def fidelity(path: str, adapter: str, batch, pad_id: int) -> list[tuple[float, ...]]:  # noqa: ANN001
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from rlvr.lora_merge import lora_merged
    from rlvr.training.half_precision import half_precision_lora

    def load(dtype):  # noqa: ANN001, ANN202
        return PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(path, dtype=dtype), adapter).eval()

    reference, bf16 = load(torch.float32), load(torch.bfloat16)
    ids, mask = batch[0][::2], batch[1][::2]  # one completion per prompt and temperature draw: 16 rows
    torch.manual_seed(0)
    with torch.no_grad():
        full = reference.generate(input_ids=ids, attention_mask=mask, max_new_tokens=24, do_sample=True,
                                  temperature=0.7, pad_token_id=pad_id)
    full_mask = torch.cat([mask, torch.ones_like(full[:, ids.shape[1]:])], dim=1)
    rows, previous = [], 1.0
    for factor in (0.1, 0.33, 1.0):
        scale_update(reference, factor / previous)
        scale_update(bf16, factor / previous)
        previous = factor
        truth = log_probs(reference, full, full_mask, ids.shape[1])
        with reference.disable_adapter():
            update = kl(truth, log_probs(reference, full, full_mask, ids.shape[1]))
        with lora_merged(bf16):
            nearest = kl(truth, log_probs(bf16, full, full_mask, ids.shape[1]))
        with merged_into_copies(bf16, dithered=True):
            dithered = kl(truth, log_probs(bf16, full, full_mask, ids.shape[1]))
        with half_precision_lora(bf16):
            beside = kl(truth, log_probs(bf16, full, full_mask, ids.shape[1]))
        rows.append((factor, update, nearest, dithered, beside))
    return rows


def speed(path: str, adapter: str, batches, decode_args) -> dict[str, tuple[float, float]]:  # noqa: ANN001
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from rlvr.evaluation.decoding import decode
    from rlvr.lora_merge import lora_merged

    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16), adapter).eval()
    ways = {"nearest": lambda: lora_merged(model), "dithered": lambda: merged_into_copies(model, dithered=True)}
    merges: dict[str, list[float]] = {name: [] for name in ways}
    per_token: dict[str, list[float]] = {name: [] for name in ways}
    for index, batch in enumerate(batches):
        for name, way in ways.items():
            torch.manual_seed(index)
            start = time.perf_counter()
            with way():
                merged = time.perf_counter()
                outputs = decode(model, *batch, *decode_args)
                seconds = time.perf_counter() - merged
            if index:
                merges[name].append(merged - start)
                per_token[name].append(1000 * seconds / sum(len(o) for o in outputs))
    return {name: (statistics.median(merges[name]), statistics.median(per_token[name])) for name in ways}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", required=True, help="a trained adapter of the default (RUN/adapter)")
    parser.add_argument("--batches", type=int, default=6, help="rollout batches per way (default 6)")
    args = parser.parse_args()
    if not (Path(args.adapter) / "adapter_config.json").is_file():
        parser.error(f"{args.adapter} is not a LoRA adapter directory (no adapter_config.json): give a run's adapter/")
    from rlvr.evaluation.decoding import sampling_warpers

    recipe, path, tokenizer, batches = rollout_batches(args.batches)
    grpo = recipe.grpo
    warpers = sampling_warpers(grpo.get("temperature"), grpo.get("top_k"), grpo.get("top_p"), grpo.get("min_p"))
    decode_args = (grpo["max_completion_length"], lambda ids: False, {tokenizer.eos_token_id}, warpers)
    print("| update scale | KL(float32 with update \\|\\| without) | KL to nearest | KL to dithered | KL to beside |")
    print("|---|---|---|---|---|")
    for factor, update, nearest, dithered, beside in fidelity(path, args.adapter, batches[0], tokenizer.pad_token_id):
        print(f"| {factor:.0%} | {update:.4f} | {nearest:.4f} | {dithered:.4f} | {beside:.4f} |")
    times = speed(path, args.adapter, batches, decode_args)
    for name, (merge, per_token) in times.items():
        print(f"{name}: merge {merge:.2f} s, decoding {per_token:.2f} ms / token ({torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
