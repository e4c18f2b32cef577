"""Hostile snippets from the red team of issue 54, sent through the ``python`` tool: one escape attempt per test.

The tool (``rlvr.tools.make_python_tool``) runs what the model writes in rlvr's code sandbox; these are the attacks
of ``test_sandbox_hostile.py`` made through the tool's own wrapper and reply. Every test also checks, through
``host_untouched`` (conftest.py), that nothing of the run is left on the host. Each snippet ends by printing how far
it got (``done``, a count), so an attack that never ran fails its test instead of passing it.
"""

from __future__ import annotations

import json
import select
import shutil
import site
import socket
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import rlvr
from rlvr.sandbox import Limits, SandboxRefused, executor
from rlvr.tools import make_python_tool

pytestmark = pytest.mark.usefixtures("host_untouched")

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 2
#: The sandbox's promise: a hostile program costs at most its time limit plus a grace period.
WALL = TIMEOUT + executor.GRACE_SECONDS
MAX_CHARS = 4000
TIMED_OUT = f"Error: the code ran past its {TIMEOUT} s limit"


def build_tool(max_output_chars: int = MAX_CHARS):
    """A python tool with a small time limit; skips where the sandbox cannot give full isolation."""
    try:
        tool = make_python_tool(Limits(timeout=TIMEOUT, memory_mb=512), max_output_chars=max_output_chars)
    except SandboxRefused as refused:
        pytest.skip(f"the code sandbox cannot run here: {refused}")
    missing = tool.sandbox.missing
    if missing:  # weaker isolation allowed by the environment: these attacks are not expected to be contained
        tool.close()
        pytest.skip(f"the code sandbox runs with weaker isolation here: {missing}")
    return tool


@pytest.fixture(scope="module")
def python():
    """One tool for the whole file: every attack below hits the same instance, as in one training run."""
    tool = build_tool()
    yield tool
    tool.close()


def attempts(setup: str, tries: str, action: str) -> str:
    """A snippet: after ``setup``, ``action`` (one line on ``attempt``) for each of ``tries``, printing 'LEAK' and what
    it got when one works; then how many were blocked, and 'done'."""
    return (f"{setup}\nblocked, tries = 0, {tries}\nfor attempt in tries:\n    try:\n        print('LEAK', {action})\n"
            "    except Exception:\n        blocked += 1\nprint('blocked', blocked, 'of', len(tries))\nprint('done')\n")


def all_blocked(reply: str) -> bool:
    """Whether the snippet of :func:`attempts` ran to its end with every attempt blocked."""
    *_, count, done = ["", "", *reply.split("\n")]
    return "LEAK" not in reply and done == "done" and count.split()[1:2] == count.split()[3:4] != []


def read_attempts(path: str) -> str:
    """Reads of ``path`` directly and through /proc's roots, the cwd and every open descriptor, all with '..'."""
    tries = ("[path, '/proc/1/root' + path, '/proc/self/root' + path, '/proc/self/cwd/' + ups + path[1:]]"
             " + ['/proc/self/fd/%s/%s%s' % (fd, ups, path[1:]) for fd in os.listdir('/proc/self/fd')]")
    return attempts(f"import os\npath, ups = {path!r}, '../' * 40", tries, "attempt, open(attempt).read()")


def leaked_lines(path: Path, reply: str) -> list[str]:
    """Pieces (40 characters) of the host file ``path`` that show in ``reply``."""
    lines = [line.strip()[:40] for line in path.read_text(errors="replace").splitlines()]
    return [line for line in lines if len(line) >= 25 and line in reply]


# ------------------------------------------------------------------ 1-2. the dataset, the checkout, the reward code


@pytest.mark.parametrize("where", ["tmp_path", "checkout"])
def test_a_dataset_file_is_not_readable(python, tmp_path, where):
    marker = f"#### {uuid.uuid4().int}"
    folder = tmp_path if where == "tmp_path" else Path(tempfile.mkdtemp(prefix=".rlvr-hostile-", dir=REPO / "tests"))
    try:
        folder.chmod(0o755)
        dataset = folder / "test.jsonl"
        dataset.write_text(json.dumps({"question": "How many?", "answer": marker}) + "\n")
        dataset.chmod(0o644)
        reply = python(read_attempts(str(dataset)))
    finally:
        if where == "checkout":
            shutil.rmtree(folder)
    assert marker not in reply and all_blocked(reply), reply


@pytest.mark.parametrize("relative", ["tests/conftest.py", "../shared/data/gsm8k/test.jsonl",
                                      "src/rlvr/rewards/math.py"])
def test_a_checkout_file_is_not_readable(python, relative):
    path = (REPO / relative).resolve()
    if not path.is_file():
        pytest.skip(f"{relative} is not present beside this checkout")
    reply = python(read_attempts(str(path)))
    assert not leaked_lines(path, reply) and all_blocked(reply), reply


