"""The piecewise loss (one group at a time, shared prompt) under DDP: two gloo processes on CPU, one optimizer step.

``ddp_piecewise_worker.py`` runs on each rank; its docstring says what it computes. Here: the loss by pieces, with
and without the shared-prompt forward, gives each rank TRL's whole-micro-batch loss and the same averaged gradients
as TRL's one DDP backward per micro-batch, although the ranks run different numbers of pieces (rank 1 has nothing
to learn in the micro-batch that ends the step); DDP's own reducer does not all-reduce on that path, and the metrics TRL gathers
inside its loss are exchanged once per micro-batch.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from two_ranks import rank_environment, run_two_ranks

import rlvr
from rlvr.training.chunked_loss import why_not_chunked, why_not_distributed
from rlvr.training.piece_loop import average_gradients

WORKER = Path(__file__).with_name("ddp_piecewise_worker.py")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory, tiny_model_dir):
    out = tmp_path_factory.mktemp("ddp-piecewise")
    env = rank_environment(Path(rlvr.__file__).resolve().parent.parent)
    return run_two_ranks(WORKER, [str(tiny_model_dir), str(out)], env, out, "DDP")


@pytest.mark.slow
def test_under_ddp_the_loss_runs_by_pieces_with_the_shared_prompt(ranks):
    for rank in ranks:
        assert rank["plan"]["processes"] == 2
        assert rank["plan"]["chunks"] is None and rank["plan"]["loss"] is None
        assert rank["plan"]["summary"] == {"rollouts": "shared prompt", "loss": "shared prompt",
                                           "loss_batch": "one group at a time"}
        assert rank["shared_loss_after"] is None  # the shared forward agreed with TRL's on every rank


@pytest.mark.slow
@pytest.mark.parametrize("path", ["pieces", "shared"])
def test_ddp_pieces_give_trls_losses_and_averaged_gradients(ranks, path):
    for rank in ranks:
        mine, theirs = rank[path], rank["whole"]
        assert mine["losses"] == pytest.approx(theirs["losses"], rel=1e-5, abs=1e-7)
        assert mine["grads"].keys() == theirs["grads"].keys()
        assert any(g.abs().max() > 0 for g in mine["grads"].values())
        for name, grad in mine["grads"].items():
            torch.testing.assert_close(grad, theirs["grads"][name], rtol=1e-4, atol=1e-7, msg=name)
    for name, grad in ranks[0][path]["grads"].items():  # one average: every rank steps the same
        assert torch.equal(grad, ranks[1][path]["grads"][name]), name
    assert ranks[1][path]["losses"][1] == 0.0  # rank 1 had nothing to learn in the step's last micro-batch


@pytest.mark.slow
@pytest.mark.parametrize("path", ["pieces", "shared"])
def test_ddp_pieces_do_not_use_ddps_reducer_and_exchange_metrics_once(ranks, path):
    assert [rank["whole"]["ddp_allreduces"] for rank in ranks] != [0, 0]  # the counter sees DDP's backward
    assert [rank[path]["ddp_allreduces"] for rank in ranks] == [0, 0]
    metrics = [{k: v for k, v in rank[path]["metrics"].items() if "time" not in k} for rank in ranks]  # timings: local
    assert metrics[0] == metrics[1]  # every rank holds every rank's piece metrics
    assert len(metrics[0]["update/skipped_share"]) == 4  # 2 micro-batches x 2 ranks
    assert 1.0 in metrics[0]["update/skipped_share"]  # rank 1's micro-batch with nothing to learn
    assert metrics[0]["entropy"]


# --- engines the loss cannot run by pieces on (fast, no processes) ---------------------------------------------

def _trainer(**accelerator):
    from accelerate.utils import DistributedDataParallelKwargs, DistributedType

    fields = {"num_processes": 2, "multi_device": False, "distributed_type": DistributedType.MULTI_CPU,
              "ddp_handler": None, **accelerator}
    return SimpleNamespace(accelerator=SimpleNamespace(**fields), is_deepspeed_enabled=False,
                           is_fsdp_enabled=False, loss_type="dapo", entropy_bonus_on=False,
                           top_entropy_quantile=1.0, aux_loss_enabled=False), DistributedDataParallelKwargs


def test_plain_ddp_and_one_process_run_by_pieces_deepspeed_zero1_and_fsdp_do_not_and_say_why():
    trainer, _ = _trainer()
    assert why_not_chunked(trainer) is None
    trainer.accelerator.num_processes = 1
    assert why_not_chunked(trainer) is None
    deepspeed, _ = _trainer(num_processes=1)
    deepspeed.is_deepspeed_enabled = True  # ZeRO-2/3: tests/test_deepspeed_piecewise_loss.py
    deepspeed.accelerator.state = SimpleNamespace(deepspeed_plugin=SimpleNamespace(zero_stage=1, deepspeed_config={}))
    deepspeed.accelerator.mixed_precision = "no"
    assert "DeepSpeed ZeRO stage 1" in why_not_chunked(deepspeed) and "ZeRO-2" in why_not_distributed(deepspeed)
    fsdp, _ = _trainer()
    fsdp.is_fsdp_enabled = True
    assert why_not_chunked(fsdp).startswith("FSDP gathers the parameters in every forward")


def test_ddp_settings_the_manual_average_does_not_reproduce_keep_the_whole_batch():
    from accelerate.utils import DistributedType

    trainer, kwargs = _trainer(ddp_handler=None)
    trainer.accelerator.ddp_handler = kwargs(static_graph=True)
    assert "static_graph" in why_not_chunked(trainer)
    trainer.accelerator.ddp_handler = kwargs(comm_hook="fp16")
    assert "communication hook" in why_not_chunked(trainer)
    trainer.accelerator.ddp_handler = kwargs(find_unused_parameters=True)
    assert why_not_chunked(trainer) is None
    xla, _ = _trainer(distributed_type=DistributedType.XLA)
    assert "not DDP" in why_not_chunked(xla)


def test_average_gradients_on_one_process_is_ddps_scaling_and_fills_missing_gradients(tmp_path):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        a, b = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2, 2))
        a.grad = torch.tensor([1.0, 2.0, 3.0])
        average_gradients([a, b], world_size=1)
        assert torch.equal(a.grad, torch.tensor([1.0, 2.0, 3.0])) and torch.equal(b.grad, torch.zeros(2, 2))
    finally:
        dist.destroy_process_group()
