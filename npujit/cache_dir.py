"""The kernel cache's directory: whether this process may use it, and how files in it are
written, read and locked.

The cache holds code this process executes (generated modules, numba's machine code,
pickled compiled kernels), so whoever can write the directory can run code as the user.
``current()`` therefore hands out the directory only when it is

* **writable** -- else (a read-only filesystem, permission denied, a path that is a file)
  one ``CacheWarning`` and ``None``: kernels compile in memory and nothing is written
  anywhere else;
* **trusted** -- owned by this user and not writable by the group or by everyone (a
  sticky directory such as ``/tmp`` is fine: others cannot replace its files).  Else one
  ``CacheWarning`` naming the directory and the fix, and ``None``.  A team's shared cache
  is opted into with ``NPUJIT_CACHE_SHARED=1``: then a directory owned by another user or
  writable by the group is accepted (never one every user can write without the sticky
  bit), and so are files the team's other users wrote.

Every file is written whole or not at all (a temp file beside it, then ``os.replace``),
with the mode the umask gives (group-readable under the usual 022; never group- or
world-writable unless the cache is shared).  ``pack``/``unpack`` put a checksum in front
of a payload, so a truncated or corrupt file is told from a good one.  ``locked(name)``
is an inter-process lock (``filelock``) on one of a fixed set of lock files.

Example::

    >>> d = current()                       # doctest: +SKIP
    >>> d.write(d.path("kernels", "k.bin"), pack(b"payload"))   # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import threading
import warnings

from npujit import knobs

MAGIC = b"NPUJIT\x01\n"
HEADER_BYTES = len(MAGIC) + 32           # magic, then the payload's sha256
SUBDIRS = ("kernels", "numba", os.path.join("numba", "__pycache__"), "locks", "ascendc-twin")
# Lock names hash onto this many lock files.  A numba compile holds its module's lock for
# the whole compile (seconds), and any store or compile whose name falls on the same file
# waits for it: with 64 files, tests of the suite stalled 8-21 s behind unrelated compiles
# in the other pytest worker.  Lock files are empty and made on first use.
LOCK_STRIPES = 1024
# A process holding a lock this long is stuck (or compiling something enormous): go on
# without the lock -- writes are atomic, so the worst case is compiling twice.
LOCK_TIMEOUT_S = 300.0


class CacheWarning(UserWarning):
    """The kernel cache cannot be used as configured (once per directory and reason)."""


class CorruptEntry(Exception):
    """A cache file that is truncated, damaged or not trusted; the message says which."""


_warned: set = set()
_states: dict = {}
_lock = threading.Lock()
_warn_lock = threading.Lock()
_umask: int | None = None

# How the trust checks stat a path or an open file (tests simulate another owner here).
stat_path = os.stat
stat_fd = os.fstat


def warn_once(kind: str, where: str, message: str) -> None:
    """``warnings.warn(message, CacheWarning)`` the first time ``(kind, where)`` is met."""
    with _warn_lock:
        if (kind, where) in _warned:
            return
        _warned.add((kind, where))
    warnings.warn(message, CacheWarning, stacklevel=3)


def process_umask() -> int:
    """This process's umask (read once)."""
    global _umask
    if _umask is None:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("Umask:"):
                        _umask = int(line.split()[1], 8)
        except OSError:
            pass
        if _umask is None:       # not Linux: the classic dance (set and restore)
            _umask = os.umask(0o022)
            os.umask(_umask)
    return _umask


def file_mode(shared: bool) -> int:
    """Mode of a new cache file: what the umask allows, minus group/world write unless
    the cache is shared."""
    return 0o666 & ~process_umask() & (0o777 if shared else ~0o022)


def dir_mode(shared: bool) -> int:
    """Mode of a new cache directory (shared: setgid, so files keep the team's group)."""
    return (0o2777 if shared else 0o755) & ~process_umask() | 0o700


def untrusted(st: os.stat_result, shared: bool) -> str | None:
    """Why a file or directory with this ``stat`` must not be trusted (None: it may).

    Example::

        >>> untrusted(os.stat("/tmp"), shared=False) is None or True
        True
    """
    mode = st.st_mode
    sticky = stat.S_ISDIR(mode) and mode & stat.S_ISVTX
    if mode & stat.S_IWOTH and not sticky:
        return "is writable by every user"
    if shared:
        return None
    if st.st_uid != os.geteuid():
        return f"is owned by another user (uid {st.st_uid}, this process runs as " \
               f"uid {os.geteuid()})"
    if mode & stat.S_IWGRP and not sticky:
        return "is writable by its group"
    return None


def _fix(reason: str, path: str) -> str:
    if "owned by another user" in reason:
        return ("point NPUJIT_CACHE_DIR at a directory of your own, or set "
                "NPUJIT_CACHE_SHARED=1 if it is your team's shared cache")
    if "group" in reason:
        return (f"run 'chmod g-w {path}', or set NPUJIT_CACHE_SHARED=1 if it is your "
                "team's shared cache")
    return f"run 'chmod o-w {path}' (or 'chmod +t {path}')"


