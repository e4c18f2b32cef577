"""A real multi-process run: `rlvr launch --config ddp --num-processes 2` trains GRPO on CPU (gloo).

It trains the suite's tiny random Llama model (conftest's ``tiny_model_dir``). Each launched Python process loads a
``sitecustomize`` probe that records its rank, the process group it joined and, at exit, whether it had left that
group, so the test sees both ranks joined one 2-process gloo group, not two lone runs, and tore it down before
the interpreter's exit (:mod:`rlvr.training.process_group`).
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rlvr

# Two Python processes importing torch/TRL and training: ~30 s of CPU, 1-2 min wall on a busy 2-core machine.
pytestmark = pytest.mark.slow

PROBE = textwrap.dedent(
    """
    import atexit, json, os

    if "RANK" in os.environ and "RLVR_PROBE_DIR" in os.environ:
        import torch.distributed as dist

        _path = os.path.join(os.environ["RLVR_PROBE_DIR"], "rank-%d.json" % int(os.environ["RANK"]))
        _info = {"rank": int(os.environ["RANK"]), "initialized": False}
        _init = dist.init_process_group

        def _recording_init(*args, **kwargs):
            out = _init(*args, **kwargs)
            _info.update(initialized=True, world_size=dist.get_world_size(), backend=str(dist.get_backend()))
            return out

        def _record():
            _info["left_group_before_exit"] = not dist.is_initialized()
            with open(_path, "w") as handle:
                json.dump(_info, handle)

        dist.init_process_group = _recording_init
        atexit.register(_record)
    """
)

RECIPE = """\
name: ddp-tiny
model:
  name_or_path: {model}
  dtype: float32
  lora: true
  lora_r: 4
  lora_alpha: 8
  lora_target_modules: [q_proj, v_proj]
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
"""


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("ddp")
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
        "CUDA_VISIBLE_DEVICES": "",  # CPU and gloo even on a GPU machine
        "OMP_NUM_THREADS": "1",
    }
    command = [sys.executable, "-m", "rlvr", "launch", "--config", "ddp", "--num-processes", "2", str(recipe)]
    done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=600)
    return done, root / "out", probes


def test_two_process_ddp_launch_succeeds(ddp_run):
    done, _, _ = ddp_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "accelerate launch" in done.stderr and "--num_processes 2" in done.stderr


def test_both_ranks_joined_one_gloo_group(ddp_run):
    _, _, probes = ddp_run
    records = sorted((json.loads(p.read_text()) for p in probes.glob("rank-*.json")), key=lambda r: r["rank"])
    assert [r["rank"] for r in records] == [0, 1]
    for record in records:
        assert record["initialized"] and record["world_size"] == 2 and record["backend"] == "gloo"


def test_both_ranks_left_the_group_before_exiting(ddp_run):
    _, _, probes = ddp_run
    records = [json.loads(p.read_text()) for p in probes.glob("rank-*.json")]
    assert len(records) == 2 and all(record["left_group_before_exit"] for record in records)


def test_two_grpo_steps_ran_and_exactly_one_adapter_was_saved(ddp_run):
    _, out, _ = ddp_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2
    # Under DDP the loss runs one group at a time too (tests/test_ddp_piecewise_loss.py checks it is exact).
    assert summary["shared_prompt"]["loss_batch"] == "one group at a time"
    adapters = list(out.rglob("adapter_model.safetensors"))
    assert adapters == [out / "adapter" / "adapter_model.safetensors"]
    assert (out / "adapter" / "adapter_config.json").is_file()


def test_the_user_reads_one_summary_not_one_per_process(ddp_run):
    done, _, _ = ddp_run
    assert done.stdout.count("Trained 2 steps") == 1, done.stdout[-3000:]
    assert done.stdout.count("rlvr: training 'ddp-tiny'") == 1
