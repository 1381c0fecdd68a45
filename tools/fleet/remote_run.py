"""Runs one matrix on a fleet host, detached from the SSH session that started it, and leaves marker files
for whoever watches: <state>/<run>.pid while it runs, <state>/<run>.done (JSON) once it has ended.

Shipped inside every matrix bundle and run there by //tools:fleet's playbooks with the host's Python
(3.8 or newer; standard library only). Subcommands print one JSON object:
  start  --state DIR --run-id ID [--cwd DIR] [--env K=V ...] [IMAGE OPTIONS] -- ARGV...
         start ARGV detached, return at once
  exec   [--cwd DIR] [--env K=V ...] [IMAGE OPTIONS] -- ARGV...   run ARGV, wait, pass its output through
  image  --cwd DIR     load the bundle's image archive (DIR/tools/container/rig_os.tar) into podman unless
         it has the archive's tag already (DIR/tools/container/rig_os.tag)
  status --state DIR --run-id ID        running | finished | dead (started, no marker, not alive) | absent
  wait   --state DIR --run-id ID [--interval-s 10] [--timeout-s N]
         until the run has finished or died: one sleeping process checking the marker, nothing chattier
  pack   --results DIR --run-id ID --out FILE    the run folder <results>/<host>/<run> as one .tar.gz
IMAGE OPTIONS (hosts with tunelab_runner=image): --image-tag-file FILE [--mount PATH ...] run ARGV in a
container of the rigs' image instead of on the host: privileged, in the host's PID, IPC, network and UTS
namespaces (the matrix sets host knobs, reads every process' /proc and pins threads, as on the host), with
the given host folders mounted at their own paths (the bundle, runs, the lock's folder) and the host's
identity files read-only. The podman options come from the bundle's rigs/matrix/knobs/container.py (3.8-clean,
standard library only), so they are the ones the cells' containers use.
"""

import argparse
import glob
import json
import os
import signal
import stat
import subprocess
import sys
import tarfile
import time


def paths(state, run_id):
    base = os.path.join(state, run_id)
    return base + ".pid", base + ".done", base + ".log"


# Every file this writes into the work root is created new (O_EXCL) and never through a link (O_NOFOLLOW):
# the root is root's own (tools/fleet/work_root.py checks it first), and these keep a planted link harmless.
NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def open_new(path, mode=0o600):
    """A new file at `path` for writing; whatever was there (a leftover, a link) is removed first, unfollowed."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return os.open(path, NEW_FILE, mode)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with os.fdopen(open_new(tmp), "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def open_log(path):
    """The run's log, appended to across resumes: never through a link, only a regular file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as e:
        raise OSError(f"the run's log {path} cannot be opened as a file of its own ({e.strerror}): refused") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"the run's log {path} is not a regular file: refused")
    return fd


def process_start_ticks(pid):
    """The process' start time in clock ticks since boot (/proc/<pid>/stat field 22), or None if gone:
    a pid alone may have been reused by the time anyone asks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def status(state, run_id):
    pid_path, done_path, log_path = paths(state, run_id)
    if os.path.exists(done_path):
        with open(done_path) as f:
            doc = json.load(f)
        doc["state"] = "finished"
        return doc
    if not os.path.exists(pid_path):
        return {"state": "absent"}
    with open(pid_path) as f:
        started = json.load(f)
    alive = process_start_ticks(started["pid"]) == started["start_ticks"]
    return {"state": "running" if alive else "dead", "pid": started["pid"], "log": log_path}


def runner_container_name(run_id):
    return f"tl-runner-{run_id}"


def container_module(cwd):
    """rigs/matrix/knobs/container.py of the bundle (cwd is its workspace root in the runfiles)."""
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    from rigs.matrix.knobs import container
    return container


# The doctor names the host by these (and by its hostname: the UTS namespace is the host's), so a run in
# the image is filed under the host it ran on, not under the image.
HOST_IDENTITY_FILES = ("/etc/machine-id", "/etc/os-release")


def in_image_argv(container, tag, name, argv, cwd, env, mounts):
    """The podman command that runs argv in the rigs' image as the matrix would run on the host."""
    reason = container.unavailable_reason()
    if reason:
        raise RuntimeError(f"tunelab_runner=image: {reason}")
    cmd = [container.podman(), *container.PODMAN_OPTIONS, "run", "--rm", "--name", name, "--privileged",
           "--pid=host", "--ipc=host", "--network=host", "--uts=host", "--init=false", *container.rlimit_options()]
    for path in sorted(set(mounts)):
        cmd += ["-v", f"{path}:{path}"]
    for path in HOST_IDENTITY_FILES:
        if os.path.exists(path):
            cmd += ["-v", f"{path}:{path}:ro"]
    cmd += ["-w", cwd]
    for key, value in sorted(env.items()):
        cmd += ["--env", f"{key}={value}"]
    return cmd + ["--env", f"TUNELAB_RUNNER_IMAGE={tag}", tag, *argv]


def read_tag(path):
    with open(path) as f:
        return f.read().strip()


def command(args, name):
    """(argv, env) for start and exec: the command after --, wrapped into the image when asked."""
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        raise ValueError("nothing to run: give the command after --")
    if not args.image_tag_file:
        return argv, dict(os.environ, **env)
    container = container_module(args.cwd)
    container.remove(name)  # left by a killed supervisor: SIGKILL reaches `podman run`, not the container
    return in_image_argv(container, read_tag(args.image_tag_file), name, argv, args.cwd, env, args.mount), dict(os.environ)


