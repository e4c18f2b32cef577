"""benchmarks/launched.py: a benchmark's arms start as ``rlvr launch`` starts ``rlvr train``, and never run the
machine out of memory."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from launched import RESULTS_VARIABLE, RankWatcher, _ranks_under, launch_command, report  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr("rlvr.launch.accelerate.local_gpu_count", lambda: 0)


def test_a_ddp_arm_runs_the_script_under_rlvr_launchs_accelerate_command(no_gpu):
    argv, env = launch_command("ddp", 2, Path("bench.py"), ["--only", "plain"])
    assert argv[:2] == ["accelerate", "launch"] and argv[argv.index("--num_processes") + 1] == "2"
    assert argv[-3:] == ["bench.py", "--only", "plain"] and "rlvr" not in argv[-3:]
    assert Path(argv[argv.index("--config_file") + 1]).name == "ddp.yaml"
    assert env == {"ACCELERATE_USE_CPU": "true"}  # gloo on a CPU, as rlvr launch sets it


def test_a_deepspeed_arm_keeps_deepspeed_on_a_cpu(no_gpu):
    argv, env = launch_command("zero3", 2, Path("bench.py"), [])
    assert Path(argv[argv.index("--config_file") + 1]).name == "zero3.yaml"
    assert "ACCELERATE_USE_CPU" not in env and argv[argv.index("--mixed_precision") + 1] == "no"


def test_ranks_are_found_below_the_launcher_by_their_rank_variable():
    launcher = subprocess.Popen(["bash", "-c", "RANK=1 sleep 30 & RANK=0 sleep 30 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(ranks := _ranks_under(launcher.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(ranks.values()) == [0, 1]
    finally:
        os.killpg(launcher.pid, signal.SIGKILL)  # not procps' `kill -9 -PGID`: 4.0.2 signals group 9 instead
        launcher.wait()


def test_an_arm_is_stopped_before_the_machine_runs_out_of_memory():
    launcher = subprocess.Popen(["bash", "-c", "RANK=0 sleep 30 & wait"], start_new_session=True)
    watcher = RankWatcher(launcher, reserve_gb=1e9)  # no machine has a billion GB free: stop at once
    assert launcher.wait(timeout=10) != 0
    watcher.stop()
    assert watcher.out_of_memory


def test_each_rank_hands_its_result_over_in_a_file_of_its_own(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(RESULTS_VARIABLE, str(tmp_path))
    monkeypatch.setenv("RANK", "1")
    report({"peak_gb": 2.5})
    assert json.loads((tmp_path / "rank-1.json").read_text()) == {"rank": 1, "peak_gb": 2.5}
    assert json.loads(capsys.readouterr().out) == {"rank": 1, "peak_gb": 2.5}
