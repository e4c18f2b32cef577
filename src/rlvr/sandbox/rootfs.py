"""The filesystem a sandboxed program sees: the standard library and system libraries, nothing else.

The worker builds it once, in its own mount namespace: a fresh tmpfs becomes the root
(``pivot_root``; the host's root is detached), holding read-only bind mounts of

* the base installation's standard library (``sysconfig``'s ``stdlib``/``platstdlib`` computed for
  ``sys.base_prefix``, ``lib-dynload`` inside, and the interpreter's own search path, which the worker,
  started with ``-I -S``, holds without any packages directory). In a venv (venv, virtualenv, uv) this
  is the installation the venv was made from, never the venv's own ``lib`` (site-packages only); a
  conda environment or a standalone build is its own base. Every ``site-packages``/``dist-packages``
  in them is covered by an empty directory;
* the dynamic loader's library directories (what ``_ssl``, ``_sqlite3``, ``ctypes`` ... link to),
  with any ``python*`` directory inside them covered likewise, and the shared objects the
  interpreter and the standard library's extension modules map from elsewhere (``libpython``, a
  conda environment's ``libssl``, a Nix store path), one file each;
* the interpreter binary (the real file, not a venv's link to it), and ``/dev/null``, ``zero``,
  ``full``, ``random``, ``urandom``;

plus empty ``/tmp``, ``/dev/shm`` and ``/proc`` for each run to mount its own. Not there: the
checkout, the task data, the user's home, installed packages, ``/etc``, ``/sys``.

Sources are opened (``O_PATH``) before the new root's tmpfs is mounted and bound through their
descriptors, so an installation inside the directory that tmpfs covers (``/tmp``, ...) is still
reachable. A source inside a scratch directory that every run replaces (an installation under
``/tmp``) is also bound at ``/.rlvr/N``; :data:`PINNED` lists those, and each run binds them back
into its fresh ``/tmp`` (``confine.private_filesystem``).

Stdlib only: loaded by the sandbox worker, outside the rlvr package.
"""

from __future__ import annotations

import glob
import os
import stat
import sys
import sysconfig

import confine

DEVICES = ("null", "zero", "full", "random", "urandom")
MOUNT_POINTS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/proc")
_LOADER_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib/{arch}", "/usr/lib/{arch}",
                "/usr/local/lib/{arch}")
#: Where the new root's tmpfs may be mounted (in the worker's own mount namespace): the first that holds no
#: source is taken; with none free, the first that exists (the sources are bound through descriptors).
_ROOT_MOUNTS = ("/mnt", "/tmp", "/var/tmp", "/run", "/media", "/srv", "/opt")
#: Standard-library extension modules that link libraries of their own: imported in a throwaway child so
#: that the libraries they load are found wherever the installation keeps them.
_LINKING_MODULES = ("_ssl", "_hashlib", "_sqlite3", "_ctypes", "_lzma", "_bz2", "zlib", "_decimal", "pyexpat",
                    "_elementtree", "_uuid", "_dbm", "_gdbm", "_crypt", "_curses", "_curses_panel", "readline",
                    "_posixshmem", "_multiprocessing", "_zoneinfo", "_json", "_pickle", "_socket", "select", "mmap")
_PACKAGE_DIRS = ("site-packages", "dist-packages")
_STAGE = "/.rlvr"
_RO = confine.MS_RDONLY | confine.MS_NOSUID | confine.MS_NODEV
_MNT_DETACH = 2

#: (staged copy, path) of each top-level entry of a scratch directory that holds sources: a run binds
#: the staged copy back at ``path`` after its fresh tmpfs covers the scratch directory. Set by :func:`enter`.
PINNED: list[tuple[str, str]] = []


def base_paths() -> dict[str, str]:
    """``sysconfig`` paths of the base installation: what a venv was made from, else this one."""
    values = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix, "installed_base": sys.base_prefix,
              "installed_platbase": sys.base_exec_prefix}
    return sysconfig.get_paths(vars=values)


