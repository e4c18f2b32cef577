"""Shared fixtures: small GSM8K-format data written for these tests, and a tiny model."""

import json
import os
from pathlib import Path

import pytest

# Tests never reach a hub; make sure libraries do not try.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# model.dtype auto means bf16 on a CPU with bf16 units (rlvr.precision): the suite runs float32 wherever it runs, so
# its tolerances do not depend on the machine; tests of bf16 ask for it (RLVR_CPU_BF16=1 emulates such a CPU).
os.environ.setdefault("RLVR_CPU_BF16", "0")

#: The recipes behind BENCHMARKS.md's keyword rounds (inputs of the measurements, not built-in recipes).
BENCHMARK_RECIPES = Path(__file__).resolve().parent.parent / "benchmarks" / "recipes"

# Problems written for rlvr's tests (not GSM8K items), in GSM8K's format.
FIXTURE_PROBLEMS = [
    ("A farmer has 4 pens with 6 goats in each. How many goats are there?", "There are 4*6=<<4*6=24>>24 goats.\n#### 24"),
    ("Ana saves $5 a week for 9 weeks. How much does she save?", "She saves 5*9=<<5*9=45>>45 dollars.\n#### 45"),
    ("A rope is 30 m long and is cut into 5 equal parts. How long is each part?", "Each part is 30/5=<<30/5=6>>6 m.\n#### 6"),
    ("A shop sold 1,200 pens on Monday and 300 on Tuesday. How many in total?", "1200+300=<<1200+300=1500>>1500\n#### 1,500"),
    ("The temperature was 4 degrees and fell by 9 degrees. What is it now?", "4-9=<<4-9=-5>>-5\n#### -5"),
    ("Leo reads 12 pages a day for 7 days. How many pages does he read?", "12*7=<<12*7=84>>84\n#### 84"),
    ("A bus carries 40 people; 15 get off and 8 get on. How many are on the bus?", "40-15+8=<<40-15+8=33>>33\n#### 33"),
    ("Half of 18 children wear hats. How many do not?", "18/2=<<18/2=9>>9\n#### 9"),
    ("A box holds 3 rows of 7 eggs. How many eggs?", "3*7=<<3*7=21>>21\n#### 21"),
    ("Mia has 50 stickers and gives away 20%. How many are left?", "50*0.2=<<50*0.2=10>>10 given, 50-10=<<50-10=40>>40\n#### 40"),
]

# Test-split problems, none of them in the train file (held out by question text).
FIXTURE_TEST_PROBLEMS = [
    ("A garden has 3 beds with 8 roses in each. How many roses are there?", "3*8=<<3*8=24>>24\n#### 24"),
    ("Sam earns $9 an hour for 5 hours. How much does he earn?", "9*5=<<9*5=45>>45\n#### 45"),
    ("A 24 cm ribbon is cut into 4 equal pieces. How long is each piece?", "24/4=<<24/4=6>>6\n#### 6"),
    ("A farm sold 1,000 eggs in May and 500 in June. How many in total?", "1000+500=<<1000+500=1500>>1500\n#### 1,500"),
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def gsm8k_dir(tmp_path):
    """A GSM8K-format directory: train.jsonl (10 rows) and test.jsonl (4 other rows)."""
    write_jsonl(tmp_path / "train.jsonl", [{"question": q, "answer": a} for q, a in FIXTURE_PROBLEMS])
    write_jsonl(tmp_path / "test.jsonl", [{"question": q, "answer": a} for q, a in FIXTURE_TEST_PROBLEMS])
    return tmp_path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from rlvr.testing import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


# ------------------------------------------------------------------ sandbox tests: nothing left on the host

#: The uids this process's sandboxes give their programs (rlvr.sandbox.executor: _UID_BASE + (pid % 1e6) * 256 + ...):
#: other sessions' sandboxes on the same host are not this test's business.
SANDBOX_UIDS = range(1_000_000 + (os.getpid() % 1_000_000) * 256, 1_000_000 + (os.getpid() % 1_000_000 + 1) * 256)


def _sysv_objects() -> set[tuple[str, str]]:
    """SysV IPC objects on the host created by one of this process's sandbox users."""
    found = set()
    for kind in ("shm", "msg", "sem"):
        path = Path("/proc/sysvipc") / kind
        if path.exists():
            header, *rows = [line.split() for line in path.read_text().splitlines()]
            creator = header.index("cuid")
            found |= {(kind, row[1]) for row in rows if len(row) > creator and int(row[creator]) in SANDBOX_UIDS}
    return found


def _key_users() -> set[int]:
    path = Path("/proc/key-users")
    return {int(line.split(":")[0]) for line in path.read_text().splitlines()} if path.exists() else set()


def _sandbox_processes() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            uid = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if int(uid.split()[1]) in SANDBOX_UIDS:
            found.append(int(entry.name))
    return found


def _scratch_dirs() -> set[str]:
    return {str(p) for d in ("/tmp", "/var/tmp", "/dev/shm") for p in Path(d).glob("rlvr-sandbox-*")}


def _host_state() -> dict:
    return {"ipc": _sysv_objects(), "keys": _key_users() & set(SANDBOX_UIDS), "scratch": _scratch_dirs()}


@pytest.fixture()
def host_untouched():
    """After the test: no SysV IPC object, sandbox user's key or process, or sandbox scratch dir is new on the host."""
    before = _host_state()
    yield
    after = _host_state()
    assert after["ipc"] <= before["ipc"], f"SysV IPC objects left on the host: {after['ipc'] - before['ipc']}"
    assert after["keys"] <= before["keys"], "kernel keys of a sandbox user left on the host"
    assert after["scratch"] <= before["scratch"], f"scratch left on the host: {after['scratch'] - before['scratch']}"
    assert _sandbox_processes() == []
