"""Host knobs: settings of the host a cell needs (transparent hugepages, an explicit hugepage pool), set before
the cell and always restored after it, also when a run is killed (the journal in hoststate.py's root-only folder:
`recover` restores what a killed run left changed). Host files are reached through `HostPaths`, so tests point
them at a temporary folder. The launch's argv is launchargv.py's; pinning threads, threadpinning.py's."""

import dataclasses
import json
import os
import re

from rigs.host import hoststate
from rigs.matrix.knobs import hugepages
from results import safeio


@dataclasses.dataclass
class HostPaths:
    thp_enabled: str = "/sys/kernel/mm/transparent_hugepage/enabled"
    nr_hugepages: str = "/proc/sys/vm/nr_hugepages"
    compact_memory: str = "/proc/sys/vm/compact_memory"
    proc: str = "/proc"


# How often a short hugepage reservation is retried after asking the kernel to compact memory: a host
# whose free memory is split into small pieces (a busy page cache, another workload that just ended)
# often has the 2 MiB blocks after one compaction.
HUGEPAGE_ATTEMPTS = 3


class HostKnobs:
    """Sets THP mode and nr_hugepages for a cell and puts the previous values back, whatever happens.

    Use as a context manager; `restore()` is idempotent. Before changing anything the original values
    go to a journal file, so that a runner killed with SIGKILL (no handler runs) is cleaned up by the
    next run: `recover(journal)` restores them.
    """

    def __init__(self, paths=None, journal=None, hugepage_bytes=hugepages.DEFAULT_PAGE_BYTES):
        self.paths = paths or HostPaths()
        self.journal = journal
        self.hugepage_bytes = hugepage_bytes
        self._saved = []  # [(path, original text)] in the order they were changed

    def _write(self, path, value):
        if path not in (saved for saved, _ in self._saved):  # a retry keeps the first original
            with open(path) as f:
                original = f.read()
            self._saved.append((path, original))
            if self.journal:
                _write_journal(self.journal, self._saved)
        safeio.write_setting(path, str(value))

    def apply(self, cell):
        """Changes the host for the cell; returns a dict of what was set (for the result's evidence)."""
        hp = cell.params["hugepages"]
        applied = {}
        if hp.startswith("thp_") or hp == "off":
            mode = hugepages.THP_MODE[hp]
            if self.thp_mode() != mode:
                self._write(self.paths.thp_enabled, mode)
            applied["thp_mode"] = self.thp_mode()
        if hp == "host":
            applied["thp_mode"] = self.thp_mode()  # as found: nothing is written
        if hp == "explicit":
            pages = hugepages.pages_for_heap(cell.params["heap"], self.hugepage_bytes)
            current = self._read_int(self.paths.nr_hugepages)
            got = current
            attempts = 0
            while got < pages and attempts < HUGEPAGE_ATTEMPTS:
                if attempts:
                    self._compact_memory()
                attempts += 1
                self._write(self.paths.nr_hugepages, pages)
                got = self._read_int(self.paths.nr_hugepages)
            applied["nr_hugepages"] = got
            applied["hugepage_size_kb"] = self.hugepage_bytes // 1024
            if attempts > 1:
                applied["hugepage_reservation_attempts"] = attempts
            if got < pages:
                raise HostCannotNow(f"asked the kernel for {pages} hugepages, it reserved {got} after {attempts} "
                                f"attempts with memory compaction in between (free memory too fragmented, "
                                f"or in use by another workload: {self._mem_summary()})")
        return applied

    def _compact_memory(self):
        # Writing any value makes the kernel compact all zones now (it returns when done).
        try:
            safeio.write_setting(self.paths.compact_memory, "1")
        except OSError:
            pass  # a kernel without CONFIG_COMPACTION: the retry still lets reclaim run again

    def _mem_summary(self):
        try:
            with open(os.path.join(self.paths.proc, "meminfo")) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            return ", ".join(f"{k} {fields[k].strip()}" for k in ("MemFree", "MemAvailable") if k in fields)
        except OSError:
            return "meminfo unreadable"

    @staticmethod
    def _read_int(path):
        with open(path) as f:
            return int(f.read().strip() or 0)

    def thp_mode(self):
        try:
            with open(self.paths.thp_enabled) as f:
                return evidence_thp(f.read())
        except OSError:
            return None

    def restore(self):
        errors = []
        while self._saved:
            path, original = self._saved.pop()
            try:
                value = evidence_thp(original) if path == self.paths.thp_enabled else original.strip()
                safeio.write_setting(path, value)
            except OSError as e:
                errors.append(f"{path}: {e}")
        if self.journal and not errors and os.path.exists(self.journal):
            os.unlink(self.journal)
        if errors:
            raise KnobError("could not restore host settings: " + "; ".join(errors))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()
        return False


class KnobError(RuntimeError):
    pass


class HostCannotNow(KnobError):
    """The host cannot give a knob at this moment (hugepages it could not reserve in memory this fragmented):
    the cell is skipped with the reason, as a cell the host cannot express is, not failed: nothing of the
    system under test was measured or went wrong."""


def _write_journal(journal, saved):
    hoststate.write_file(journal, json.dumps([[path, original] for path, original in saved]).encode())


THP_MODES = ("always", "madvise", "never")


def _journal_problem(item, paths):
    """Why a journal entry is not one this runner writes, or ''."""
    if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)):
        return f"entry {str(item)[:80]!r} is not a [path, text] pair"
    path, text = item
    if path == paths.thp_enabled:
        return "" if evidence_thp(text) in THP_MODES else f"{path}: {text[:60]!r} is not a THP mode"
    if path == paths.nr_hugepages:
        return "" if re.fullmatch(r"[0-9]{1,12}\n?", text) else f"{path}: {text[:60]!r} is not a page count"
    return (f"it names {path[:200]!r}, which the runner never changes (only {paths.thp_enabled} and "
            f"{paths.nr_hugepages})")


def recover(journal, paths=None):
    """Restores host settings a killed run left changed (from its journal); returns what was restored.

    The journal must be the runner's own (hoststate.read_file: owner, mode, no link) and name only the
    knobs the runner changes, with values those knobs take; anything else is refused (KnobError) and
    nothing is written."""
    paths = paths or HostPaths()
    try:
        data = hoststate.read_file(journal)
    except hoststate.StateError as e:
        raise KnobError(f"knob journal refused, nothing restored: {e}") from None
    if data is None:
        return []
    try:
        entries = safeio.parse_json(data, hoststate.MAX_STATE_FILE_BYTES)
        problem = "" if isinstance(entries, list) and len(entries) <= 2 else "not a list of at most two entries"
    except (ValueError, RecursionError) as e:
        entries, problem = [], f"not JSON ({e})"
    for item in entries if not problem else ():
        problem = _journal_problem(item, paths)
        if problem:
            break
    if problem:
        raise KnobError(f"knob journal {journal} is not one this runner wrote: {problem}. Refused, nothing "
                        "restored: look at it, put the host's settings right by hand if needed, and delete it")
    knobs = HostKnobs(paths, journal)
    knobs._saved = [tuple(item) for item in entries]
    knobs.restore()
    return [path for path, _ in entries]


def evidence_thp(text):
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else text.strip()

