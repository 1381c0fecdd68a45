"""Where a fleet run's hosts serve their live metrics (issue 63): each host's runner its own endpoint
(rigs/matrix/livemetrics.py), on the fleet's --metrics-port and --metrics-address unless the inventory host
says otherwise (`tunelab_metrics_port`, `tunelab_metrics_address`: two inventory hosts on one machine need two
ports, or two loopback addresses), and Prometheus' file-based service discovery listing them."""

import ipaddress

from tools.fleet.hostinput import FleetError

ANY_ADDRESS = ("0.0.0.0", "::")  # a runner bound here is scraped at its inventory address


def metrics_port(host, hostvars, port):
    """The TCP port `host`'s runner serves on: its tunelab_metrics_port, else the fleet's; FleetError if not one."""
    given = hostvars.get("tunelab_metrics_port", port)
    try:
        value = int(given)
    except (TypeError, ValueError):
        value = -1
    if not 0 < value <= 65535:
        raise FleetError(f"{host}: tunelab_metrics_port {given!r}: a TCP port, 1-65535")
    return value


def metrics_address(host, hostvars, address):
    """The address `host`'s runner binds: its tunelab_metrics_address, else the fleet's; FleetError if it is
    not an IP address (a name would be resolved on the host, where it may mean another interface)."""
    given = str(hostvars.get("tunelab_metrics_address", address))
    try:
        ipaddress.ip_address(given)
    except ValueError:
        raise FleetError(f"{host}: tunelab_metrics_address {given!r}: an IP address (e.g. 127.0.0.1)") from None
    return given


def runner_args(host, hostvars, metrics):
    """The runner's arguments that serve its live metrics ([] when the fleet run is not watched)."""
    if not metrics:
        return []
    return [f"--metrics-port={metrics_port(host, hostvars, metrics['port'])}",
            f"--metrics-address={metrics_address(host, hostvars, metrics['address'])}"]


def service_discovery(hosts, inventory, metrics, fleet_id):
    """Prometheus' file-based service discovery for the runs' endpoints: a target per host (the address its
    runner binds, or its inventory address when that is any address or the loopback the runner shares with
    nothing remote), labelled with the fleet run and the inventory host."""
    out = []
    for h in sorted(hosts):
        bound = metrics_address(h, inventory[h], metrics["address"])
        given = "tunelab_metrics_address" in inventory[h] and bound not in ANY_ADDRESS
        where = bound if given else inventory[h].get("ansible_host", h)
        out.append({"targets": [f"{where}:{metrics_port(h, inventory[h], metrics['port'])}"],
                    "labels": {"fleet_id": fleet_id, "host": h}})
    return out
