"""Child processes of the local control plane: started in their own process group, their
pids written to `<run_dir>/pids/<name>.pid`, stopped group by group.

A process counts as ours only while its command line mentions the run directory, so a pid
reused by the system after a crash is never signalled. With `die_with_parent` the kernel
sends SIGKILL to a child when the thread that started it dies (PR_SET_PDEATHSIG; SIGKILL
because kube-apiserver's graceful shutdown outlasts a lost etcd), so an
interrupted or killed test session leaves nothing behind; `phalanx cluster up` turns it off
because its processes must outlive the command.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Started:
    name: str
    pid: int
    log: Path


def start(
    name: str,
    argv: Sequence[str],
    run_dir: Path,
    die_with_parent: bool,
    env: dict[str, str] | None = None,
) -> Started:
    """Start `argv` detached from our terminal, logging to `<run_dir>/logs/<name>.log`."""
    logs = run_dir / "logs"
    pids = run_dir / "pids"
    logs.mkdir(parents=True, exist_ok=True)
    pids.mkdir(parents=True, exist_ok=True)
    log = logs / f"{name}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_parent_death_signal if die_with_parent else None,
            env={**os.environ, **(env or {})},
            cwd=run_dir,
        )
    (pids / f"{name}.pid").write_text(f"{process.pid}\n")
    return Started(name=name, pid=process.pid, log=log)


def _parent_death_signal() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def recorded(run_dir: Path) -> dict[str, int]:
    """Processes recorded in the run directory that are still ours and alive."""
    found: dict[str, int] = {}
    for pid_file in sorted((run_dir / "pids").glob("*.pid")):
        try:
            pid = int(pid_file.read_text().strip())
        except ValueError:
            continue
        if is_ours(pid, run_dir):
            found[pid_file.stem] = pid
    return found


def is_ours(pid: int, run_dir: Path) -> bool:
    """Alive (not a zombie) and started for this run directory."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X") and str(run_dir).encode() in cmdline


def stop(run_dir: Path, order: Sequence[str], grace_seconds: float = 10.0) -> list[str]:
    """Stop every recorded process, `order` first (others after), SIGTERM then SIGKILL.

    Returns the names of processes that had to be killed with SIGKILL.
    """
    alive = recorded(run_dir)
    names = [name for name in order if name in alive] + sorted(set(alive) - set(order))
    return [name for name in names if stop_one(run_dir, name, alive[name], grace_seconds)]


def stop_one(run_dir: Path, name: str, pid: int, grace_seconds: float = 10.0) -> bool:
    """SIGTERM the process group, SIGKILL after the grace period; True if it needed SIGKILL."""
    _signal_group(pid, signal.SIGTERM)
    killed = False
    if not _wait(lambda: not is_ours(pid, run_dir), grace_seconds):
        _signal_group(pid, signal.SIGKILL)
        _wait(lambda: not is_ours(pid, run_dir), grace_seconds)
        killed = True
    _reap(pid)
    (run_dir / "pids" / f"{name}.pid").unlink(missing_ok=True)
    return killed


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _wait(done: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.05)
    return done()