class CacheDir:
    """A cache directory this process may read and write (see the module docstring)."""

    def __init__(self, root: str, shared: bool):
        self.root = root
        self.shared = shared

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def file_trouble(self, st: os.stat_result) -> str | None:
        """Why a file with this ``stat`` must not be loaded (None: it may)."""
        if not stat.S_ISREG(st.st_mode):
            return "is not a regular file"
        return untrusted(st, self.shared)

    def write(self, path: str, data: bytes) -> None:
        """Make ``path`` hold ``data``, atomically (temp file + ``os.replace``)."""
        import tempfile
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), file_mode(self.shared))
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def read(self, path: str) -> bytes | None:
        """The payload of a ``pack``ed file; None if absent.  ``CorruptEntry`` if it is
        truncated, damaged, a symlink, or not trusted (another owner, writable by others)."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as e:
            raise CorruptEntry(f"cannot be opened ({e.strerror})") from None
        with os.fdopen(fd, "rb") as f:
            trouble = self.file_trouble(stat_fd(f.fileno()))
            if trouble:
                raise CorruptEntry(trouble)
            data = f.read()
        return unpack(data)

    def fix_mode(self, path: str) -> None:
        """Give a file another tool wrote (numba) the cache's file mode."""
        with contextlib.suppress(OSError):
            os.chmod(path, file_mode(self.shared))

    @contextlib.contextmanager
    def locked(self, name: str):
        """Hold the inter-process lock of ``name`` (one of ``LOCK_STRIPES`` lock files)
        for the block; after ``LOCK_TIMEOUT_S`` the block runs without it."""
        import filelock
        n = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % LOCK_STRIPES
        lock = filelock.FileLock(self.path("locks", f"{n:03x}.lock"),
                                 mode=file_mode(self.shared) | 0o600)
        try:
            lock.acquire(timeout=LOCK_TIMEOUT_S)
            held = True
        except (filelock.Timeout, OSError):
            held = False
        try:
            yield
        finally:
            if held:
                lock.release()

    def __repr__(self) -> str:
        return f"<CacheDir {self.root}{' (shared)' if self.shared else ''}>"


def sources_hash(folder: str, salt: str = "") -> str:
    """16 hex digits of sha256 over ``salt`` and the ``.py`` files of ``folder`` (names and
    contents): a backend's version, part of what its cached code is keyed by, so editing
    one of its files never serves code built by the old one."""
    h = hashlib.sha256(salt.encode())
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def pack(payload: bytes) -> bytes:
    """``payload`` behind the magic bytes and its sha256."""
    return MAGIC + hashlib.sha256(payload).digest() + payload


def unpack(data: bytes) -> bytes:
    """The payload of ``pack(payload)``; ``CorruptEntry`` if ``data`` is not one."""
    if len(data) < HEADER_BYTES or not data.startswith(MAGIC):
        raise CorruptEntry("is truncated" if MAGIC.startswith(data[:len(MAGIC)])
                           else "is not an npujit cache file")
    payload = data[HEADER_BYTES:]
    if hashlib.sha256(payload).digest() != data[len(MAGIC):HEADER_BYTES]:
        raise CorruptEntry("fails its checksum (truncated or damaged)")
    return payload


def current() -> CacheDir | None:
    """The cache directory to use now, or None: caching disabled, or the directory cannot
    be written or trusted (warned once).  Decided once per directory and process."""
    if knobs.cache_disabled():
        return None
    root = os.path.abspath(knobs.cache_dir())
    key = (root, knobs.cache_shared())
    try:
        return _states[key]
    except KeyError:
        pass
    with _lock:
        if key not in _states:
            _states[key] = _open(root, key[1])
    return _states[key]


def forget() -> None:
    """Decide the directory again at the next ``current()`` (after fixing it, in tests)."""
    with _lock, _warn_lock:
        _states.clear()
        _warned.clear()


def probe_write(folder: str) -> None:
    """Create and remove a file in ``folder`` (``OSError`` if it cannot be written: a
    read-only filesystem, permissions; tests running as root simulate those here)."""
    import tempfile
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe-")
    os.close(fd)
    os.unlink(probe)


def _open(root: str, shared: bool) -> CacheDir | None:
    try:
        for sub in ("",) + SUBDIRS:
            if sub == SUBDIRS[0]:
                probe_write(root)           # before creating anything inside
            d = os.path.join(root, sub) if sub else root
            os.makedirs(d, mode=dir_mode(shared), exist_ok=True)
            st = stat_path(d)
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", d)
            reason = untrusted(st, shared)
            if reason:
                warn_once("untrusted", d,
                          f"npujit: not using the kernel cache directory {d}: it {reason}, "
                          "so another user could put code there that this process would "
                          f"run. Fix: {_fix(reason, d)}. Kernels compile in memory until then.")
                return None
    except OSError as e:
        what = e.strerror or str(e)
        if isinstance(e, (FileExistsError, NotADirectoryError)):
            what = f"a file is in the way of {e.filename or root}"
        warn_once("unwritable", root,
                  f"npujit: cannot write the kernel cache directory {root} ({what}); kernels "
                  "compile in memory and nothing is written to disk. Fix: point "
                  "NPUJIT_CACHE_DIR at a writable directory (or set NPUJIT_DISABLE_CACHE=1).")
        return None
    return CacheDir(root, shared)
