"""Copies of binaries that are not in the page cache, as after a reboot.

Starting one makes the kernel read it from disk during the exec, and for those milliseconds
`/proc/<pid>/cmdline` reads empty: the window in which the local cluster once judged a
starting kube-apiserver dead. Evicting only our own fresh copy (posix_fadvise DONTNEED after
fsync) forces that window without dropping the whole machine's cache.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def cold_copy(source: Path, target: Path) -> Path:
    """Copy `source` to `target` (executable) and evict the copy's pages from the cache."""
    shutil.copyfile(source, target)
    target.chmod(0o755)
    descriptor = os.open(target, os.O_RDONLY)
    try:
        os.fsync(descriptor)  # dirty pages cannot be evicted
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)
    return target
