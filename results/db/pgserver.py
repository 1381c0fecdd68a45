"""A real PostgreSQL server for one test (Debian's packages, installed by ./bazelw): initdb in a temporary folder,
a password (SCRAM) for its one user, listening on loopback at a free port, stopped and removed after. Not a fake:
the store's tests run the same cases over it as over SQLite.

The server refuses to run as root, and tests here run as root. Where the kernel lets us, it runs in a user
namespace of its own as an ordinary user (`unshare --user --map-user=1000`): no system account, no permission on
any folder but its own (this VM's / is 0700: no other user could even load libc). A chroot may not make one (the
clean room): there it runs as Debian's `postgres` account (the package makes it) in a folder under /tmp it owns."""

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import sqlalchemy as sa

from results import safeio

START_TIMEOUT_S = 60
USER = "tunelab"
USER_NAMESPACE = ["unshare", "--user", "--map-user=1000", "--map-group=1000", "--"]
SYSTEM_ACCOUNT = "postgres"


class ServerMissing(RuntimeError):
    pass


class PortTaken(RuntimeError):
    pass


def bin_dir():
    """The newest installed PostgreSQL's bin folder (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if not found:
        raise ServerMissing("no PostgreSQL server here (/usr/lib/postgresql/*/bin/postgres): ./bazelw installs "
                            "Debian's postgresql-15")
    return os.path.dirname(found[-1])


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`with Server(password) as server:` server.url(database) is a URL with the password; server.create(name)
    makes a database."""

    def __init__(self, password):
        self.password = password
        self.folder = None
        self.process = None
        self.port = None
        self._log = None

    @staticmethod
    def _as_server_user():
        """(the command prefix that runs a server program as a non-root user, the account that must own its folder
        or None, the folder's parent): nothing when not root; a user namespace where one can be made; else the
        postgres account."""
        if os.geteuid() != 0:
            return [], None, os.environ.get("TEST_TMPDIR")
        if subprocess.run(USER_NAMESPACE + ["true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return USER_NAMESPACE, None, os.environ.get("TEST_TMPDIR")
        try:
            pwd.getpwnam(SYSTEM_ACCOUNT)
        except KeyError:
            raise ServerMissing(f"no user namespace here and no {SYSTEM_ACCOUNT} account: PostgreSQL will not run as "
                                f"root (./bazelw installs Debian's postgresql-15, which makes the account)") from None
        # /tmp: every folder above a test's own temporary folder may be root's alone.
        return ["setpriv", f"--reuid={SYSTEM_ACCOUNT}", f"--regid={SYSTEM_ACCOUNT}", "--init-groups"], SYSTEM_ACCOUNT, "/tmp"

    def __enter__(self):
        binaries = bin_dir()
        prefix, owner, parent = self._as_server_user()
        self.folder = tempfile.mkdtemp(prefix="tunelab-pg-", dir=parent)
        try:
            data = os.path.join(self.folder, "data")
            password_file = os.path.join(self.folder, "password")
            safeio.write_text(password_file, self.password + "\n", mode=0o600)
            self._log = safeio.open_log(os.path.join(self.folder, "server.log"))  # before the folder is another's
            if owner:
                for path in (self.folder, password_file):
                    shutil.chown(path, owner, owner)
            done = subprocess.run(prefix + [os.path.join(binaries, "initdb"), "-D", data, "-U", USER,
                                            f"--pwfile={password_file}", "--auth=scram-sha-256", "--encoding=UTF8",
                                            "--locale=C", "--no-sync"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.folder)
            if done.returncode != 0:
                raise RuntimeError(f"initdb failed ({done.returncode}): {done.stdout[-2000:]}")
            os.unlink(password_file)
            for attempt in range(3):  # the free port taken by another between our look and the server's bind
                self.port = free_port()
                self.process = subprocess.Popen(
                    prefix + [os.path.join(binaries, "postgres"), "-D", data, "-p", str(self.port),
                              "-c", "listen_addresses=127.0.0.1",
                              # TCP on loopback only: no Unix socket (a test's long folder exceeds a socket path)
                              "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "max_connections=40"],
                    stdout=subprocess.DEVNULL, stderr=self._log, cwd=self.folder, start_new_session=True)
                try:
                    self._wait_ready()
                    break
                except PortTaken:
                    if attempt == 2:
                        raise
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        engine = sa.create_engine(self.url("postgres").replace("postgresql://", "postgresql+psycopg://"))
        try:
            while True:
                if self.process.poll() is not None:
                    with open(os.path.join(self.folder, "server.log")) as f:
                        log = f.read()
                    kind = PortTaken if "could not bind" in log else RuntimeError
                    raise kind(f"PostgreSQL exited ({self.process.returncode}): {log[-2000:]}")
                try:
                    with engine.connect():
                        return
                except sa.exc.OperationalError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        finally:
            engine.dispose()

    def url(self, database):
        return f"postgresql://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def create(self, name):
        """A new empty database `name` (a plain identifier: made here, never from input)."""
        assert name.isidentifier(), name
        engine = sa.create_engine(self.url("postgres").replace("postgresql://", "postgresql+psycopg://"),
                                  isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.exec_driver_sql(f"CREATE DATABASE {name}")
        finally:
            engine.dispose()
        return self.url(name)

    def __exit__(self, *exc):
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGINT)  # a fast shutdown: clients cut, nothing written
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self._log is not None:
            self._log.close()
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)
        return False
