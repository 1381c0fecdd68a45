#!/usr/bin/env bash
# The clean room: the README's commands, exactly as written, in a minimal Debian 12 root that has nothing of
# tunelab installed, so that a step only this machine has done by hand cannot hide (it did: a header
# package only a Recommends away broke `./bazelw test //...` on every new machine while CI here was green).
#
# How: Debian's mmdebstrap builds a `minbase` bookworm root with git and CA certificates (cached as a
# tarball keyed by the package list, the apt sources and the UTC date; rebuilt when any changes), a fresh
# clone of the commit goes into it, and each step runs there in a chroot inside its own mount and PID
# namespaces (so every process the room starts, Bazel's server included, dies with it and no mount
# outlives it) and under a host name of its own. Carried in from the host, and nothing else: the network's trust (extra CA certificates,
# /etc/pip.conf, the apt settings the network needs, the CA bundle variables) and, read-only, Bazel's
# repository cache (content-addressed: every download is pinned by sha256, so sharing it changes nothing
# but the time; writes go to the room's own layer). Bazel-free on purpose: it runs before anything is
# installed. Needs root, unshare and chroot (util-linux, coreutils) and mmdebstrap (installed if missing).
#
#   tools/cleanroom/cleanroom.sh [--steps smoke,build,test] [--rev REV] [--keep]
#
# Steps (default all three, in this order): smoke = `./bazelw run //rigs:yarn_cps_matrix` (installs, builds
# and runs the headline smoke), build = `./bazelw build //...`, test = `./bazelw test //... --config=ci`
# minus the tests the room cannot hold (EXCLUDED below; listed with the reason before they are left out).
# Exit status: 0 every step passed; 1 a step failed; 2 the room could not be made (what is missing is named).
set -euo pipefail
# chroot and mount live in sbin, which a non-login PATH (sudo, a test) may lack.
PATH=$PATH:/usr/sbin:/sbin

SUITE=bookworm
VARIANT=minbase
# What a new user has before reading the README: git to clone, CA certificates to fetch over TLS.
ROOM_PACKAGES=(ca-certificates git)
# Host state a root process keeps: only root can write there.
CACHE_DIR=${TUNELAB_CLEANROOM_CACHE_DIR:-/var/cache/tunelab/cleanroom}
DEB_CACHE=$CACHE_DIR/debs
WORK_PARENT=${TUNELAB_CLEANROOM_WORK_PARENT:-/var/tmp/tunelab-cleanroom}
# The checkout's place in the room: long enough that a console which wraps at its width would break a
# run folder printed on one line (the nightly's old failure).
ROOM_CHECKOUT=/root/src/tunelab-clean-room-checkout
ROOM_HOSTNAME=tunelab-cleanroom
ALL_STEPS=(smoke build test)
# Tests the room cannot hold, by tag: tag=why. Everything else `./bazelw test //...` runs is run.
EXCLUDED=(
  "needs-podman=starts podman containers (a fleet host that runs in the rigs' image, too), and containers nested in the room's chroot have no cgroup of their own"
  "needs-dockerd=starts a Docker engine of its own (network namespaces, cgroups, iptables state) that a chroot cannot give it"
  "needs-cleanroom=makes a clean room of its own (a chroot in new mount and PID namespaces, built by mmdebstrap), which a room cannot nest"
)

say() { printf 'cleanroom: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
  cat <<'EOF'
Options:
  --steps LIST   comma-separated steps to run: smoke, build, test (default: all, in that order)
  --rev REV      the commit to clone into the room (default: HEAD of this checkout; uncommitted changes are
                 not in a clone, as on any other machine)
  --timeout S    seconds the room may run, all steps together (default 3600); then it is stopped: exit 1
  --no-repo-cache  do not share the host's Bazel repository cache (every pinned download is fetched again)
  --keep         keep the room's folder afterwards (printed at the end) instead of removing it
  --tests-after FILE  start the test step only once FILE exists (.ci/run makes it when the host's part, run
                 beside the room's build, has ended: nothing of it then runs beside the room's tests)
  --excluded-tags  print the tags of the tests the room leaves out, comma-separated (what .ci/run runs on
                 the host), and exit
  -h, --help     this text
EOF
}