def test_a_search_of_the_whole_filesystem_finds_no_dataset_checkout_or_packages(python):
    reply = python(
        f"import os\nhost, found, files = {[str(REPO), str(REPO.parent / 'shared')]!r}, [], 0\n"
        "for root, dirs, names in os.walk('/'):\n"
        "    dirs[:] = [d for d in dirs if root != '/' or d not in ('proc', 'sys')]\n"
        "    files += len(names)\n"
        "    found += [os.path.join(root, name) for name in names\n"
        "              if name.endswith(('.jsonl', '.jsonl.gz', '.parquet', '.arrow', 'conftest.py', 'pyproject.toml'))\n"
        "              or '-packages/' in root + '/' or any((root + '/').startswith(h + '/') for h in host)]\n"
        "print('found', found[:20], 'of', files > 100)\n"
    )
    assert reply == "found [] of True", reply


def test_rlvr_does_not_import_even_with_the_hosts_paths(python):
    paths = [str(Path(rlvr.__file__).resolve().parents[1]), *site.getsitepackages()]
    reply = python(attempts(f"import sys\nsys.path[:0] = {paths!r}", "['rlvr', 'rlvr.rewards.math', 'torch', 'trl']",
                            "__import__(attempt)"))
    assert reply.endswith("blocked 4 of 4\ndone") and all_blocked(reply), reply


def test_the_reward_code_cannot_be_loaded_from_its_file(python):
    path = Path(rlvr.__file__).resolve().parent / "rewards" / "math.py"
    reply = python(attempts(
        f"import importlib.util as util\nspec = util.spec_from_file_location('stolen', {str(path)!r})",
        "[lambda: spec.loader.get_source('stolen'), lambda: spec.loader.exec_module(util.module_from_spec(spec))]",
        "attempt()"))
    assert not leaked_lines(path, reply) and reply.endswith("blocked 2 of 2\ndone") and all_blocked(reply), reply


# ------------------------------------------------------------------ 3. network


def listener(kind: str) -> socket.socket:
    """A socket on the host that a connection (or datagram) from the snippet would make readable."""
    if kind == "unix-abstract":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(f"\0rlvr-hostile-{uuid.uuid4().hex}")
    else:
        server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM)
        server.bind(("127.0.0.1", 0))
    if kind != "udp":
        server.listen(8)
    return server


@pytest.mark.parametrize("kind", ["tcp", "udp", "unix-abstract"])
def test_a_server_the_test_opens_on_the_host_sees_nothing(python, kind):
    with listener(kind) as server:
        reach = (f"import socket\ndef reach(address):\n    with socket.socket({int(server.family)}, {int(server.type)}) as c:\n"
                 "        c.settimeout(0.5)\n        c.connect(address)\n        return c.send(b'hello')")
        reply = python(attempts(reach, f"[{server.getsockname()!r}]", "reach(attempt)"))
        readable, _, _ = select.select([server], [], [], 0.3)
    assert not readable, f"the host's {kind} server was reached; reply: {reply}"
    assert all_blocked(reply), reply


# ------------------------------------------------------------------ 4, 6. fork bombs and hangs

BOUNDED_FORK_BOMB = (
    "import os, time\nmain = os.getpid()\n"
    "for _ in range(10):  # every process forks: 2**10 processes at most, were nothing to stop it\n"
    "    try:\n        os.fork()\n    except OSError:\n        pass\n"
    "if os.getpid() != main:\n    time.sleep(30)\n    os._exit(0)\n"
)
COUNT_MINE = (  # this user's processes, once the bomb has settled (a PID namespace: /proc shows only this run)
    "time.sleep(0.8)\nmine = 0\n"
    "for entry in filter(str.isdigit, os.listdir('/proc')):\n"
    "    try:\n        mine += ('Uid:\\t%d\\t' % os.getuid()) in open('/proc/%s/status' % entry).read()\n"
    "    except OSError:\n        pass\n"
    "print('processes', mine)\n"
)


def test_a_fork_bomb_is_held_at_the_process_limit_and_the_next_call_works(python):
    start = time.monotonic()
    reply = python(BOUNDED_FORK_BOMB + COUNT_MINE)
    assert time.monotonic() - start < WALL and reply.startswith("processes "), reply
    assert 1 <= int(reply.split()[1]) <= Limits().nproc, f"the fork bomb was not held at the limit: {reply}"
    assert python("print(6 * 7)") == "42"


