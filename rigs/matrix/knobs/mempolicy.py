"""Runs a command under a memory policy numactl 2.0.16 cannot set: weighted interleave (Linux 6.9+).

  mempolicy.py weighted-interleave NODES -- COMMAND [ARG ...]

NODES is `all` (the online nodes) or a node list (`0-1`, `0,2`). Pages are interleaved over the nodes in
proportion to the kernel's weights (/sys/kernel/mm/mempolicy/weighted_interleave/nodeN). The policy is set
on this process with set_mempolicy(2), then COMMAND replaces it (exec), inheriting the policy like it would
from numactl; /proc/PID/numa_maps then says "weighted interleave:NODES".
"""

import ctypes
import os
import sys

MPOL_WEIGHTED_INTERLEAVE = 6
NODES_ONLINE = "/sys/devices/system/node/online"


def parse_nodes(text):
    nodes = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        nodes.update(range(int(lo), int(hi or lo) + 1))
    return sorted(nodes)


def set_weighted_interleave(nodes):
    if not nodes or max(nodes) >= 64:
        raise ValueError(f"nodes {nodes}: give nodes 0..63")
    mask = ctypes.c_ulong(sum(1 << n for n in nodes))
    libc = ctypes.CDLL(None, use_errno=True)
    # set_mempolicy(mode, nodemask, maxnode): the kernel reads maxnode - 1 bits of the mask.
    if libc.syscall(238, MPOL_WEIGHTED_INTERLEAVE, ctypes.byref(mask), ctypes.c_ulong(65)) != 0:  # x86_64
        errno = ctypes.get_errno()
        raise OSError(errno, f"set_mempolicy(MPOL_WEIGHTED_INTERLEAVE, {nodes}): {os.strerror(errno)} "
                             "(the kernel needs 6.9 or later)")


def main(argv):
    if len(argv) < 4 or argv[0] != "weighted-interleave" or argv[2] != "--":
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        with open(NODES_ONLINE) as f:
            online = parse_nodes(f.read())
        nodes = online if argv[1] == "all" else parse_nodes(argv[1])
        set_weighted_interleave(nodes)
        os.execvp(argv[3], argv[3:])
    except (OSError, ValueError) as e:
        print(f"mempolicy: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
