"""The filesystem a sandboxed program sees: the standard library and system libraries, nothing else.

The worker builds it once, in its own mount namespace: a fresh tmpfs becomes the root
(``pivot_root``; the host's root is detached), holding read-only bind mounts of

* the Python standard library (``sysconfig``'s ``stdlib``/``platstdlib``, ``lib-dynload`` inside),
  with every ``site-packages``/``dist-packages`` in them covered by an empty directory;
* the dynamic loader's library directories (what ``_ssl``, ``_sqlite3``, ``ctypes`` ... link to),
  with any ``python*`` directory inside them covered likewise, and the shared objects the
  interpreter has mapped that live elsewhere (``libpython``), one file each;
* the interpreter binary, and ``/dev/null``, ``zero``, ``full``, ``random``, ``urandom``;

plus empty ``/tmp``, ``/dev/shm`` and ``/proc`` for each run to mount its own. Not there: the
checkout, the task data, the user's home, installed packages, ``/etc``, ``/sys``.

Stdlib only: loaded by the sandbox worker, outside the rlvr package.
"""

from __future__ import annotations

import glob
import os
import sys
import sysconfig

import confine

DEVICES = ("null", "zero", "full", "random", "urandom")
MOUNT_POINTS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/proc")
_LOADER_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib/{arch}", "/usr/lib/{arch}",
                "/usr/local/lib/{arch}")
_RO = confine.MS_RDONLY | confine.MS_NOSUID | confine.MS_NODEV
_MNT_DETACH = 2


def stdlib_dirs() -> list[str]:
    paths = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")}
    dynload = os.path.join(sysconfig.get_paths()["platstdlib"], "lib-dynload")
    if os.path.isdir(dynload):
        paths.add(os.path.realpath(dynload))
    return _outermost(sorted(p for p in paths if os.path.isdir(p)))


def library_dirs() -> list[str]:
    """The loader's search path: standard directories and ld.so.conf entries, resolved."""
    arch = f"{os.uname().machine}-linux-gnu"
    candidates = [d.format(arch=arch) for d in _LOADER_DIRS]
    for conf in sorted(glob.glob("/etc/ld.so.conf.d/*.conf")):
        try:
            with open(conf) as handle:
                candidates += [line.strip() for line in handle if line.strip().startswith("/")]
        except OSError:
            continue
    # /usr/lib holds python3/dist-packages and more: only its architecture directory is needed there.
    chosen = {os.path.realpath(d) for d in candidates if os.path.isdir(d) and os.path.realpath(d) != "/usr/lib"}
    return _outermost(sorted(chosen))


def mapped_libraries(under: list[str]) -> list[str]:
    """Shared objects this process has mapped that lie outside ``under`` (e.g. libpython)."""
    found = set()
    try:
        with open("/proc/self/maps") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 6 and ".so" in fields[5] and fields[5].startswith("/"):
                    found.add(os.path.realpath(fields[5]))
    except OSError:
        return []
    return sorted(p for p in found if os.path.isfile(p) and not _inside(p, under))


def _outermost(paths: list[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(paths, key=len):
        if not _inside(path, kept):
            kept.append(path)
    return kept


def _inside(path: str, parents: list[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in parents)


def _packages_in(stdlib: list[str], libraries: list[str]) -> list[str]:
    """Installed-package directories to cover: site/dist-packages, and python* dirs in library dirs."""
    covered = set()
    for root in stdlib + libraries:
        for pattern in ("site-packages", "dist-packages", "python*/site-packages", "python*/dist-packages"):
            covered.update(glob.glob(os.path.join(root, pattern)))
    for root in libraries:
        for path in glob.glob(os.path.join(root, "python*")):
            if os.path.isdir(path) and not any(_inside(s, [path]) for s in stdlib):
                covered.add(path)
    return sorted(os.path.realpath(p) for p in covered if os.path.isdir(p))


def _bind(source: str, root: str, writable_exec: bool = False) -> None:
    target = root + source
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    if not confine.mount(source, target, None, confine.MS_BIND | confine.MS_REC):
        raise OSError(f"bind mount of {source} failed")
    flags = confine.MS_REMOUNT | confine.MS_BIND | confine.MS_NOSUID | (0 if writable_exec else confine.MS_RDONLY)
    if not confine.mount(None, target, None, flags | (0 if source.startswith("/dev/") else confine.MS_NODEV)):
        raise OSError(f"read-only remount of {source} failed")


def _cover(path: str, root: str) -> None:
    target = root + path
    if os.path.isdir(target):
        confine.mount("tmpfs", target, "tmpfs", _RO | confine.MS_NOEXEC, "size=4k,mode=555")


def enter() -> str:
    """Build the root and move this process into it (a new mount namespace). '' on success, else why not."""
    stdlib = stdlib_dirs()
    libraries = [d for d in library_dirs() if not _inside(d, stdlib)]
    files = mapped_libraries(stdlib + libraries) + [os.path.realpath(sys.executable)]
    covered = _packages_in(stdlib, libraries)
    if not confine.unshare(confine.CLONE_NEWNS):
        return "no mount namespace"
    if not confine.mount(None, "/", None, confine.MS_REC | confine.MS_PRIVATE):
        return "cannot make the mounts private"
    root = next((d for d in ("/tmp", "/mnt", "/var/tmp", "/run") if os.path.isdir(d) and not os.path.islink(d)), None)
    if root is None or not confine.mount("tmpfs", root, "tmpfs", confine.MS_NOSUID, "size=1m,mode=755"):
        return "cannot mount a tmpfs for the new root"
    try:
        for path in libraries + stdlib:
            _bind(path, root)
        for path in files:
            if os.path.exists(path):
                _bind(path, root)
        for name in DEVICES:
            if os.path.exists(f"/dev/{name}"):
                _bind(f"/dev/{name}", root, writable_exec=True)
        for path in covered:
            _cover(path, root)
        for path in MOUNT_POINTS:
            os.makedirs(root + path, exist_ok=True)
        for path in confine.SCRATCH:
            os.chmod(root + path, 0o1777)
        os.chdir(root)
        if not confine.pivot_root(".", "."):
            return "pivot_root refused"
        confine.umount(".", _MNT_DETACH)  # the host's root, now stacked under ours
        os.chdir("/")
        confine.mount(None, "/", None, confine.MS_REMOUNT | confine.MS_NOSUID | confine.MS_RDONLY)
    except OSError as error:
        return f"cannot build the root: {error}"
    return ""
