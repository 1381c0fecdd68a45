"""Folders a rig asks to have in memory (`Launch.memory_dirs`): each a private folder on the host's tmpfs,
linked from the cell's workdir under the name the rig gave, and removed when the cell ends, whatever happens.

Why: a NameNode's name and edits directories on a disk add the page cache's write-back to a measurement of
the namesystem (with the edit log's fsync off); on tmpfs they cost memory only. A study of the fsync itself
keeps them on the disk (the rig refuses tmpfs there). The folder is made by mkdtemp (mode 0700) under the
tmpfs mount, so no other user can read or swap it; the evidence names the mount and the folder.
"""

import os
import shutil
import tempfile

TMPFS_MOUNT = "/dev/shm"


class MemoryDirError(ValueError):
    """A memory folder cannot be made as asked (no tmpfs, a name that leaves the workdir, one that exists)."""


def tmpfs_mounted(mount=TMPFS_MOUNT, mounts_path="/proc/mounts"):
    """True when `mount` is a tmpfs mount point (from /proc/mounts)."""
    try:
        with open(mounts_path) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[1] == mount and fields[2] == "tmpfs":
                    return True
    except OSError:
        return False
    return False


def place(workdir, names, mount=TMPFS_MOUNT, mounts_path="/proc/mounts"):
    """Makes each of `names` (relative to `workdir`) a link to a fresh private folder under `mount`.

    Returns (evidence {name: {"filesystem", "mount", "path"}}, [folders to remove]); MemoryDirError before
    anything is made when one cannot be."""
    if not names:
        return {}, []
    if not tmpfs_mounted(mount, mounts_path):
        raise MemoryDirError(f"the rig asks for {', '.join(names)} in memory, and {mount} is not a tmpfs on "
                             "this host")
    root = os.path.realpath(workdir)
    for name in names:
        link = os.path.realpath(os.path.join(workdir, name))
        if os.path.dirname(link) != root or os.path.basename(link) != name:
            raise MemoryDirError(f"memory folder {name!r}: a plain name inside the cell's workdir")
        if os.path.lexists(link):
            raise MemoryDirError(f"memory folder {name!r}: {link} exists already")
    evidence, made = {}, []
    try:
        for name in names:
            folder = tempfile.mkdtemp(prefix=f"tunelab-{name}-", dir=mount)
            made.append(folder)
            os.symlink(folder, os.path.join(workdir, name))
            evidence[name] = {"filesystem": "tmpfs", "mount": mount, "path": folder}
    except OSError as e:
        remove(made)
        raise MemoryDirError(f"memory folder under {mount}: {e}") from e
    return evidence, made


def remove(folders):
    """Removes the folders place() made (the links in the workdir stay, dangling, to say where they were)."""
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
