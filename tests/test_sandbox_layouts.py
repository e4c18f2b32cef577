"""The sandbox never weakens silently (issue 36): the minimal root from any interpreter layout, full or nothing.

* The red team runs the scorer from the development environment, from a venv made in /tmp (``mktemp -d``,
  as in the bug report: a venv's ``platstdlib`` is the venv itself, which the root's tmpfs over /tmp used
  to hide) and from a standalone installation copied into /tmp (conda, python-build-standalone: the
  standard library itself under /tmp). In each, a program inside the sandbox finds no file of the checkout,
  no planted answers, cannot ``import rlvr`` or a package of the venv, and the root is the minimal one.
* Without the minimal root (simulated), scoring stops with one line naming what is missing; with the
  opt-in it scores and the weaker isolation is printed and recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from rlvr.sandbox import (
    ALLOW_WEAKER_ENV,
    Limits,
    Sandbox,
    SandboxRefused,
    executor,
    from_asserts,
    isolation_used,
)

pytestmark = pytest.mark.usefixtures("host_untouched")

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
SANDBOX_DIR = SRC / "rlvr" / "sandbox"
ADD_TESTS = from_asserts(["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"])
HONEST = "def add(a, b):\n    return a + b\n"
SCRATCH_PARENT = "/tmp" if os.path.isdir("/tmp") else None
VERSION = f"python{sys.version_info[0]}.{sys.version_info[1]}"

# The red team: each attack returns 'blocked' when it fails, and raises with what leaked when it works (the
# failure detail then shows the leak).
ATTACKS = r'''
import os, sys

def read(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read(200)
    except OSError:
        return "blocked"
    raise RuntimeError(f"read {path}: {data!r}")

def imports(name):
    try:
        module = __import__(name)
    except ImportError:
        return "blocked"
    raise RuntimeError(f"imported {name} from {getattr(module, '__file__', None)}")

def search(names):
    """Walk the whole visible tree (and up from every search-path descriptor) for the files named."""
    found = []
    starts = ["/"] + [os.path.join(entry, "..", "..", "..") for entry in sys.path]
    for start in starts:
        for top, dirs, files in os.walk(start):
            dirs[:] = [d for d in dirs if not (top == "/" and d in ("proc", "dev", "sys"))]
            found += [os.path.join(top, f) for f in files if f in names]
            found += [os.path.join(top, d) for d in dirs if d in names]
    if found:
        raise RuntimeError(f"found {sorted(set(found))[:5]}")
    return "blocked"

def stdlib():
    import ssl, sqlite3, lzma, ctypes, decimal, json, zoneinfo
    return "works"
'''

DRIVER = r'''
import json, sys
from rlvr.sandbox import Limits, Sandbox, from_asserts
program, asserts = json.load(sys.stdin)
with Sandbox(workers=1, limits=Limits(timeout=30, memory_mb=1024)) as box:
    result = box.run(program, from_asserts(asserts))
    print(json.dumps({"isolation": box.isolation, "missing": box.missing, "passed": list(result.passed),
                      "failures": result.failures, "status": result.status, "detail": result.detail,
                      "prefix": sys.prefix, "base_prefix": sys.base_prefix}))
'''


def full_isolation_here() -> str:
    """'' when this machine gives the sandbox full isolation, else what is missing."""
    env = {k: v for k, v in os.environ.items() if k != executor.SIMULATE_NO_ROOT_ENV}
    probe = subprocess.run([sys.executable, "-c", "from rlvr.sandbox import Sandbox\nwith Sandbox(1, allow_weaker=True)"
                            " as b:\n    print('; '.join(b.missing))"], capture_output=True, text=True, env=env,
                           timeout=120)
    return probe.stdout.strip() or (probe.stderr.strip()[-300:] if probe.returncode else "")


@pytest.fixture(scope="module")
def needs_full_isolation():
    missing = full_isolation_here()
    if missing:
        pytest.skip(f"full isolation is not available on this machine: {missing}")


@pytest.fixture(scope="module")
def scratch():
    """A directory in /tmp (``mktemp -d``), holding planted answers."""
    path = Path(tempfile.mkdtemp(prefix="rlvr-layout-", dir=SCRATCH_PARENT))
    (path / "answers.json").write_text(json.dumps({"task_id": 11, "expected": [[1, 2, 3]]}))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _plant_package(site_packages: Path) -> None:
    site_packages.mkdir(parents=True, exist_ok=True)
    (site_packages / "rlvr_answers.py").write_text("ANSWERS = {11: [1, 2, 3]}\n")
    (site_packages / "rlvr_answers.json").write_text('{"11": [1, 2, 3]}\n')


@pytest.fixture(scope="module")
def tmp_venv(scratch):
    """``python -m venv --system-site-packages`` made in /tmp, with a planted package in its site-packages."""
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    _plant_package(Path(site))
    return python


@pytest.fixture(scope="module")
def tmp_installation(scratch):
    """A standalone installation in /tmp (as conda or python-build-standalone lay one out): this interpreter's
    binary, libpython and standard library, hard-linked, with a planted package in its own site-packages."""
    base = Path(sys.base_prefix)
    binary, stdlib = base / "bin" / VERSION, base / "lib" / VERSION
    if not (binary.is_file() and (stdlib / "os.py").is_file()):
        pytest.skip(f"{base} is not laid out as bin/{VERSION} + lib/{VERSION}")
    prefix = scratch / "standalone"
    (prefix / "bin").mkdir(parents=True)
    skipped = {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3"}
    try:
        os.link(binary, prefix / "bin" / VERSION)
        shutil.copytree(stdlib, prefix / "lib" / VERSION, copy_function=os.link, symlinks=True,
                        ignore=lambda d, names: [n for n in names if d == str(stdlib) and n in skipped])
        for library in (base / "lib").glob("libpython*"):
            os.link(library, prefix / "lib" / library.name, follow_symlinks=False)
    except OSError as error:
        pytest.skip(f"cannot hard-link this installation into {scratch}: {error}")
    _plant_package(prefix / "lib" / VERSION / "site-packages")
    python = prefix / "bin" / VERSION
    seen = subprocess.run([str(python), "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True)
    if seen.returncode or seen.stdout.strip() != str(prefix):
        pytest.skip(f"the copied interpreter does not run from {prefix}: {seen.stderr.strip()[-200:]}")
    return python


def red_team(python: Path, scratch: Path) -> dict:
    """Run the attacks through the scorer started by ``python`` (rlvr from the checkout's src)."""
    asserts = [
        f"assert read({str(REPO / 'pyproject.toml')!r}) == 'blocked'",
        f"assert read({str(SRC / 'rlvr' / 'rewards' / 'code.py')!r}) == 'blocked'",
        f"assert read({str(scratch / 'answers.json')!r}) == 'blocked'",
        "assert imports('rlvr') == 'blocked'",
        "assert imports('rlvr_answers') == 'blocked'",
        "assert search({'answers.json', 'rlvr_answers.py', 'rlvr_answers.json', 'pyproject.toml', 'pyvenv.cfg', "
        "'rlvr'}) == 'blocked'",
        "assert stdlib() == 'works'",
    ]
    env = {k: v for k, v in os.environ.items() if k not in (ALLOW_WEAKER_ENV, executor.SIMULATE_NO_ROOT_ENV)}
    env["PYTHONPATH"] = str(SRC)
    done = subprocess.run([str(python), "-c", DRIVER], input=json.dumps([ATTACKS, asserts]), capture_output=True,
                          text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_contained(report: dict) -> None:
    assert report["missing"] == [], report["missing"]
    assert report["isolation"]["files"].startswith("minimal root"), report["isolation"]["files"]
    assert report["status"] == "ok", report["detail"]
    assert all(report["passed"]), report["failures"]


@pytest.mark.usefixtures("needs_full_isolation")
def test_red_team_from_the_development_environment(scratch):
    check_contained(red_team(Path(sys.executable), scratch))


@pytest.mark.usefixtures("needs_full_isolation")
def test_red_team_from_a_venv_in_tmp(tmp_venv, scratch):
    report = red_team(tmp_venv, scratch)
    assert report["prefix"] == str(tmp_venv.parent.parent), "the scorer did not run in the venv"
    check_contained(report)


@pytest.mark.usefixtures("needs_full_isolation")
def test_red_team_from_an_installation_in_tmp(tmp_installation, scratch):
    report = red_team(tmp_installation, scratch)
    assert report["base_prefix"] == str(tmp_installation.parent.parent)
    check_contained(report)


def test_a_venv_takes_the_standard_library_of_its_base(tmp_venv):
    """rootfs.stdlib_dirs() from a venv's interpreter (with site): the base's directories, never the venv's."""
    code = f"import sys; sys.path.insert(0, {str(SANDBOX_DIR)!r}); import rootfs, json; print(json.dumps(rootfs.stdlib_dirs()))"
    found = json.loads(subprocess.run([str(tmp_venv), "-c", code], capture_output=True, text=True, check=True).stdout)
    venv = str(tmp_venv.parent.parent)
    assert found and not any(p.startswith(venv) for p in found), found
    assert os.path.realpath(sysconfig.get_paths(vars={"base": sys.base_prefix, "installed_base": sys.base_prefix,
                                                      "platbase": sys.base_exec_prefix,
                                                      "installed_platbase": sys.base_exec_prefix})["stdlib"]) in found


@pytest.mark.usefixtures("needs_full_isolation")
def test_sources_are_bound_through_descriptors_when_the_root_covers_them(tmp_installation):
    """Every candidate for the root's tmpfs covering a source (here: /tmp only) must not hide it."""
    code = (f"import os, sys; sys.path.insert(0, {str(SANDBOX_DIR)!r}); import rootfs\n"
            "rootfs._ROOT_MOUNTS = ('/tmp',)\n"
            "why = rootfs.enter()\n"
            "print(why or 'built', os.path.isfile(os.path.join(sys.prefix, 'lib', "
            f"{VERSION!r}, 'os.py')), sorted(os.listdir('/')), rootfs.PINNED)\n")
    done = subprocess.run([str(tmp_installation), "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-1000:]
    assert done.stdout.startswith("built True"), done.stdout
    assert "work" not in done.stdout.split("[", 1)[1].split("]", 1)[0]


# ------------------------------------------------------------------ full or nothing


@pytest.fixture()
def fresh_record(monkeypatch):
    """A fresh per-process isolation record, so this test's weaker report does not stay for later tests."""
    record = executor.IsolationRecord()
    monkeypatch.setattr(executor, "ISOLATION", record)
    return record


@pytest.fixture()
def no_root(needs_full_isolation, monkeypatch, fresh_record):
    """Everything but the minimal root (simulated refusal); on a machine with less, other layers would be named."""
    monkeypatch.setenv(executor.SIMULATE_NO_ROOT_ENV, "simulated: the kernel refused the root")
    monkeypatch.delenv(ALLOW_WEAKER_ENV, raising=False)


@pytest.mark.usefixtures("no_root")
def test_without_the_minimal_root_scoring_stops_with_one_line():
    with Sandbox(workers=1) as box:
        with pytest.raises(SandboxRefused) as refused:
            box.run(HONEST, ADD_TESTS)
    message = str(refused.value)
    assert "\n" not in message
    assert "simulated: the kernel refused the root" in message and ALLOW_WEAKER_ENV in message, message
    assert isolation_used() is None  # nothing ran


@pytest.mark.usefixtures("no_root")
def test_with_the_opt_in_it_scores_and_reports_the_weaker_isolation(monkeypatch, capsys):
    monkeypatch.setenv(ALLOW_WEAKER_ENV, "1")
    with Sandbox(workers=1, limits=Limits(timeout=5)) as box:
        assert box.run(HONEST, ADD_TESTS).tests_passed == 3
        assert "no minimal root: simulated" in box.isolation["files"]
    assert "WEAKER" in capsys.readouterr().err
    used = isolation_used()
    assert used["complete"] is False and any(m.startswith("minimal root: simulated") for m in used["missing"])


@pytest.mark.usefixtures("fresh_record")
def test_namespaces_off_refuses_unless_allowed(monkeypatch):
    monkeypatch.delenv(ALLOW_WEAKER_ENV, raising=False)
    with Sandbox(workers=1, namespaces=False) as box, pytest.raises(SandboxRefused, match="namespaces switched off"):
        box.run(HONEST, ADD_TESTS)


@pytest.mark.usefixtures("no_root")
def test_rlvr_reward_score_stops_with_one_line_or_scores_with_the_opt_in(tmp_path, monkeypatch, capsys):
    from rlvr.cli import main

    records = tmp_path / "completions.jsonl"
    records.write_text(json.dumps({"completion": HONEST, "test_list": ["assert add(1, 2) == 3"]}) + "\n")
    assert main(["reward", "score", "--task", "code", "--input", str(records)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlvr: error: the code sandbox cannot isolate") and "\n" not in err, err
    monkeypatch.setenv(ALLOW_WEAKER_ENV, "1")
    assert main(["reward", "score", "--task", "code", "--input", str(records)]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["reward"] == 1.0
    assert "WEAKER" in out.err


@pytest.mark.usefixtures("no_root")
def test_the_sandbox_allow_weaker_option_is_the_same_opt_in(tmp_path, monkeypatch, capsys):
    from rlvr.cli import main

    monkeypatch.delenv(ALLOW_WEAKER_ENV, raising=False)  # restored (unset) after the option sets it
    records = tmp_path / "completions.jsonl"
    records.write_text(json.dumps({"completion": HONEST, "test_list": ["assert add(1, 2) == 3"]}) + "\n")
    assert main(["reward", "score", "--task", "code", "--input", str(records), "--sandbox-allow-weaker"]) == 0
    assert json.loads(capsys.readouterr().out)["reward"] == 1.0


@pytest.mark.usefixtures("needs_full_isolation", "fresh_record")
def test_the_isolation_is_recorded_in_an_evaluation_summary(monkeypatch):
    from rlvr.evaluation.summary import summarize
    from rlvr.tasks import get_task

    monkeypatch.delenv(executor.SIMULATE_NO_ROOT_ENV, raising=False)
    task = get_task("code", {})
    try:
        task.score_records([{"completion": HONEST, "test_list": ["assert add(1, 2) == 3"]}])
    finally:
        task.close()
    recorded = summarize([], task=get_task("code", {}))["sandbox"]
    assert recorded["complete"] is True and recorded["missing"] == []
    assert recorded["layers"]["files"].startswith("minimal root")


@pytest.mark.usefixtures("no_root")
def test_a_training_runs_mlflow_run_is_tagged_with_the_isolation(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv(ALLOW_WEAKER_ENV, "1")
    from mlflow.tracking._tracking_service import utils

    uri, previous = f"sqlite:///{tmp_path / 'mlflow.db'}", utils._tracking_uri
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # restored after the test (set_tracking_uri sets it too)
    mlflow.set_tracking_uri(uri)
    try:
        experiment = mlflow.MlflowClient(uri).create_experiment("sandbox-isolation")  # not a global left by others
        with mlflow.start_run(experiment_id=experiment) as run, Sandbox(workers=1) as box:
            box.run_many([(HONEST, ADD_TESTS)])  # the pool's threads start the worker; the caller's thread tags
        tags = mlflow.get_run(run.info.run_id).data.tags
    finally:
        mlflow.set_tracking_uri(previous)
    assert tags["rlvr.sandbox"].startswith("weaker: minimal root: simulated"), tags
    assert "no minimal root" in tags["rlvr.sandbox.files"]