def stdlib_dirs() -> list[str]:
    """The base installation's standard library directories (with ``lib-dynload``), resolved, outermost only."""
    paths = base_paths()
    candidates = [paths["stdlib"], paths["platstdlib"], getattr(sys, "_stdlib_dir", None) or ""]
    if sys.flags.no_site:  # -S (the worker): the search path is the interpreter's own, nothing installed
        bases = [os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)]
        candidates += [entry for entry in sys.path if entry and os.path.isabs(entry) and not _is_packages(entry)
                       and _inside(os.path.realpath(entry), bases)]
    candidates += [os.path.join(path, "lib-dynload") for path in list(candidates) if path]
    found = {os.path.realpath(p) for p in candidates if p and os.path.isdir(p)}
    return _outermost(sorted(p for p in found if not _is_packages(p)))


def stdlib_aliases(stdlib: list[str]) -> list[str]:
    """Search-path entries that reach the standard library through a symbolic link (bound under that name too)."""
    aliases = []
    for entry in sys.path:
        if entry and os.path.isabs(entry) and os.path.isdir(entry) and not _is_packages(entry):
            real = os.path.realpath(entry)
            if real != os.path.normpath(entry) and _inside(real, stdlib):
                aliases.append(os.path.normpath(entry))
    return aliases


def _is_packages(path: str) -> bool:
    return any(part in _PACKAGE_DIRS for part in os.path.normpath(path).split(os.sep))


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
    """Shared objects this process and the standard library's linking extension modules map, outside ``under``."""
    found = set(_shared_objects(_read_maps()) + _shared_objects(_maps_after_imports()))
    return sorted(p for p in found if os.path.isfile(p) and not _inside(p, under))


def _read_maps() -> str:
    try:
        with open("/proc/self/maps") as handle:
            return handle.read()
    except OSError:
        return ""


def _shared_objects(maps: str) -> list[str]:
    found = []
    for line in maps.splitlines():
        fields = line.split()
        if len(fields) >= 6 and ".so" in fields[5] and fields[5].startswith("/"):
            found.append(os.path.realpath(fields[5]))
    return found


def _maps_after_imports() -> str:
    """/proc/self/maps of a child that imported :data:`_LINKING_MODULES` (this process imports none of them)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # stdout is the worker's answer pipe: nothing an import prints may reach it
                os.dup2(devnull, fd)
            for name in _LINKING_MODULES:
                try:
                    __import__(name)
                except Exception:  # noqa: BLE001 - absent or broken modules are simply not needed
                    pass
            data = _read_maps().encode()
            while data:
                data = data[os.write(write_end, data):]
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while True:
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode(errors="replace")


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


class _Source:
    """A path to bind, held open (``O_PATH``) so a tmpfs mounted over one of its parents cannot hide it."""

    def __init__(self, path: str, target: str | None = None):
        self.path, self.target = path, target or path
        self.fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        self.is_dir = stat.S_ISDIR(os.fstat(self.fd).st_mode)

    def reference(self) -> str:
        """What mount(2) is given: the descriptor's /proc link (reaches the file even when covered), else the path."""
        link = f"/proc/self/fd/{self.fd}"
        return link if os.path.exists(link) else self.path

    def close(self) -> None:
        os.close(self.fd)


def _bind(source: _Source, root: str, writable_exec: bool = False) -> None:
    target = root + source.target
    _make(target, source.is_dir)
    if not confine.mount(source.reference(), target, None, confine.MS_BIND | confine.MS_REC):
        raise OSError(f"bind mount of {source.path} failed")
    _read_only(target, source.path, writable_exec)


def _make(target: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "a").close()


def _read_only(target: str, name: str, writable_exec: bool = False) -> None:
    flags = confine.MS_REMOUNT | confine.MS_BIND | confine.MS_NOSUID | (0 if writable_exec else confine.MS_RDONLY)
    if not confine.mount(None, target, None, flags | (0 if name.startswith("/dev/") else confine.MS_NODEV)):
        raise OSError(f"read-only remount of {name} failed")


def _cover(path: str, root: str) -> None:
    target = root + path
    if os.path.isdir(target):
        confine.mount("tmpfs", target, "tmpfs", _RO | confine.MS_NOEXEC, "size=4k,mode=555")


