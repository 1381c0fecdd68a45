"""Host state the runner keeps between runs: the host lock (one matrix per host, HostLock) and the knob
journal, in a folder only the runner's user (root, on a real host) can write.

The journal holds the original host settings a cell changed, so that the next run restores them after a
runner was killed. A root process that writes back whatever a file says must trust that file: the folder
is refused unless it is a real directory owned by this user with mode 0700 and no ancestor another user
could rename it through; files are created with O_EXCL|O_NOFOLLOW and read with O_NOFOLLOW, and a file
another user owns or could write is refused. What a journal may name is checked by hostknobs.py (an allow-list).

  default folder: $TUNELAB_STATE_DIR, else /var/lib/tunelab for root, else ~/.local/state/tunelab
"""

import fcntl
import json
import os
import stat

from results import safeio

STATE_DIR_ENV = "TUNELAB_STATE_DIR"
ROOT_STATE_DIR = "/var/lib/tunelab"
LOCK_NAME = "matrix.lock"
JOURNAL_NAME = "knobs.journal.json"
MAX_STATE_FILE_BYTES = 1 << 20


class StateError(RuntimeError):
    """Host state that is not the runner's own: refused, never used."""


def default_state_dir():
    if os.environ.get(STATE_DIR_ENV):
        return os.environ[STATE_DIR_ENV]
    if os.geteuid() == 0:
        return ROOT_STATE_DIR
    return os.path.join(os.path.expanduser("~"), ".local", "state", "tunelab")


def _check_ancestors(path):
    """Every folder above `path`, and every link on the way by its own owner, must be root's or this user's
    and writable by others only when sticky (as /tmp): otherwise another user could swap the state folder for
    one of theirs (results/safeio.check_folder, which also makes the missing ones)."""
    try:
        return safeio.check_folder(os.path.dirname(path), create=True)
    except safeio.WriteRefused as e:
        raise StateError(f"{e} (above the host state folder {path}); choose a folder under one that root owns") from None


def ensure_state_dir(path):
    """Creates the state folder (mode 0700) or checks the one there; returns its absolute path.
    Raises StateError, naming the fix, for a folder another user could write or has swapped."""
    path = os.path.join(_check_ancestors(os.path.abspath(path)), os.path.basename(path))
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise StateError(f"host state folder {path} is not a directory (a link or a file): refused; remove it "
                         "and run again (the runner creates it)")
    if st.st_uid != os.geteuid():
        raise StateError(f"host state folder {path} is owned by uid {st.st_uid}, not this runner's ({os.geteuid()}): "
                         f"refused; if it is yours: chown {os.geteuid()} {path}")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise StateError(f"host state folder {path} has mode {stat.S_IMODE(st.st_mode):04o}: other users could "
                         f"plant files the runner acts on; refused (fix: chmod 700 {path})")
    return path


def _check_own_file(path, st):
    if not stat.S_ISREG(st.st_mode):
        raise StateError(f"{path} is not a regular file: refused")
    if st.st_uid != os.geteuid():
        raise StateError(f"{path} is owned by uid {st.st_uid}, not this runner's ({os.geteuid()}): refused, not used")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise StateError(f"{path} has mode {stat.S_IMODE(st.st_mode):04o} (the runner writes 0600): refused, "
                         "not used")


def open_lock_file(path):
    """A file descriptor of the lock file (created 0600 if absent), never through a link."""
    fd = safeio.open_lock(path)
    try:
        _check_own_file(path, os.fstat(fd))
    except StateError:
        os.close(fd)
        raise
    return fd


def write_file(path, data):
    """Writes bytes to `path` through the one writer (a new temporary file, mode 0600, fsync, rename)."""
    try:
        safeio.write_bytes(path, data, mode=0o600)
    except safeio.WriteRefused as e:
        raise StateError(str(e)) from None


def read_file(path, max_bytes=MAX_STATE_FILE_BYTES):
    """The bytes of a state file this runner wrote, or None if there is none. Refuses a link, a file of
    another user, one others may write, or one over max_bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StateError(f"{path}: cannot be opened without following a link ({e}): refused") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        _check_own_file(path, st)
        if st.st_size > max_bytes:
            raise StateError(f"{path} is {st.st_size} bytes, over the {max_bytes}-byte limit: refused")
        return f.read(max_bytes + 1)[:max_bytes]


class HostLock:
    """One matrix per host: an flock on a lock file (released by the kernel if the holder dies), in the
    host state folder, so that no other user can take or block it."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def acquire(self, holder):
        ensure_state_dir(os.path.dirname(self.path))
        fd = open_lock_file(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with os.fdopen(fd, errors="replace") as f:
                info = f.read(2000).strip() or "unknown holder"
            raise LockHeld(info) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(holder).encode())
        os.fsync(fd)
        self.fd = fd

    def release(self):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class LockHeld(RuntimeError):
    pass
