"""The axis memory_limit's values (issue 62): none, a size (512m, 3g: the most memory, resident and page cache
together, every process of a cell may hold), or the name of a [memory_limit.NAME] table. Set and proven on the
cell's cgroup by rigs/matrix/cell/cellcgroup.py; read from a matrix by rigs/matrix/planning/spec.py.

A named limit lets cells whose own processes differ in size (MR1 and MR2: ~600 MB) be squeezed alike and still
pair on memory_limit=NAME: a size per value of another axis (`by`, `sizes`), or `cache_room`, a limit that
follows the cell (its processes' own memory plus that much page cache: cellcgroup.CacheRoom).
"""

import dataclasses
import re

SIZE_RE = re.compile(r"none|[1-9][0-9]{0,6}[mg]")
NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,31}")


@dataclasses.dataclass(frozen=True)
class NamedMemoryLimit:
    by: str = ""
    sizes: dict = dataclasses.field(default_factory=dict)  # value of `by` -> size (512m, 3g)
    cache_room: str = ""  # a size

    def size_for(self, params):
        """The size a cell of these parameters starts under: its `by` value's, or the cache room."""
        return self.cache_room or self.sizes[params[self.by]]


def _is_size(value):
    return isinstance(value, str) and value != "none" and SIZE_RE.fullmatch(value) is not None


def parse_named(name, body):
    """The NamedMemoryLimit of a [memory_limit.NAME] table; ValueError saying what is wrong."""
    if not NAME_RE.fullmatch(name) or name == "none":
        raise ValueError(f"[memory_limit.{name[:40]}]: a name is 1-32 of a-z, 0-9 and '_', not none")
    if isinstance(body, dict) and set(body) == {"cache_room"}:
        if not _is_size(body["cache_room"]):
            raise ValueError(f"[memory_limit.{name}] cache_room: {body['cache_room']!r} is not a size such as 96m")
        return NamedMemoryLimit(cache_room=body["cache_room"])
    if not isinstance(body, dict) or set(body) != {"by", "sizes"}:
        raise ValueError(f"[memory_limit.{name}] needs exactly `by` (an axis) and `sizes` (its values' sizes), "
                         "or `cache_room` alone")
    sizes = body["sizes"]
    if not isinstance(body["by"], str) or not isinstance(sizes, dict) or not sizes:
        raise ValueError(f"[memory_limit.{name}] `by` is an axis name, `sizes` a table of its values' sizes")
    for value, size in sizes.items():
        if not _is_size(size):
            raise ValueError(f"[memory_limit.{name}] sizes.{value}: {size!r} is not a size such as 512m or 3g")
    return NamedMemoryLimit(body["by"], dict(sizes))


def value_problem(value, named, axes):
    """Why `value` cannot be on the axis given the matrix's named limits and axes, or None."""
    if SIZE_RE.fullmatch(str(value)):
        return None
    if value not in named:
        return (f"axis memory_limit: {value!r} is not none, a size such as 512m or 3g, or a [memory_limit.NAME] "
                f"table's name ({', '.join(named) or 'none declared'})")
    if named[value].by and named[value].by not in axes:
        return f"[memory_limit.{value}] is by {named[value].by!r}, which is not an axis of this matrix"
    return None


def cell_problem(params, named):
    """Why a cell of these parameters has no size under its named limit, or None."""
    limit = named.get(params.get("memory_limit"))
    if limit and limit.by and params[limit.by] not in limit.sizes:
        return (f"memory_limit={params['memory_limit']} has no size for {limit.by}={params[limit.by]} "
                f"([memory_limit.{params['memory_limit']}] sizes: {', '.join(limit.sizes)})")
    return None
