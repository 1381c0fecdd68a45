"""tunelab fleet: run one matrix on several hosts over SSH through Ansible, and bring every run home.

  bazel run //tools:fleet -- --inventory hosts.ini //rigs:calibration_matrix [--profile P] [--set AXIS=V ...]
  bazel run //tools:fleet -- --inventory hosts.ini --resume FLEET_ID

The inventory is an ordinary Ansible inventory; every host in it (or in --limit) is a fleet host. Per host:
check it (its Python; the matrix planned there with the doctor's report, so cells the host cannot express
stay skips with their reasons), ship the bundle built for its machine once (//<target>_bundle or
_bundle_aarch64: machines.py; kept there by its sha256),
start the matrix detached with the host's lock, wait on its marker file, pack the run and bring it home into
results/<inventory host>/<run>/ after checking it (tools/fleet/README.md), then index it in the results database
(results/db; --db or TUNELAB_DB, a team's PostgreSQL) as it arrives. A host that drops out is
reported with its reason; `--resume FLEET_ID` continues it (the matrix resumes its stored run there) and
leaves hosts whose runs are home alone. Host variables: tunelab_root (default /var/tmp/tunelab: bundles,
runs and markers; root's own, mode 0700, checked by work_root.py before anything is written there),
tunelab_state_dir (default: the runner's, /var/lib/tunelab: the host lock, one matrix per host, and the
knob journal; only root may write it). Exit: 0 every host's run is home and complete; 1
some host failed or dropped out (resume it); 2 bad input. What a host sends is read by hostinput.py, Ansible
is driven by playbook.py.

It is the controller's one flow (the fleet's state, the bundle, checking, starting and watching hosts, bringing
runs home, the summary), each step a method of Fleet over the same state; what can be read or run apart from
that flow lives in hostplan.py (a host's plan), hostinput.py, playbook.py and remote_run.py.
"""

import argparse
import dataclasses
import datetime
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from results import runarchive, store
from results.db import store as db_store
from rigs.host import terminal
from rigs.matrix.planning import cli
from tools.fleet import fleetmetrics, machines, make_bundle
from tools.fleet.hostinput import FleetError, describe_failure, host_json, read_plan
from tools.fleet.hostplan import host_plan, start_argv
from tools.fleet.playbook import Playbook, ansible_env, load_inventory, write_cli_launchers
from analysis import indexer
from results import safeio

EXIT_OK, EXIT_HOSTS_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
FLEET_ID_RE = re.compile(r"^fleet-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}$")
# Hosts in these states need nothing more; the others are (re)started or watched by --resume.
FINAL = ("home",)


@dataclasses.dataclass
class HostState:
    run_id: str = ""
    status: str = "new"  # new, planned, skipped, running, interrupted, dropped, failed, home
    error: str = ""
    run_dir: str = ""
    host_id: str = ""
    machine: str = ""  # its `uname -m`, which chooses its bundle

    def to_json(self):
        return dataclasses.asdict(self)


_TEXT = {"type": "string", "maxLength": 20000}
# The controller's own state file (results/.fleet/<id>/fleet.json), read back for --resume: a file in a results
# folder, so untrusted like any other (issue 58): every field used is typed, a host entry holds HostState's.
FLEET_STATE_SCHEMA = {
    "type": "object",
    "required": ["target", "profile", "overrides", "hosts"],
    "properties": {
        "target": {"type": ["string", "null"], "maxLength": 2000},
        "profile": {"type": ["string", "null"], "maxLength": 200},
        "overrides": {"type": ["array", "null"], "maxItems": 1000, "items": _TEXT},
        "bundles": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 200}},
        "bundle_sha256": {"type": "string", "maxLength": 200},
        "metrics": {"type": ["object", "null"], "additionalProperties": False, "properties": {
            "port": {"type": "integer", "minimum": 0, "maximum": 65535}, "address": {"type": "string", "maxLength": 200}}},
        "hosts": {"type": "object", "maxProperties": 10000, "additionalProperties": {
            "type": "object", "additionalProperties": False,
            "properties": {name: _TEXT for name in ("run_id", "status", "error", "run_dir", "host_id", "machine")}}},
    },
}