# ---------------------------------------------------------------------------------------------------
# Inside the namespaces (the script calls itself): mount what the steps need, then run them chrooted.
if [[ "${1:-}" == --enter ]]; then
  root=$2 repo_cache_lower=$3 work=$4
  shift 4
  mount -t proc proc "$root/proc"
  mount -t sysfs sysfs "$root/sys"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # A machine of its own name, resolvable as Debian's installer makes it (Hadoop's local mode looks its
  # host name up; the host's name means nothing in the room's /etc/hosts).
  hostname "$ROOM_HOSTNAME"
  echo "$ROOM_HOSTNAME" >"$root/etc/hostname"
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$ROOM_HOSTNAME" >"$root/etc/hosts"
  if [[ -n "$repo_cache_lower" ]]; then
    target="$root/root/.cache/bazel/_bazel_root/cache/repos/v1"
    mkdir -p "$target" "$work/repo-cache-upper" "$work/repo-cache-work"
    mount -t overlay overlay -o "lowerdir=$repo_cache_lower,upperdir=$work/repo-cache-upper,workdir=$work/repo-cache-work" "$target"
  fi
  env_vars=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb)
  [[ -z "${CI:-}" ]] || env_vars+=("CI=$CI")
  # The network's CA bundle variables, where the host sets them (pip, requests and Python's ssl read them).
  for name in SSL_CERT_FILE PIP_CERT REQUESTS_CA_BUNDLE; do
    [[ -z "${!name:-}" ]] || env_vars+=("$name=${!name}")
  done
  exec chroot "$root" /usr/bin/env -i "${env_vars[@]}" /bin/bash /cleanroom/steps.sh "$@"
fi

# ---------------------------------------------------------------------------------------------------
steps=("${ALL_STEPS[@]}")
rev=HEAD
timeout_s=3600
share_repo_cache=1
keep=0
tests_after=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) [[ $# -ge 2 ]] || die "--steps needs a value"; IFS=, read -r -a steps <<<"$2"; shift 2 ;;
    --rev) [[ $# -ge 2 ]] || die "--rev needs a value"; rev=$2; shift 2 ;;
    --timeout) [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--timeout needs whole seconds"; timeout_s=$2; shift 2 ;;
    --no-repo-cache) share_repo_cache=0; shift ;;
    --keep) keep=1; shift ;;
    --tests-after) [[ $# -ge 2 ]] || die "--tests-after needs a file"; tests_after=$2; shift 2 ;;
    --excluded-tags) tags=(); for pair in "${EXCLUDED[@]}"; do tags+=("${pair%%=*}"); done
                     (IFS=,; echo "${tags[*]}"); exit 0 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
for step in "${steps[@]}"; do
  # Each name whole (issue 58, row 4: `--steps 'smoke build'` passed a substring check, ran nothing, exit 0).
  case "$step" in
    smoke|build|test) ;;
    *) die "unknown step '$step' (known: ${ALL_STEPS[*]})" ;;
  esac
