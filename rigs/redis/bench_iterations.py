"""Runs redis-benchmark again and again against one server: the Redis rig's iterations.

    bench_iterations.py WARMUP MEASURED -- REDIS-BENCHMARK-ARGV...

Before each run it prints the iteration mark the rigs' iteration reader knows (rigs/matrix/contract/iterations.py),
{"event":"iteration","index":K,"warmup":true|false}, then the run's own output, so the rig reads every
iteration apart. One process, so the pinning of the rig's `benchmark` role covers every run (its children
inherit the CPU binding). Stops at the first failing run with its exit status.
"""

import subprocess
import sys


def main(argv):
    if len(argv) < 4 or argv[2] != "--" or not all(a.isdigit() for a in argv[:2]):
        print("usage: bench_iterations.py WARMUP MEASURED -- REDIS-BENCHMARK-ARGV...", file=sys.stderr)
        return 2
    warmup, measured, command = int(argv[0]), int(argv[1]), argv[3:]
    for index in range(warmup + measured):
        mark = '{"event":"iteration","index":%d,"warmup":%s}' % (index, "true" if index < warmup else "false")
        print(mark, flush=True)
        status = subprocess.run(command, check=False).returncode
        sys.stdout.flush()
        if status:
            print(f"iteration {index}: {command[0]} exited {status}", file=sys.stderr)
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