def read_state(path):
    """A fleet run's state file, as the bounded reader and FLEET_STATE_SCHEMA take it; FleetError otherwise."""
    try:
        return safeio.read_json(path, 16 << 20, FLEET_STATE_SCHEMA)
    except (OSError, safeio.InputError) as e:
        raise FleetError(f"{path}: {str(e).removeprefix(f'{path}: ')}") from None


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def shown_path(path, workspace):
    """The path relative to the workspace when it lies inside it, else whole (no ../../ chains)."""
    rel = os.path.relpath(path, workspace)
    return path if rel == ".." or rel.startswith(".." + os.sep) else rel


def new_fleet_id():
    return "fleet-" + cli.new_run_id()


def read_args_file(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


class Fleet:
    def __init__(self, args, console, workspace):
        self.args, self.console, self.workspace = args, console, workspace
        self.results_root = args.results_dir or os.path.join(workspace, "results")

    # -- the fleet run's state, one JSON file, rewritten atomically after every change --
    def state_path(self, fleet_id):
        return os.path.join(self.results_root, ".fleet", fleet_id, "fleet.json")

    def save(self):
        doc = dict(self.meta, hosts={h: s.to_json() for h, s in self.hosts.items()}, updated_at=now_iso())
        store.write_fleet_state(self.results_root, self.fleet_id, doc)

    def load_or_create(self, inventory_hosts):
        a = self.args
        if a.resume:
            if not FLEET_ID_RE.fullmatch(a.resume):
                raise FleetError(f"--resume {a.resume!r}: expected a fleet id such as fleet-20261124T101500Z-1a2b")
            path = self.state_path(a.resume)
            try:
                doc = read_state(path)
            except FleetError as e:
                raise FleetError(f"cannot resume {a.resume}: {e}") from None
            for key, given in (("target", a.target), ("profile", a.profile), ("overrides", a.set or None)):
                if given is not None and given != doc[key]:
                    raise FleetError(f"--resume {a.resume}: it ran {key} {doc[key]!r}, not {given!r}; a resumed "
                                     "fleet run keeps its matrix (start a new one instead)")
            self.fleet_id = a.resume
            self.hosts = {h: HostState(**s) for h, s in doc.pop("hosts").items()}
            doc.pop("updated_at", None)
            old = doc.pop("bundle_sha256", "")  # fleet runs before bundles per machine: one, x86-64's
            doc.setdefault("bundles", {"x86_64": old} if old else {})
            self.meta = doc
            unknown = sorted(set(self.hosts) - set(inventory_hosts))
            if unknown:
                raise FleetError(f"--resume {a.resume}: host(s) {', '.join(unknown)} are no longer in the inventory")
        else:
            if not a.target:
                raise FleetError("give the matrix target (e.g. //rigs:calibration_matrix) or --resume FLEET_ID")
            self.fleet_id = new_fleet_id()
            chosen = self.chosen_hosts(inventory_hosts)
            for host in chosen:
                try:
                    store.check_host_folder(self.results_root, host)
                except store.StoreError as e:
                    raise FleetError(f"inventory host {host[:80]!r} cannot name a results folder: {e}; "
                                     "rename it in the inventory (ansible_host keeps its address)") from None
            self.hosts = {h: HostState() for h in chosen}
            self.meta = {"fleet_id": self.fleet_id, "target": a.target, "profile": a.profile,
                         "overrides": a.set, "inventory": os.path.abspath(a.inventory), "bundles": {},
                         "created_at": now_iso(), "metrics": None}
        if getattr(a, "metrics_port", None) is not None:  # a resumed fleet run may be watched from now on
            self.meta["metrics"] = {"port": a.metrics_port, "address": a.metrics_address}

    def write_service_discovery(self, hosts, inventory):
        """The file Prometheus' file_sd_configs reads to scrape every host's run, beside the fleet's state;
        its path (None when the runs are not watched)."""
        metrics = self.meta.get("metrics")
        if not metrics:
            return None
        return store.write_fleet_service_discovery(self.results_root, self.fleet_id,
                                                   fleetmetrics.service_discovery(hosts, inventory, metrics, self.fleet_id))

    def chosen_hosts(self, inventory_hosts):
        if not self.args.limit:
            return list(inventory_hosts)
        wanted = [h.strip() for h in self.args.limit.split(",") if h.strip()]
        missing = [h for h in wanted if h not in inventory_hosts]
        if missing:
            raise FleetError(f"--limit: {', '.join(missing)} not in the inventory ({', '.join(inventory_hosts)})")
        return wanted

    # -- each host's machine, and the bundle for it --
    def machines(self, todo, env):
        """Asks the hosts that have not said yet for their machine (phase 0); a host that cannot answer, or
        whose machine tunelab builds nothing for, fails with that reason before anything is shipped."""
        ask = [h for h in todo if not self.hosts[h].machine]
        if ask:
            pb = Playbook(os.path.dirname(self.state_path(self.fleet_id)), "machine", env)
            pb.run(self.args.inventory, ask, {})
            for host in ask:
                state = self.hosts[host]
                try:
                    if host in pb.errors:
                        raise FleetError(pb.errors[host])
                    state.machine = machines.read_machine((pb.ok.get(host, {}).get("machine") or {}).get("stdout"))
                except FleetError as e:
                    state.status, state.error = "failed", str(e)
        self.save()
        return [h for h in todo if self.hosts[h].machine and self.hosts[h].status != "failed"]

    def bundles(self, wanted):
        """{machine: bundle path} for the machines in `wanted`: given (--bundle) or built."""
        given = machines.parse_bundle_option(self.args.bundle)
        if bool(given) != bool(self.args.args_file):
            raise FleetError("--bundle and --args-file go together")
        found, args_file = {}, self.args.args_file
        for machine in sorted(wanted):
            if given:
                if machine not in given:
                    continue  # its hosts are reported: no bundle given for them
                found[machine] = self.check_bundle(machine, given[machine])
            else:
                self.console.print(f"building the {machine} bundle of {self.meta['target']} (the matrix, its "
                                   "runfiles and JDKs as one archive)")
                bundle, args_file = machines.build_bundle(self.workspace, self.meta["target"], machine)
                found[machine] = self.check_bundle(machine, bundle)
        return found, (read_args_file(args_file) if args_file else [])

    def check_bundle(self, machine, bundle):
        sha = safeio.sha256_of(bundle)
        then = self.meta["bundles"].get(machine)
        if then and then != sha:
            raise FleetError(f"the {machine} build of {self.meta['target']} changed since fleet run {self.fleet_id} "
                             f"started (bundle {then[:12]} then, {sha[:12]} now): a resumed run must run the same "
                             "build; check out that commit or start a new fleet run")
        self.meta["bundles"][machine] = sha
        self.console.print(f"{machine} bundle {sha[:12]}: {os.path.getsize(bundle) / 2**20:.0f} MiB")
        return bundle

    def commit(self):
        def git(*a):
            return subprocess.run(["git", "-C", self.workspace, *a], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True).stdout.strip()
        sha = git("rev-parse", "HEAD") or "unknown"
        return sha + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")

    # -- the phases --
    def fleet_vars(self, bundles, matrix_args, inventory):
        run_args = (["--profile", self.meta["profile"]] if self.meta["profile"] else []) + [
            f"--set={s}" for s in self.meta["overrides"] or []]
        commit = self.meta.setdefault("commit", self.commit())
        try:
            manifests = {machine: make_bundle.manifest_sha256(path) for machine, path in bundles.items()}
        except (OSError, ValueError, tarfile.TarError) as e:
            raise FleetError(f"a bundle without its manifest: {e}") from None
        hosts = {}
        for h, s in self.hosts.items():
            if s.machine not in bundles:
                continue
            sha = self.meta["bundles"][s.machine]
            hosts[h] = dict(host_plan(h, inventory[h], self.fleet_id, sha, manifests[s.machine], matrix_args, run_args,
                                      commit, s, self.meta.get("metrics")),
                            bundle=bundles[s.machine], bundle_sha256=sha, machine=s.machine)
        return {"bundles": bundles, "hosts": hosts,
                "staging": os.path.join(os.path.dirname(self.state_path(self.fleet_id)), "incoming"),
                "max_archive_bytes": runarchive.MAX_ARCHIVE_BYTES}

    def check(self, inventory, todo, fleet_vars, env):
        self.console.print(f"checking {len(todo)} host(s): Python, bundle, plan ({', '.join(todo)})")
        pb = Playbook(os.path.dirname(self.state_path(self.fleet_id)), "check", env)
        pb.run(self.args.inventory, todo, fleet_vars)
        plans, run_states = {}, {}
        for host in todo:
            state = self.hosts[host]
            if host in pb.errors:
                state.status, state.error = "failed", pb.errors[host]
                continue
            try:
                plans[host] = read_plan(os.path.join(fleet_vars["staging"], host, "plan.json"))
                state.host_id = plans[host]["doctor"]["host"]["host_id"]
                run_state = pb.ok.get(host, {}).get("run state")
                run_states[host] = (host_json(run_state["stdout"], "its run state")
                                    if isinstance(run_state, dict) and run_state.get("stdout") else {})
            except (OSError, FleetError) as e:
                plans.pop(host, None)
                state.status, state.error = "failed", f"no usable plan came back: {e}"
                continue
            runnable = [c for c in plans[host]["cells"] if not c["skip_reason"]]
            if not runnable:
                state.status, state.error = "skipped", "this host can run none of the cells (see the plan)"
            elif state.status in ("new", "failed"):
                state.status, state.error = "planned", ""
        self.save()
        self.print_plans(plans)
        return plans, run_states

    def print_plans(self, plans):
        t = Table(title=f"Fleet {self.fleet_id}: {self.meta['target']} (profile {self.meta['profile'] or 'default'})")
        for col in ("host", "host id", "CPUs", "NUMA nodes", "cells", "to run", "skipped", "estimate"):
            t.add_column(col, overflow="fold")
        for host, state in self.hosts.items():
            plan = plans.get(host)
            if plan is None:
                t.add_row(escape(host), escape(state.host_id or "?"), "-", "-", "-", "-", "-",
                          f"{state.status} (below)")
                continue
            doctor = plan["doctor"]
            cells = plan["cells"]
            skipped = [c for c in cells if c["skip_reason"]]
            t.add_row(escape(host), escape(doctor["host"]["host_id"]), escape(str(doctor["cpu"].get("online_cpus", "?"))),
                      str(len((doctor.get("numa") or {}).get("nodes") or [])), str(len(cells)),
                      str(len(cells) - len(skipped)), str(len(skipped)),
                      str(datetime.timedelta(seconds=round(plan["estimated_s"]))))
        self.console.print(t)
        for host, plan in plans.items():
            reasons = {}
            for c in plan["cells"]:
                if c["skip_reason"]:
                    reasons[c["skip_reason"]] = reasons.get(c["skip_reason"], 0) + 1
            for reason, count in sorted(reasons.items()):
                self.console.print(f"  {escape(host)}: {count} cell(s) skipped: {escape(reason)}")

    def run(self, inventory, todo, fleet_vars, run_states, plans, env):
        for host in todo:
            state = self.hosts[host]
            if not state.run_id:
                state.run_id = cli.new_run_id()
        fleet_vars = self.fleet_vars(fleet_vars["bundles"], self.matrix_args, inventory)
        for host in todo:
            plan = fleet_vars["hosts"][host]
            plan["start_argv"] = start_argv(plan, run_states.get(host, {}), self.hosts[host].run_id)
            self.hosts[host].status = "running"
        self.save()
        total = sum(plans[h]["estimated_s"] for h in todo)
        self.console.print(f"running on {len(todo)} host(s) at once; longest plan "
                           f"{datetime.timedelta(seconds=max(plans[h]['estimated_s'] for h in todo))} "
                           f"(all hosts' cells: {datetime.timedelta(seconds=total)})")
        started = time.monotonic()

        def on_event(kind, host, task, res):
            if not host or host not in self.hosts:
                return
            elapsed = datetime.timedelta(seconds=round(time.monotonic() - started))
            try:
                if kind == "runner_on_ok" and task == "start":
                    self.console.print(f"[{elapsed}] {escape(host)}: started run {self.hosts[host].run_id}")
                elif kind == "runner_on_ok" and task == "bring the run home":
                    self.bring_home(host, fleet_vars, elapsed)
                elif kind in ("runner_on_failed", "runner_on_unreachable"):
                    self.console.print(f"[{elapsed}] [red]{escape(host)}[/red]: "
                                       f"{escape(describe_failure(kind, task, res))}")
            except Exception as e:  # noqa: BLE001 - one host's event must never stop the others' runs
                self.host_crashed(host, f"handling its {task!r} event", e)

        pb = Playbook(os.path.dirname(self.state_path(self.fleet_id)), "run", env, on_event)
        pb.run(self.args.inventory, todo, fleet_vars)
        for host in todo:
            state = self.hosts[host]
            if state.status != "running":
                continue  # decided while the playbook ran: home, or its archive refused (with that reason)
            error = pb.errors.get(host, "") or (
                f"Ansible ended (status {pb.result.status}, exit {pb.result.rc}) before this host's run came home; "
                f"log: {pb.result.config.artifact_dir}")
            if "unreachable" in error:
                state.status = "dropped"
            elif error.startswith("finished:"):
                state.status = "interrupted"
            else:
                state.status = "failed"
            state.error = error
        self.save()

    def bring_home(self, host, fleet_vars, elapsed):
        state = self.hosts[host]
        archive = os.path.join(fleet_vars["staging"], host, "run.tar.gz")
        expect = {"run_id": state.run_id, "fleet": {"host": host, "fleet_id": self.fleet_id}}
        try:
            target, added, refreshed = runarchive.unpack_run(archive, self.results_root, host_folder=host,
                                                             expect=expect)
            manifest = store.load_manifest(os.path.join(target, "manifest.json"))
        except (runarchive.ArchiveError, store.StoreError, OSError) as e:
            state.status, state.error = "failed", f"the archive brought home was refused: {e}"
            self.console.print(f"[{elapsed}] [red]{escape(host)}[/red]: {escape(state.error)}")
            self.save()
            return
        finally:
            if os.path.exists(archive):
                os.unlink(archive)  # checked and stored, or refused: never kept in staging
        if manifest["state"] != "complete":
            state.status, state.error = "interrupted", f"the run came home {manifest['state']}"
        else:
            state.status, state.error = "home", ""
        state.run_dir = target
        self.save()
        self.console.print(f"[{elapsed}] {escape(host)}: run {state.run_id} home ({len(added)} file(s) new, "
                           f"{len(refreshed)} refreshed) -> {escape(target)}")
        self.index(host, target, elapsed)

    def index(self, host, target, elapsed):
        """The run that came home, indexed in the results database as it arrives (a team's: TUNELAB_DB or --db),
        after its documents are stored; a database that cannot take it is said, and the run stays home."""
        url = db_store.database_url(self.args.db, self.results_root)
        problem = indexer.index(url, [target], self.results_root)
        if problem:
            self.console.print(f"[{elapsed}] [yellow]{escape(host)}[/yellow]: its run is home but not in the results "
                               f"database {escape(db_store.redacted(url))}: {escape(problem[:300])} (index it again: "
                               f"bazel run //tools:results -- import {escape(target)})")
        else:
            self.console.print(f"[{elapsed}] {escape(host)}: run indexed in {escape(db_store.redacted(url))}")

    def host_crashed(self, host, doing, error):
        """An unexpected error while handling one host: that host fails (with the traceback in the fleet's
        log), the others go on."""
        import traceback
        log = os.path.join(os.path.dirname(self.state_path(self.fleet_id)), "errors.log")
        with safeio.open_log(log, append=True) as f:
            f.write(f"{now_iso()} {host}: {doing}\n{traceback.format_exc()}\n")
        state = self.hosts[host]
        state.status, state.error = "failed", f"{doing}: {type(error).__name__}: {str(error)[:300]} (traceback: {log})"
        self.console.print(f"[red]{escape(host)}[/red]: {escape(state.error)}")
        try:
            self.save()
        except Exception:  # noqa: BLE001 - the state is saved again at the end
            pass

    def summary(self):
        t = Table(title=f"Fleet {self.fleet_id}")
        for col in ("host", "run", "status", "results / reason"):
            t.add_column(col, overflow="fold")
        for host, s in self.hosts.items():
            colour = "green" if s.status == "home" else "yellow" if s.status == "skipped" else "red"
            t.add_row(escape(host), s.run_id or "-", f"[{colour}]{s.status}[/{colour}]",
                      escape(shown_path(s.run_dir, self.workspace) if s.run_dir else s.error))
        self.console.print(t)
        home = [s for s in self.hosts.values() if s.status == "home"]
        if len(home) >= 2:
            self.console.print("compare two hosts: bazel run //analysis:report -- "
                               f"{home[0].run_id} {home[1].run_id} --kind cross-host --out cross-host.pdf")
        if any(s.status not in FINAL + ("skipped",) for s in self.hosts.values()):
            self.console.print(f"continue the hosts not home with: bazel run //tools:fleet -- --inventory "
                               f"{self.args.inventory} --resume {self.fleet_id}")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit status: 0 every host's run is home; 1 some host failed or dropped "
                                            "out (resume it); 2 bad input.")
    parser.add_argument("--inventory", required=True, help="an Ansible inventory (INI or YAML)")
    parser.add_argument("target", nargs="?", help="a rig_matrix target, e.g. //rigs:calibration_matrix")
    parser.add_argument("--profile", help="a profile of the matrix (as for the matrix target)")
    parser.add_argument("--set", action="append", default=None, metavar="AXIS=V1,V2", help="as for the matrix target")
    parser.add_argument("--limit", help="comma-separated inventory hosts to use (default: all)")
    parser.add_argument("--resume", metavar="FLEET_ID", help="continue a fleet run: hosts whose run is home are left alone")
    parser.add_argument("--results-dir", help="where runs come home (default: <workspace>/results)")
    parser.add_argument("--db", help="the results database each run is indexed in as it comes home (default: "
                                     "TUNELAB_DB, else results/.db/tunelab.sqlite)")
    parser.add_argument("--plan-only", action="store_true", help="check the hosts and print their plans; run nothing")
    parser.add_argument("--bundle", action="append", metavar="[MACHINE=]PATH",
                        help="a bundle built already (<target>_bundle.tar.gz; aarch64=<target>_bundle_aarch64.tar.gz) "
                             "instead of building it; needs --args-file")
    parser.add_argument("--args-file", help="with --bundle: the target's <name>.args")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="each host's run serves its live metrics on this port (a host's tunelab_metrics_port "
                             "overrides it); a Prometheus file_sd file names them all")
    parser.add_argument("--metrics-address", default="127.0.0.1", metavar="ADDRESS",
                        help="the address each host's endpoint binds (default 127.0.0.1: scrape it on the host, or "
                             "give the host's own address; a host's tunelab_metrics_address overrides it)")
    args = parser.parse_args(argv)
    if args.metrics_port is not None and not 0 < args.metrics_port <= 65535:
        parser.error(f"--metrics-port {args.metrics_port}: a TCP port, 1-65535")
    return args