def _root_mount(sources: list[str]) -> str | None:
    """A directory for the new root's tmpfs: preferably one that holds no source."""
    usable = [d for d in _ROOT_MOUNTS if os.path.isdir(d) and not os.path.islink(d)]
    free = [d for d in usable if not any(_inside(s, [d]) for s in sources)]
    return (free or usable or [None])[0]


def _pinned(targets: list[str]) -> list[str]:
    """Top-level entries of the scratch directories (which every run covers) that hold a target."""
    tops = set()
    for target in targets:
        for scratch in confine.SCRATCH:
            if target != scratch and _inside(target, [scratch]):
                tops.add(scratch + "/" + target[len(scratch) + 1:].split("/")[0])
    return sorted(tops)


def enter(refuse: str = "") -> str:
    """Build the root and move this process into it (a new mount namespace). '' on success, else why not.

    ``refuse``: return this reason without trying (tests simulate a kernel or layout that refuses the root).
    """
    global PINNED
    if refuse:
        return refuse
    try:
        stdlib = stdlib_dirs()
        if not stdlib:
            return "no standard library directory found for this interpreter"
        libraries = [d for d in library_dirs() if not _inside(d, stdlib)]
        files = [p for p in mapped_libraries(stdlib + libraries) + [os.path.realpath(sys.executable)]
                 if os.path.exists(p)]
        aliases = [a for a in stdlib_aliases(stdlib) if not _inside(a, stdlib + libraries)]
        covered = _packages_in(stdlib, libraries)
    except OSError as error:
        return f"cannot find the interpreter's files: {error}"
    if not confine.unshare(confine.CLONE_NEWNS):
        return "no mount namespace"
    if not confine.mount(None, "/", None, confine.MS_REC | confine.MS_PRIVATE):
        return "cannot make the mounts private"
    sources: list[_Source] = []
    try:
        try:  # opened before the tmpfs below covers any of them
            for path in libraries + stdlib + sorted(set(files)):
                sources.append(_Source(path))
            for alias in aliases:
                sources.append(_Source(os.path.realpath(alias), alias))
            devices = [_Source(f"/dev/{name}") for name in DEVICES if os.path.exists(f"/dev/{name}")]
            sources += devices
        except OSError as error:
            return f"cannot open {error.filename}: {error.strerror}"
        files_and_dirs = [s for s in sources if s not in devices]
        root = _root_mount([s.path for s in files_and_dirs])
        if root is None or not confine.mount("tmpfs", root, "tmpfs", confine.MS_NOSUID, "size=1m,mode=755"):
            return "cannot mount a tmpfs for the new root"
        try:
            for source in files_and_dirs:
                _bind(source, root)
            for device in devices:
                _bind(device, root, writable_exec=True)
            for path in covered:
                _cover(path, root)
            for path in MOUNT_POINTS:
                os.makedirs(root + path, exist_ok=True)
            for path in confine.SCRATCH:
                os.chmod(root + path, 0o1777)
            pinned = []
            for number, path in enumerate(_pinned([s.target for s in files_and_dirs])):
                stage = f"{_STAGE}/{number}"
                _make(root + stage, os.path.isdir(root + path))
                if not confine.mount(root + path, root + stage, None, confine.MS_BIND | confine.MS_REC):
                    raise OSError(f"bind mount of {path} failed")
                pinned.append((stage, path))
            os.chdir(root)
            if not confine.pivot_root(".", "."):
                os.chdir("/")
                confine.umount(root, _MNT_DETACH)
                return "pivot_root refused"
            confine.umount(".", _MNT_DETACH)  # the host's root, now stacked under ours
            os.chdir("/")
            confine.mount(None, "/", None, confine.MS_REMOUNT | confine.MS_NOSUID | confine.MS_RDONLY)
        except OSError as error:
            confine.umount(root, _MNT_DETACH)  # this process keeps the host's view, as before the attempt
            return f"cannot build the root: {error}"
    finally:
        for source in sources:
            source.close()
    PINNED = pinned
    return ""
