"""A server program a test starts on loopback (Debian's Prometheus, InfluxDB): a free port, its log in the
test's folder, its own session, ready when a URL answers with the status it should, stopped at the end."""

import os
import shutil
import socket
import subprocess
import time
import urllib.request

from results import safeio


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_binary(name, package):
    """The program's path; AssertionError naming the Debian package ./bazelw installs when it is missing."""
    binary = shutil.which(name) or f"/usr/bin/{name}"
    if not os.path.exists(binary):
        raise AssertionError(f"no {name}: ./bazelw installs Debian's {package}")
    return binary


class LocalServer:
    """`argv` started with its output in root/<name>.log; waits up to 60 s for `ready_url` to answer
    `ready_status`, else stops it and raises AssertionError naming the log."""

    def __init__(self, name, argv, root, ready_url, ready_status):
        self.name = name
        self.log = safeio.open_log(os.path.join(root, f"{name}.log"))
        self.popen = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(ready_url, timeout=2) as r:
                    if r.status == ready_status:
                        return
            except OSError:
                pass
            if self.popen.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"{name} did not answer {ready_url} (see {self.log.name})")
            time.sleep(0.3)

    def stop(self):
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.log.close()