def main(argv=None, console=None):
    args = parse_args(argv)
    console = console or Console(highlight=False, soft_wrap=True, width=terminal.width())
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    fleet = Fleet(args, console, workspace)
    work = tempfile.mkdtemp(prefix="tl-fleet-")  # short: SSH's control sockets live here
    site_bin = write_cli_launchers(os.path.join(work, "bin"))
    # ansible-runner looks Ansible's tools up on this process' PATH.
    os.environ["PATH"] = site_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
    try:
        inventory = load_inventory(args.inventory, ansible_env(work, site_bin, work))
        fleet.load_or_create(inventory)
        env = ansible_env(os.path.dirname(fleet.state_path(fleet.fleet_id)), site_bin, work)
        fleet.save()
        console.print(f"fleet run {fleet.fleet_id}: state in {shown_path(fleet.state_path(fleet.fleet_id), workspace)}")
        todo = [h for h, s in fleet.hosts.items() if s.status not in FINAL]
        for host in sorted(set(fleet.hosts) - set(todo)):
            console.print(f"{host}: run {fleet.hosts[host].run_id} is home already; not run again")
        todo = fleet.machines(todo, env) if todo else []
        bundles, fleet.matrix_args = fleet.bundles({fleet.hosts[h].machine for h in todo})
        for host in [h for h in todo if fleet.hosts[h].machine not in bundles]:
            fleet.hosts[host].status = "failed"
            fleet.hosts[host].error = f"no bundle for its machine ({fleet.hosts[host].machine}) was given (--bundle)"
        todo = [h for h in todo if fleet.hosts[h].machine in bundles]
        fleet.save()
        if todo:
            fleet_vars = fleet.fleet_vars(bundles, fleet.matrix_args, inventory)
            sd = fleet.write_service_discovery(fleet.hosts, inventory)
            if sd:
                where = "; ".join(t for entry in fleetmetrics.service_discovery(fleet.hosts, inventory, fleet.meta["metrics"],
                                                                    fleet.fleet_id) for t in entry["targets"])
                console.print(f"live metrics: {escape(where)}; Prometheus file_sd: {escape(shown_path(sd, workspace))}")
            plans, run_states = fleet.check(inventory, todo, fleet_vars, env)
            runnable = [h for h in todo if fleet.hosts[h].status == "planned" or
                        (h in plans and fleet.hosts[h].status in ("running", "interrupted", "dropped"))]
            if runnable and not args.plan_only:
                fleet.run(inventory, runnable, fleet_vars, run_states, plans, env)
    except FleetError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        # The matrices run detached on their hosts and go on; a resumed fleet run watches them again.
        if getattr(fleet, "fleet_id", None):
            fleet.save()
            console.print(f"interrupted; the hosts' runs go on. Watch them again and bring them home with: bazel run "
                          f"//tools:fleet -- --inventory {args.inventory} --resume {fleet.fleet_id}")
        return EXIT_INTERRUPTED
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fleet.summary()
    if args.plan_only:
        return EXIT_OK if all(s.status in ("planned", "home", "skipped") for s in fleet.hosts.values()) else EXIT_HOSTS_FAILED
    return EXIT_OK if all(s.status in FINAL + ("skipped",) for s in fleet.hosts.values()) else EXIT_HOSTS_FAILED


if __name__ == "__main__":
    sys.exit(main())
