"""Peak resident memory of a GRPO run, split by phase: plain TRL ``GRPOTrainer`` vs rlvr, same recipe.

    python benchmarks/memory.py                        # SmolLM2-135M, the CPU default, 3 steps
    python benchmarks/memory.py --shape qwen2-0.5b     # a random Qwen2.5-0.5B-shaped model (152k vocabulary)
    python benchmarks/memory.py --launch zero3 --num-processes 2   # each arm on 2 processes under ZeRO-3

Each arm runs in a child process of its own (a fresh interpreter, so neither inherits the other's
heap), built from the same recipe as ``benchmarks/grpo_cost.py`` builds them: the same model, data,
rewards, LoRA and ``GRPOConfig``. A thread samples the process's resident set (``/proc/self/statm``)
every 20 ms and books each sample to the phase running then: ``load`` (model and trainer),
``generation`` (rollouts and their rewards), ``loss`` (the rest of a training step: log-probs, loss,
backward, optimizer) and, for rlvr, ``evaluation`` (its in-training validation and test
evaluations; plain TRL has none, so rlvr's peak includes work the baseline does not do). For each
phase: the peak, and its rise (the most it grew above what was resident when it began).

``--shape qwen2-0.5b`` builds, offline, a randomly initialised model with Qwen2.5-0.5B's
configuration (24 layers, hidden 896, 151,936-token vocabulary, tied embeddings) and SmolLM2's
tokenizer, and adds a seeded noise reward (a hash of the completion) to both arms so that a model
that earns no real reward still has advantages to learn from (rlvr skips zero-advantage groups; the
noise keeps that from flattering it). Evaluations are off for this shape (a random model's are
meaningless and slow). Peaks are in GB (10^9 bytes).

``--launch CONFIG --num-processes N`` runs each arm as N processes under ``accelerate launch`` with
one of rlvr's engine configs (ddp, zero2, zero3, fsdp, ...), started as ``rlvr launch`` starts
``rlvr train`` (``benchmarks/launched.py``); every process samples its own resident set, and the
table gives each rank's peaks and the ratio of the largest rank's peak. An arm that would run the
machine out of memory is stopped first (less than 1.5 GB left) and shown with the peaks it reached
(a lower bound, ``>=``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from launched import report, run_launched  # noqa: E402

ARMS = ("plain TRL GRPOTrainer", "rlvr")
SHAPES = ("smollm2-135m", "qwen2-0.5b")


class PhaseSampler:
    """Samples resident memory in a thread and books each sample to the innermost running phase."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.stack: list[tuple[str, int]] = []
        self.peak: dict[str, int] = {}
        self.rise: dict[str, int] = {}
        self.overall = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def resident() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _book(self) -> None:
        now = self.resident()
        self.overall = max(self.overall, now)
        if self.stack:
            name, entered = self.stack[-1]
            self.peak[name] = max(self.peak.get(name, 0), now)
            self.rise[name] = max(self.rise.get(name, 0), now - entered)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._book()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._book()

    @contextlib.contextmanager
    def phase(self, name: str):  # noqa: ANN201
        self.stack.append((name, self.resident()))
        try:
            yield
        finally:
            self._book()
            self.stack.pop()

    def wrap(self, owner: object, attribute: str, name: str) -> None:
        """Book every call of ``owner.attribute`` (a method, on an instance or a class) to phase ``name``."""
        original = getattr(owner, attribute)

        def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            with self.phase(name):
                return original(*args, **kwargs)

        setattr(owner, attribute, wrapped)


def noise_reward(completions, **_columns) -> list[float]:  # noqa: ANN001
    """A reward in [0, 1) fixed by the completion's text: varied within groups, the same in both arms."""
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
    return [int(hashlib.sha256(t.encode()).hexdigest()[:8], 16) / 2**32 for t in texts]


def with_noise_reward(get_task):  # noqa: ANN001, ANN201
    """``get_task`` whose tasks also return :func:`noise_reward` (weight 1) after their own rewards."""

    def patched(name, options):  # noqa: ANN001, ANN202
        task = get_task(name, options)
        own_functions, own_weights = task.reward_functions, task.reward_weights
        task.reward_functions = lambda *a, **k: [*own_functions(*a, **k), noise_reward]
        task.reward_weights = lambda *a, **k: [*own_weights(*a, **k), 1.0]
        return task

    return patched


