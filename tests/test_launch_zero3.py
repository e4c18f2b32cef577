"""A real DeepSpeed ZeRO-3 run on CPU: `rlvr launch --config zero3 --num-processes 2` with 4-bit base weights.

The published combination (QLoRA under ZeRO-3) on the suite's tiny random Llama model: two processes join
with gloo through DeepSpeed's CPU accelerator, NF4 weights stored in float32 so ZeRO-3 can partition them,
in-training test evaluation, an adapter saved once and merged into a fresh full-precision base. Each launched
process loads a ``sitecustomize`` probe that wraps ``deepspeed.initialize`` and records the engine it built, and
at exit whether the process had left its process group (:mod:`rlvr.training.process_group`): a rank that left it
to the interpreter's exit sometimes aborted there, and the launch returned 1.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rlvr

pytest.importorskip("deepspeed")
pytest.importorskip("bitsandbytes")
# Two processes importing torch/TRL/DeepSpeed and training: ~1-2 min wall on a busy 2-core machine.
pytestmark = pytest.mark.slow

PROBE = textwrap.dedent(
    """
    import json, os

    if "RANK" in os.environ and "RLVR_PROBE_DIR" in os.environ:
        import deepspeed

        _initialize = deepspeed.initialize

        def _recording_initialize(*args, **kwargs):
            out = _initialize(*args, **kwargs)
            import torch.distributed as dist

            engine = out[0]
            params = [p for p in engine.module.parameters() if hasattr(p, "ds_numel")]
            info = {
                "rank": dist.get_rank(), "world_size": dist.get_world_size(), "backend": str(dist.get_backend()),
                "zero_stage": engine.zero_optimization_stage(), "device": str(engine.device),
                "partitioned_params": len(params), "full_numel": sum(p.ds_numel for p in params),
                "local_numel": sum(p.ds_tensor.numel() for p in params),
            }
            path = os.path.join(os.environ["RLVR_PROBE_DIR"], "rank-%d.json" % info["rank"])
            with open(path, "w") as handle:
                json.dump(info, handle)
            return out

        deepspeed.initialize = _recording_initialize

        def _record_exit():
            import torch.distributed as dist

            path = os.path.join(os.environ["RLVR_PROBE_DIR"], "exit-%d.json" % int(os.environ["RANK"]))
            with open(path, "w") as handle:
                json.dump({"left_group_before_exit": not dist.is_initialized()}, handle)

        import atexit

        atexit.register(_record_exit)
    """
)

RECIPE = """\
name: zero3-tiny
model:
  name_or_path: {model}
  dtype: float32
  lora: true
  lora_r: 4
  lora_alpha: 8
  lora_target_modules: [q_proj, v_proj]
  load_in_4bit: true
  quantization_fallback: error
task:
  name: arithmetic
  shots: 0
  train_size: 16
  validation_size: 4
  test_size: 4
grpo:
  max_steps: 2
  per_device_train_batch_size: 2
  num_generations: 2
  max_completion_length: 8
  learning_rate: 1.0e-3
  beta: 0.0
  logging_steps: 1
  save_strategy: "no"
  report_to: []
  seed: 0
run:
  output_dir: {output}
  test_items: 4
  merge_adapter: true
"""


@pytest.fixture(scope="module")
def zero3_run(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("zero3")
    recipe = root / "recipe.yaml"
    recipe.write_text(RECIPE.format(model=tiny_model_dir, output=root / "out"), encoding="utf-8")
    probe_dir, probes = root / "probe", root / "probes"
    probe_dir.mkdir()
    probes.mkdir()
    (probe_dir / "sitecustomize.py").write_text(PROBE, encoding="utf-8")
    src = Path(rlvr.__file__).resolve().parent.parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(probe_dir), str(src), os.environ.get("PYTHONPATH", "")]),
        "RLVR_PROBE_DIR": str(probes),
        "CUDA_VISIBLE_DEVICES": "",  # DeepSpeed's CPU accelerator even on a GPU machine
        "OMP_NUM_THREADS": "1",
    }
    command = [sys.executable, "-m", "rlvr", "launch", "--config", "zero3", "--num-processes", "2", str(recipe)]
    done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=900)
    return done, root / "out", probes


def test_two_process_zero3_launch_on_cpu_succeeds(zero3_run):
    done, _, _ = zero3_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "--config_file" in done.stderr and "zero3.yaml" in done.stderr and "--num_processes 2" in done.stderr


def test_both_ranks_built_a_zero3_engine_on_cpu_in_one_gloo_group(zero3_run):
    _, _, probes = zero3_run
    records = sorted((json.loads(p.read_text()) for p in probes.glob("rank-*.json")), key=lambda r: r["rank"])
    assert [r["rank"] for r in records] == [0, 1]
    for record in records:
        assert record["world_size"] == 2 and record["backend"] == "gloo"
        assert record["zero_stage"] == 3 and record["device"] == "cpu"


def test_both_ranks_left_the_group_before_exiting(zero3_run):
    _, _, probes = zero3_run
    exits = [json.loads(p.read_text()) for p in sorted(probes.glob("exit-*.json"))]
    assert len(exits) == 2 and all(record["left_group_before_exit"] for record in exits)


def test_each_rank_holds_about_half_of_the_partitioned_parameters(zero3_run):
    _, _, probes = zero3_run
    for record in (json.loads(p.read_text()) for p in probes.glob("rank-*.json")):
        assert record["partitioned_params"] > 0
        assert record["local_numel"] <= record["full_numel"] / 2 + record["partitioned_params"]


def test_the_zero3_run_judged_test_items_saved_one_adapter_and_merged_it(zero3_run):
    _, out, _ = zero3_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2
    assert summary["test"]["before"]["n"] == summary["test"]["after"]["n"] == 4
    assert list(out.rglob("adapter_model.safetensors")) == [out / "adapter" / "adapter_model.safetensors"]
    assert (out / "merged" / "model.safetensors").is_file()