HANGS = {
    "busy loop": "while True:\n    pass\n",
    "sleep": "import time\ntime.sleep(1000)\n",
    "sleep ignoring signals and exceptions": (
        "import signal, time\n"
        "for number in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGHUP):\n"
        "    signal.signal(number, signal.SIG_IGN)\n"
        "while True:\n    try:\n        time.sleep(1000)\n    except BaseException:\n        pass\n"
    ),
    "fork bomb of sleepers": BOUNDED_FORK_BOMB + "time.sleep(1000)\n",
}


@pytest.mark.parametrize("name", list(HANGS))
def test_a_hang_is_stopped_at_the_tools_limit_and_the_next_call_works(python, name):
    start = time.monotonic()
    reply = python(HANGS[name])
    assert reply == TIMED_OUT and time.monotonic() - start < WALL, (reply, time.monotonic() - start)
    assert python("print(6 * 7)") == "42"


# ------------------------------------------------------------------ 5. writes outside its directory


@pytest.mark.parametrize("where", ["tmp_path", "checkout", "/tmp", "/var/tmp", "/dev/shm"])
def test_a_write_outside_its_directory_does_not_reach_the_host(python, tmp_path, where):
    name = f"rlvr-hostile-{uuid.uuid4().hex}"
    if where == "tmp_path":
        tmp_path.chmod(0o777)  # writable by anyone: only the sandbox can keep the snippet out
        target = tmp_path / "made" / name
    else:
        folder = REPO / "tests" if where == "checkout" else Path(where)
        if not folder.is_dir():
            pytest.skip(f"{where} does not exist on this host")
        target = folder / name
    try:
        reply = python(f"import os\npath = {str(target)!r}\ntry:\n    os.makedirs(os.path.dirname(path), exist_ok=True)\n"
                       "    open(path, 'w').write('escaped')\nexcept OSError:\n    pass\nprint('done')\n")
        assert not target.exists(), f"the snippet wrote {target} on the host"
        assert where != "tmp_path" or not any(tmp_path.iterdir()), f"the snippet made {list(tmp_path.iterdir())}"
    finally:
        if target.exists():
            target.unlink()
    assert reply == "done", reply


# ------------------------------------------------------------------ 7. environment


def test_the_hosts_environment_does_not_reach_the_snippet(monkeypatch):
    secret = f"hostile-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("RLVR_HOSTILE_SECRET", secret)
    tool = build_tool(max_output_chars=20_000)
    try:
        reply = tool("import os\nprint(sorted(os.environ.items()))\n"
                     "for entry in ['self', *filter(str.isdigit, os.listdir('/proc'))]:\n"
                     "    try:\n        print(entry, open('/proc/%s/environ' % entry, 'rb').read())\n"
                     "    except OSError as error:\n        print(entry, 'blocked', type(error).__name__)\n"
                     "print('done')\n")
    finally:
        tool.close()
    assert secret not in reply and "RLVR_HOSTILE_SECRET" not in reply, reply
    assert "('PATH', " in reply and reply.endswith("done"), reply


# ------------------------------------------------------------------ 8. the tool never raises

NEVER_RAISES = {
    "SystemExit(3)": ("raise SystemExit(3)", "(exited with status 3)"),
    "os._exit(1)": ("import os\nos._exit(1)", "Error: the code stopped"),
    "10 MB printed": ("print('x' * 10_000_000)", "[output cut"),
    "10 MB written to fd 1": ("import os\nos.write(1, b'x' * 10_000_000)\nprint('done')", "done"),
    "KeyboardInterrupt": ("raise KeyboardInterrupt", "KeyboardInterrupt"),
    "SIGKILL of itself": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "Error: the code stopped"),
    "segfault": ("import ctypes\nctypes.string_at(0)", "Error: the code stopped"),
    "builtins broken": ("import builtins\nbuiltins.len = builtins.str = None", "Error"),
    "memory hog": ("blocks = []\nwhile True:\n    blocks.append(bytearray(50 << 20))", "Error"),
    "unencodable text": ("print('\\udcff\\x00\\ufffe' * 100)", "\x00"),
}


@pytest.mark.parametrize("name", list(NEVER_RAISES))
def test_the_tool_returns_text_whatever_the_snippet_does(python, name):
    code, expected = NEVER_RAISES[name]
    reply = python(code)
    assert isinstance(reply, str) and expected in reply, reply
    assert len(reply) <= MAX_CHARS + 100, len(reply)


# ------------------------------------------------------------------ after all this


def test_an_honest_snippet_still_works_on_the_same_tool(python):
    """Last in the file: the module's tool has served every attack above by now (pytest keeps file order)."""
    python("import os\nos._exit(1)")  # one more abrupt end right before, whatever runs this test alone
    reply = python(
        "import json, math, statistics\n"
        "with open('values.json', 'w') as handle:\n    json.dump([math.factorial(i) for i in range(8)], handle)\n"
        "print(statistics.mean(json.load(open('values.json'))))\n"
    )
    assert reply == "739.25"
