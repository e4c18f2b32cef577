"""The piecewise loss (one group at a time) under DeepSpeed ZeRO-2 and ZeRO-3: two gloo processes on CPU, one step.

``deepspeed_piecewise_worker.py`` runs on each rank; its docstring says what it computes. Here: the loss by pieces,
whole groups or groups cut in two, gives each rank TRL's whole-micro-batch loss and hands the optimizer the same
reduced gradient partition as TRL's one engine backward per micro-batch, with one optimizer step, although the ranks
have different numbers of pieces to learn (rank 1 has nothing to learn in the micro-batch that ends the step): every
rank runs the same number of engine backwards (the extra pieces weigh 0), and the metrics TRL gathers inside its loss
are exchanged once per micro-batch, without the padding pieces' entries.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from two_ranks import rank_environment, run_two_ranks

import rlvr
from rlvr.training.chunked_loss import why_not_chunked, why_not_deepspeed, why_not_distributed

WORKER = Path(__file__).with_name("deepspeed_piecewise_worker.py")


@pytest.fixture(scope="module", params=[2, 3], ids=["zero2", "zero3"])
def ranks(request, tmp_path_factory, tiny_model_dir):
    pytest.importorskip("deepspeed")
    stage = request.param
    out = tmp_path_factory.mktemp(f"zero{stage}-piecewise")
    env = rank_environment(Path(rlvr.__file__).resolve().parent.parent, **{
        # What `accelerate launch --config zero2|zero3` sets (src/rlvr/configs/accelerate), in float32.
        "ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": str(stage),
        "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE": "none", "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE": "none",
        "ACCELERATE_DEEPSPEED_ZERO3_INIT": str(stage == 3).lower(), "ACCELERATE_MIXED_PRECISION": "no",
    })
    env.pop("ACCELERATE_USE_CPU", None)  # Accelerate would leave DeepSpeed out
    return stage, run_two_ranks(WORKER, [str(tiny_model_dir), str(out)], env, out, f"ZeRO-{stage}")


@pytest.mark.slow
def test_under_zero_the_loss_runs_by_pieces_on_trls_per_row_forward(ranks):
    stage, results = ranks
    for rank in results:
        assert rank["plan"]["deepspeed"] and rank["plan"]["zero_stage"] == stage and rank["plan"]["processes"] == 2
        assert rank["plan"]["chunks"] is None  # one group at a time
        assert rank["plan"]["loss"].startswith("DeepSpeed")  # the shared prompt pass stays off
        if stage == 3:
            assert rank["plan"]["partitioned"] > 0  # forwards gather parameters: the ranks' pieces must line up


@pytest.mark.slow
@pytest.mark.parametrize("path", ["pieces", "split"])
def test_zero_pieces_give_trls_losses_and_the_same_reduced_gradient(ranks, path):
    _, results = ranks
    for rank in results:
        mine, theirs = rank[path], rank["whole"]
        assert mine["losses"] == pytest.approx(theirs["losses"], rel=1e-5, abs=1e-7)
        assert mine["optimizer_steps"] == theirs["optimizer_steps"] == 1
        assert len(mine["grads"]) == len(theirs["grads"]) == 1  # one optimizer step, at the boundary
        assert any(g.abs().max() > 0 for g in mine["grads"][0])
        for grad, expected in zip(mine["grads"][0], theirs["grads"][0], strict=True):
            torch.testing.assert_close(grad, expected, rtol=1e-4, atol=1e-7)
    assert results[1][path]["losses"][1] == 0.0  # rank 1 had nothing to learn in the step's last micro-batch


@pytest.mark.slow
@pytest.mark.parametrize("path", ["pieces", "split"])
def test_zero_ranks_run_as_many_backwards_and_exchange_real_pieces_metrics_once(ranks, path):
    _, results = ranks
    learning = [rank[path]["learning_pieces"] for rank in results]
    assert learning[0] != learning[1] and learning[1][1] == 0  # the ranks had different numbers of pieces
    most = sum(max(1, *counts) for counts in zip(*learning, strict=True))
    assert [rank[path]["backwards"] for rank in results] == [most, most]  # padded to the largest
    assert [rank["whole"]["backwards"] for rank in results] == [2, 2]  # TRL: one per micro-batch
    metrics = [{k: v for k, v in rank[path]["metrics"].items() if "time" not in k} for rank in results]
    assert metrics[0] == metrics[1]  # every rank holds every rank's piece metrics
    assert len(metrics[0]["entropy"]) == sum(map(sum, learning))  # one per real piece, none for padding
    assert len(metrics[0]["update/skipped_share"]) == 4  # 2 micro-batches x 2 ranks


# --- which DeepSpeed settings the pieces run under (fast, no processes) ----------------------------------------

def _plugin(stage: int, **zero):
    return SimpleNamespace(zero_stage=stage, deepspeed_config={"zero_optimization": {"stage": stage, **zero}})


def test_zero2_and_zero3_without_offload_run_by_pieces():
    assert why_not_deepspeed(_plugin(2)) is None
    assert why_not_deepspeed(_plugin(3, offload_param={"device": "none"}, offload_optimizer={"device": "none"})) is None
    assert why_not_deepspeed(_plugin(3), "bf16") is None


def test_other_deepspeed_settings_keep_the_whole_batch_and_say_why():
    assert "ZeRO stage 1" in why_not_deepspeed(_plugin(1))
    assert "ZeRO stage 0" in why_not_deepspeed(SimpleNamespace(zero_stage=0, deepspeed_config={}))
    assert "offload_param to cpu" in why_not_deepspeed(_plugin(3, offload_param={"device": "cpu"}))
    assert "offload_optimizer to nvme" in why_not_deepspeed(_plugin(2, offload_optimizer={"device": "nvme"}))
    assert "fp16" in why_not_deepspeed(_plugin(2), "fp16")
    fp16 = _plugin(3)
    fp16.deepspeed_config["fp16"] = {"enabled": True}
    assert "fp16" in why_not_deepspeed(fp16)
    unmanaged = _plugin(3)
    unmanaged.deepspeed_config["managed_gradient_accumulation"] = False
    assert "managed_gradient_accumulation" in why_not_deepspeed(unmanaged)


def test_a_trainer_under_deepspeed_reads_its_plugin():
    state = SimpleNamespace(deepspeed_plugin=_plugin(1))
    trainer = SimpleNamespace(accelerator=SimpleNamespace(state=state, mixed_precision="no", num_processes=2),
                              is_deepspeed_enabled=True, is_fsdp_enabled=False, loss_type="dapo",
                              entropy_bonus_on=False, top_entropy_quantile=1.0, aux_loss_enabled=False)
    assert "ZeRO stage 1" in why_not_chunked(trainer)
    state.deepspeed_plugin = _plugin(3)
    assert why_not_distributed(trainer) is None and why_not_chunked(trainer) is None