def qwen2_shaped_model(directory: Path) -> Path:
    """A random model with Qwen2.5-0.5B's configuration and SmolLM2's tokenizer, saved in ``directory``."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from rlvr.model_sources import resolve_model

    if (directory / "config.json").exists():
        return directory
    config = Qwen2Config(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1000000.0,
        tie_word_embeddings=True, rms_norm_eps=1e-6,
    )
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct"))
    config.bos_token_id, config.eos_token_id, config.pad_token_id = (
        tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def run_arm(arm: str, shape: str, steps: int, overrides: list[str]) -> dict:
    """One arm, in this process: train ``steps`` steps and return the peaks by phase."""
    sampler = PhaseSampler()
    sampler.start()
    with sampler.phase("load"):
        from rlvr.config import load_recipe

        settings = [f"grpo.max_steps={steps}", "grpo.report_to=[]", "grpo.save_strategy=no", "grpo.logging_steps=1",
                    f"run.output_dir={tempfile.mkdtemp(prefix='rlvr-bench-memory-')}"]
        if shape == "qwen2-0.5b":
            import rlvr.tasks

            rlvr.tasks.get_task = with_noise_reward(rlvr.tasks.get_task)
            model = qwen2_shaped_model(Path(tempfile.gettempdir()) / "rlvr-bench-qwen2-0.5b-shape")
            settings += [f"model.name_or_path={model}", "run.eval_items=0", "run.test_items=0", "run.keep_best=false"]
        recipe = load_recipe(None, [*settings, *overrides])
        if arm == "rlvr":
            from rlvr.training.evaluation import EvalCallback
            from rlvr.training.run import build_trainer

            sampler.wrap(EvalCallback, "evaluate", "evaluation")
            trainer = build_trainer(recipe, quiet=True)
        else:
            from grpo_cost import plain_trl_trainer

            trainer = plain_trl_trainer(recipe)
    sampler.wrap(trainer, "training_step", "loss")
    sampler.wrap(trainer, "_generate_and_score_completions", "generation")
    start = time.perf_counter()
    trainer.train()  # rlvr's evaluations (validation, the test verdict) run inside it, from its callbacks
    seconds = time.perf_counter() - start
    sampler.stop()
    gb = 1e9
    return {
        "arm": arm, "shape": shape, "steps": steps, "seconds": round(seconds, 1),
        "peak_gb": round(sampler.overall / gb, 3),
        "phases": {name: {"peak_gb": round(sampler.peak[name] / gb, 3), "rise_gb": round(sampler.rise[name] / gb, 3)}
                   for name in sampler.peak},
        "loss_batch": getattr(getattr(trainer, "shared_prompt", None), "summary", dict)().get("loss_batch", "whole"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=SHAPES, default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps per arm")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override, repeatable")
    parser.add_argument("--only", choices=("plain", "rlvr"), help="run one arm in this process (used by the parent)")
    parser.add_argument("--output", type=Path, help="write the results as JSON here")
    parser.add_argument("--launch", metavar="CONFIG", help="run each arm under accelerate launch with this config")
    parser.add_argument("--num-processes", type=int, default=2, help="processes per arm with --launch")
    args = parser.parse_args()
    if args.only:
        arm = ARMS[0] if args.only == "plain" else ARMS[1]
        report(run_arm(arm, args.shape, args.steps, args.overrides))
        return
    results = []  # one entry per arm: its ranks' results, rank 0 first
    for only in ("plain", "rlvr"):
        arguments = ["--only", only, "--shape", args.shape, "--steps", str(args.steps)]
        arguments += [f"--set={o}" for o in args.overrides]
        if args.launch:
            ranks = run_launched(args.launch, args.num_processes, Path(__file__), arguments)
        else:
            ranks = [_run_child([sys.executable, __file__, *arguments], only)]
        results.append(ranks)
        for result in ranks:
            print(json.dumps(result), flush=True)
    plain, ours = (max(_peak(result) for result in ranks) for ranks in results)
    engine = f"{args.launch}, {args.num_processes} processes" if args.launch else "one process"
    print(f"\nshape {args.shape}, {args.steps} steps, {engine}; peak resident memory (GB) by phase: peak (rise)")
    phases = ("load", "generation", "loss", "evaluation")
    print(f"{'':32}{'peak':>8}" + "".join(f"{p:>20}" for p in phases))
    for arm, ranks in zip(ARMS, results):
        for r in ranks:
            label = f"{arm} (rank {r['rank']})" if args.launch else arm
            if "stopped" in r:  # the machine ran out of memory: what the rank held when the arm was stopped
                print(f"{label:32}{'>=' + format(r['outside_peak_gb'], '.2f'):>8}   stopped: {r['stopped']}")
                continue
            cells = "".join(f"{_cell(r['phases'].get(p)):>20}" for p in phases)
            print(f"{label:32}{r['peak_gb']:8.2f}{cells}")
    largest = "the largest rank's " if args.launch else ""
    bound = ">= " if any("stopped" in r for r in results[0]) else ""
    if any("stopped" in r for r in results[1]):
        print("rlvr's arm was stopped too: no ratio")
    else:
        print(f"ratio (plain TRL / rlvr) of {largest}peak resident memory: {bound}{plain / ours:.2f}x")
    if args.output:
        args.output.write_text(json.dumps({"shape": args.shape, "steps": args.steps, "overrides": args.overrides,
                                           "launch": args.launch,
                                           "num_processes": args.num_processes if args.launch else 1,
                                           "results": results, "ratio": round(plain / ours, 2)}, indent=1))


def _peak(result: dict) -> float:
    """A rank's peak: its own sampler's, or (stopped for want of memory) the one seen from outside."""
    return result["outside_peak_gb"] if "stopped" in result else result["peak_gb"]


def _run_child(command: list[str], arm: str) -> dict:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        sys.exit(f"{arm} arm failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def _cell(phase: dict | None) -> str:
    return "-" if phase is None else f"{phase['peak_gb']:.2f} (+{phase['rise_gb']:.2f})"


if __name__ == "__main__":
    main()