IMAGE_ARCHIVE, IMAGE_TAG_FILE = "tools/container/rig_os.tar", "tools/container/rig_os.tag"


def image(args):
    container = container_module(args.cwd)
    reason = container.unavailable_reason()
    if reason:
        return {"error": f"tunelab_runner=image: {reason}"}
    tag = read_tag(os.path.join(args.cwd, IMAGE_TAG_FILE))
    had = container.has_image(tag)
    try:
        image_id = container.ensure_image(os.path.join(args.cwd, IMAGE_ARCHIVE), tag)
    except container.ContainerError as e:
        return {"error": str(e)}
    return {"tag": tag, "id": image_id, "loaded": not had}


def run_exec(args):
    try:
        argv, env = command(args, f"tl-exec-{os.getpid()}")
    except (ValueError, RuntimeError) as e:
        return {"error": str(e)}
    done = subprocess.run(argv, cwd=args.cwd, env=env, stdin=subprocess.DEVNULL)
    return {"exit_status": done.returncode} if done.returncode == 0 else {
        "error": f"exited {done.returncode}", "exit_status": done.returncode}


def supervise(argv, cwd, env, pid_path, done_path, log_path):
    """The detached supervisor: runs argv, records how it ended. SIGTERM is passed on to the matrix (it
    stores what it has, restores the host and exits 130)."""
    with os.fdopen(open_log(log_path), "ab") as log:
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signal.SIGTERM))
    code = child.wait()
    doc = {"exit_status": code if code >= 0 else None, "signal": -code if code < 0 else None,
           "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_atomic(done_path, json.dumps(doc) + "\n")


def start(args):
    os.makedirs(args.state, exist_ok=True)
    pid_path, done_path, log_path = paths(args.state, args.run_id)
    now = status(args.state, args.run_id)
    if now["state"] == "running":
        return {"error": f"run {args.run_id} is still running here (pid {now['pid']})"}
    for stale in (done_path, pid_path):
        if os.path.exists(stale):
            os.remove(stale)
    try:
        argv, env = command(args, runner_container_name(args.run_id))
        os.close(open_log(log_path))
    except (ValueError, RuntimeError, OSError) as e:
        return {"error": str(e)}
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:
        # Double fork: the supervisor is adopted by init and outlives the SSH session that started it.
        os.close(read_end)
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        pid = os.getpid()
        write_atomic(pid_path, json.dumps({"pid": pid, "start_ticks": process_start_ticks(pid), "argv": argv}) + "\n")
        os.write(write_end, b"x")
        os.close(write_end)
        try:
            supervise(argv, args.cwd, env, pid_path, done_path, log_path)
        except BaseException as e:  # the marker must exist whatever happened, or the watcher waits for ever
            write_atomic(done_path, json.dumps({"exit_status": None, "signal": None, "error": repr(e)}) + "\n")
        os._exit(0)
    os.close(write_end)
    os.read(read_end, 1)  # returns once the pid file is written
    os.close(read_end)
    os.waitpid(first, 0)
    return {"started": True, "log": log_path, **status(args.state, args.run_id)}


def wait(args):
    deadline = time.monotonic() + args.timeout_s if args.timeout_s else None
    while True:
        now = status(args.state, args.run_id)
        if now["state"] in ("finished", "dead", "absent"):
            return now
        if deadline is not None and time.monotonic() > deadline:
            now["timed_out"] = True
            return now
        time.sleep(args.interval_s)


def pack(args):
    runs = glob.glob(os.path.join(glob.escape(args.results), "*", glob.escape(args.run_id), "manifest.json"))
    if len(runs) != 1:
        return {"error": f"expected one folder {args.results}/<host>/{args.run_id} with a manifest, found {len(runs)}"}
    run_dir = os.path.dirname(runs[0])
    arcname = os.path.join(os.path.basename(os.path.dirname(run_dir)), args.run_id)
    with os.fdopen(open_new(args.out + ".tmp"), "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
        tar.add(run_dir, arcname=arcname, filter=lambda ti: ti if (ti.isfile() or ti.isdir()) else None)
    os.replace(args.out + ".tmp", args.out)
    return {"archive": args.out, "bytes": os.path.getsize(args.out)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "status", "wait", "exec"):
        p = sub.add_parser(name)
        if name != "exec":
            p.add_argument("--state", required=True)
            p.add_argument("--run-id", required=True)
        if name in ("start", "exec"):
            p.add_argument("--cwd")
            p.add_argument("--env", action="append", default=[])
            p.add_argument("--image-tag-file", help="run in the rigs' image (the file holds its tag)")
            p.add_argument("--mount", action="append", default=[], help="with --image-tag-file: a host folder")
            p.add_argument("argv", nargs=argparse.REMAINDER)
        if name == "wait":
            p.add_argument("--interval-s", type=float, default=10.0)
            p.add_argument("--timeout-s", type=float, default=0.0)
    p = sub.add_parser("image")
    p.add_argument("--cwd", required=True, help="the bundle's workspace root in its runfiles")
    p = sub.add_parser("pack")
    p.add_argument("--results", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if getattr(args, "image_tag_file", None) and not args.cwd:
        parser.error("--image-tag-file needs --cwd (the bundle's workspace root in its runfiles)")
    doc = {"start": start, "status": lambda a: status(a.state, a.run_id), "wait": wait, "pack": pack,
           "exec": run_exec, "image": image}[args.command](args)
    print(json.dumps(doc))
    return 1 if "error" in doc else 0


if __name__ == "__main__":
    sys.exit(main())