done
[[ ${#steps[@]} -gt 0 ]] || die "--steps names no step"

# A folder root writes into and chroots from must be root's, and so must every folder above it, or a local
# user swaps it for a link to / between the check and the write (issue 58, row 4: /var/tmp/tunelab-cleanroom
# made by a user; `install -d` keeps its owner).
check_root_folder() {
  local path=$1 p=$1 uid mode
  while :; do
    [[ ! -L "$p" ]] || die "$p (holding the room's folder $path) is a link: refused; remove it"
    read -r uid mode < <(stat -c '%u %a' -- "$p") || die "cannot stat $p"
    [[ "$uid" == 0 ]] || die "$p (holding the room's folder $path) is owned by uid $uid, not root: another user could swap what root writes there; remove it (root recreates it)"
    if (( (8#$mode & 8#022) && !(8#$mode & 8#1000) )); then
      die "$p (holding the room's folder $path) is writable by other users (mode $mode) and not sticky: refused"
    fi
    [[ "$p" != / ]] || break
    p=$(dirname -- "$p")
  done
}

[[ "$(id -u)" -eq 0 ]] || die "the clean room needs root (chroot, mounts, namespaces); run it with sudo"
install -d -m 0700 "$CACHE_DIR" "$WORK_PARENT"
check_root_folder "$CACHE_DIR"
check_root_folder "$WORK_PARENT"
for program in unshare chroot mount tar git sha256sum stat; do
  command -v "$program" >/dev/null 2>&1 || die "missing program: $program"
done
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
commit=$(git -C "$source_dir" rev-parse --verify "$rev^{commit}" 2>/dev/null) || die "no commit '$rev' in $source_dir"

if ! command -v mmdebstrap >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "mmdebstrap is missing and this host has no apt-get to install it (Debian's mmdebstrap builds the room)"
  say "installing Debian's mmdebstrap (it builds the room's root; once)"
  DEBIAN_FRONTEND=noninteractive apt-get -qq -y --no-install-recommends -o DPkg::Lock::Timeout=600 install mmdebstrap >/dev/null 2>&1 ||
    { apt-get -qq -o DPkg::Lock::Timeout=600 update >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get -qq -y --no-install-recommends -o DPkg::Lock::Timeout=600 install mmdebstrap >/dev/null 2>&1; } ||
    die "mmdebstrap is missing and 'apt-get install mmdebstrap' failed: is the apt registry reachable?"
fi

# The host's apt sources are the mirror (the only one this network reaches); apt settings it needs travel too.
sources=/etc/apt/sources.list.d/debian.sources
[[ -f "$sources" ]] || sources=/etc/apt/sources.list
[[ -f "$sources" ]] || die "this host has no apt sources ($sources) to build the room from"
apt_conf_files=()
for f in /etc/apt/apt.conf.d/*; do
  # Only settings of the network (validity of a frozen snapshot, proxies), never the host's package choices.
  grep -qE '^[[:space:]]*Acquire::' "$f" 2>/dev/null && apt_conf_files+=("$f")
done

# The tarball's key: what makes the root. The date: a new day's archive may hold new package versions.
day=$(date -u +%Y-%m-%d)
key=$( { echo "$SUITE $VARIANT ${ROOM_PACKAGES[*]}"; cat "$sources"; } | sha256sum | cut -c1-16)
tarball="$CACHE_DIR/$SUITE-$VARIANT-$day-$key.tar"
if [[ ! -f "$tarball" ]]; then
  say "building a $VARIANT $SUITE root with mmdebstrap (${ROOM_PACKAGES[*]}): $tarball"
  started=$SECONDS
  mmdebstrap_args=(--format=tar --variant="$VARIANT" --include="$(IFS=,; echo "${ROOM_PACKAGES[*]}")")
  for f in "${apt_conf_files[@]}"; do
    mmdebstrap_args+=(--aptopt="$f")
  done
  if ! mmdebstrap "${mmdebstrap_args[@]}" "$SUITE" "$tarball.part" "$sources" >"$CACHE_DIR/mmdebstrap.log" 2>&1; then
    tail -n 20 "$CACHE_DIR/mmdebstrap.log" >&2
    rm -f "$tarball.part"
    die "mmdebstrap could not build the root (log: $CACHE_DIR/mmdebstrap.log): is the apt registry reachable?"
  fi
  mv "$tarball.part" "$tarball"
  say "root built in $((SECONDS - started)) s"
  find "$CACHE_DIR" -maxdepth 1 -name "$SUITE-$VARIANT-*.tar" ! -path "$tarball" -delete
else
  say "using the cached root $tarball"
fi

work=$(mktemp -d "$WORK_PARENT/room-XXXXXX")
root="$work/root"
# Processes whose root is in the room: none once its PID namespace is gone.
room_processes() {
  local link
  for link in /proc/[0-9]*/root; do
    [[ "$(readlink "$link" 2>/dev/null)" == "$root"* ]] && echo "${link//[^0-9]/}"
  done
}
# The room's .deb files become the cache (a new folder swapped in whole: an interrupted copy leaves the old).
keep_debs() {
  local archives="$root/var/cache/apt/archives" fresh="$DEB_CACHE.new"
  compgen -G "$archives/*.deb" >/dev/null || return 0
  rm -rf "$fresh" && mkdir -m 0700 "$fresh" && cp --reflink=auto "$archives"/*.deb "$fresh/" &&
    rm -rf "$DEB_CACHE.old" && mv "$DEB_CACHE" "$DEB_CACHE.old" && mv "$fresh" "$DEB_CACHE" && rm -rf "$DEB_CACHE.old" ||
    say "warning: the Debian packages' cache $DEB_CACHE was not updated"
}
cleanup() {
  local waited=0
  while [[ -n "$(room_processes)" && $waited -lt 60 ]]; do sleep 1; waited=$((waited + 1)); done
  if [[ -n "$(room_processes)" ]]; then
    say "the room still runs (pids $(room_processes | head -5 | tr '\n' ' ')): its folder $work is left in place"
    return
  fi
  keep_debs
  if [[ "$keep" == 1 ]]; then
    say "kept the room: $work"
  else
    # Nothing is mounted any more: the mounts lived in the room's own mount namespace.
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT
mkdir -p "$root"
tar -C "$root" --numeric-owner -xf "$tarball"

# The network's trust, and nothing else of the host.
mkdir -p "$root/usr/local/share/ca-certificates" "$root/cleanroom"
carried_certs=0
for crt in /usr/local/share/ca-certificates/*.crt; do
  [[ -f "$crt" ]] || continue
  cp "$crt" "$root/usr/local/share/ca-certificates/"
  carried_certs=1
done
[[ ! -f /etc/pip.conf ]] || cp /etc/pip.conf "$root/etc/pip.conf"
for f in "${apt_conf_files[@]}"; do
  cp "$f" "$root/etc/apt/apt.conf.d/"
done

# Debian's packages as CI systems cache downloads: the .deb files the last room's apt fetched are put where
# apt looks first (/var/cache/apt/archives), and the room still installs every package from them. apt checks
# each file against the signed index before it uses it, so one of another version or a corrupt one is
# fetched again; after the room, the cache becomes what this room's apt holds (nothing else accumulates).
mkdir -p "$root/var/cache/apt/archives" "$DEB_CACHE"
check_root_folder "$DEB_CACHE"
cached_debs=$(find "$DEB_CACHE" -maxdepth 1 -type f -name '*.deb' | wc -l)
if [[ "$cached_debs" -gt 0 ]]; then
  cp --reflink=auto "$DEB_CACHE"/*.deb "$root/var/cache/apt/archives/"
  say "Debian packages: $cached_debs .deb files from the cache $DEB_CACHE (apt verifies each before use)"
fi

git clone -q --no-hardlinks "$source_dir" "$root$ROOM_CHECKOUT"
git -C "$root$ROOM_CHECKOUT" checkout -q --detach "$commit"
say "fresh clone of $commit at $ROOM_CHECKOUT in the room"

repo_cache_lower=""
host_repo_cache="${HOME:-/root}/.cache/bazel/_bazel_root/cache/repos/v1"  # root's, where a test runs it without HOME
if [[ "$share_repo_cache" == 1 && -d "$host_repo_cache" ]]; then
  repo_cache_lower=$host_repo_cache
  say "sharing the host's Bazel repository cache read-only: $host_repo_cache"
fi

# What runs in the room. Its arguments: the checkout, the certificates flag, the steps, --, EXCLUDED.
cat >"$root/cleanroom/steps.sh" <<'STEPS'
# Written by tools/cleanroom/cleanroom.sh; runs inside the room. Arguments: CHECKOUT CARRIED_CERTS
# STEP... -- TAG=WHY...
set -uo pipefail
checkout=$1 carried_certs=$2
shift 2
steps=()
while [[ $# -gt 0 && "$1" != -- ]]; do steps+=("$1"); shift; done
shift
excluded=("$@")
if [[ "$carried_certs" == 1 ]]; then
  update-ca-certificates >/dev/null 2>&1 || echo "cleanroom: warning: update-ca-certificates failed" >&2
fi
cd "$checkout" || exit 1
status=0
timings=()
run_step() {
  local name=$1 started=$SECONDS rc
  shift
  printf '\ncleanroom: == %s: %s\n' "$name" "$*"
  "$@"
  rc=$?
  timings+=("$(printf '%-6s %-62s exit %3d  %5d s' "$name" "$*" "$rc" $((SECONDS - started)))")
  [[ $rc == 0 ]] || status=1
}
for step in "${steps[@]}"; do
  case "$step" in
    smoke) run_step smoke ./bazelw run //rigs:yarn_cps_matrix ;;
    build) run_step build ./bazelw build //... ;;
    test)
      filters=()
      for pair in "${excluded[@]}"; do
        filters+=("-${pair%%=*}")
      done
      if [[ -e /cleanroom/tests-wait ]]; then  # --tests-after: the host's part must end first
        waited=$SECONDS
        echo "cleanroom: the test step waits for the host's part to end (--tests-after)"
        until [[ -e /cleanroom/tests-may-start ]]; do sleep 2; done
        echo "cleanroom: waited $((SECONDS - waited)) s for the host's part"
      fi
      echo "cleanroom: tests left out of the room (run on the host by .ci/run):"
      for pair in "${excluded[@]}"; do
        tests=$(./bazelw query "attr(tags, '\\b${pair%%=*}\\b', tests(//...))" 2>/dev/null | tr '\n' ' ')
        echo "  ${tests:-(none)}- ${pair%%=*}: ${pair#*=}"
      done
      run_step test ./bazelw test //... --config=ci "--test_tag_filters=$(IFS=,; echo "${filters[*]}")"
      testlogs=$(./bazelw info bazel-testlogs 2>/dev/null)
      if [[ -n "$testlogs" ]]; then
        printf '\ncleanroom: where the time of the tests went (tools/test_times.py):\n'
        python3 tools/test_times.py "$testlogs" --bazel ./bazelw || true
        echo "cleanroom: the room's tests: $(python3 .ci/test_totals.py "$testlogs")"
      fi
      ;;
    *) echo "cleanroom: unknown step '$step': nothing run" >&2; exit 2 ;;
  esac
done
./bazelw shutdown >/dev/null 2>&1
printf '\ncleanroom: step   command                                                        status   wall\n'
printf 'cleanroom: %s\n' "${timings[@]}"
exit $status
STEPS

say "running in the room: ${steps[*]} (at most $timeout_s s)"
if [[ -n "$tests_after" ]]; then
  : >"$root/cleanroom/tests-wait"
  # Passed into the room as a file of its own: the room sees its own folder, never the caller's.
  (until [[ -e "$tests_after" ]]; do sleep 2; done; : >"$root/cleanroom/tests-may-start") &
  tests_after_pid=$!
fi
started=$SECONDS
set +e
# --kill-child: when unshare ends (a signal, the timeout), the room's first process gets SIGKILL and with it
# everything in its PID namespace. `timeout` runs in a process group of its own, which Ctrl-C does not reach:
# an interrupt or a stop request here is passed on to it (it passes it to unshare), and the room's folder is
# removed only once the room is gone (cleanup).
timeout --kill-after=30 "$timeout_s" unshare --mount --uts --pid --fork --kill-child=SIGKILL --propagation private -- \
  "$0" --enter "$root" "$repo_cache_lower" "$work" "$ROOM_CHECKOUT" "$carried_certs" "${steps[@]}" -- "${EXCLUDED[@]}" &
room_pid=$!
interrupted=""
# unshare blocks SIGINT and SIGTERM (they are meant for the room's first process), so it is killed outright:
# --kill-child then kills the room.
stop_room() { interrupted=$1; say "$1: stopping the room"; pkill -KILL -P "$room_pid" unshare 2>/dev/null || kill -TERM "$room_pid" 2>/dev/null; }
trap 'stop_room SIGINT' INT
trap 'stop_room SIGTERM' TERM
trap 'stop_room SIGHUP' HUP
wait "$room_pid"
status=$?
while kill -0 "$room_pid" 2>/dev/null; do  # a trapped signal ends `wait` early: wait for the room itself
  wait "$room_pid"
  status=$?
done
[[ -z "$tests_after" ]] || kill "$tests_after_pid" 2>/dev/null
set -e
if [[ -n "$interrupted" ]]; then
  say "stopped by $interrupted after $((SECONDS - started)) s"
  exit 130
fi
case $status in
  0) say "every step passed in the room ($((SECONDS - started)) s)" ;;
  124|137) say "the room ran out of time after $((SECONDS - started)) s (--timeout $timeout_s)"; status=1 ;;
  *) say "a step failed in the room (exit $status, $((SECONDS - started)) s)"; status=1 ;;
esac
exit $status
