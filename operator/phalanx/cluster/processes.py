"""Child processes of the local control plane: started in their own process group, recorded
in `<run_dir>/pids/<name>.pid`, stopped group by group.

A process is known by its pid *and* its start time (`/proc/<pid>/stat`, field 22, in clock
ticks after boot), written to the pid file by us the moment the process exists. That pair
names one process for its whole life: a pid reused by the system after a crash has a later
start time, so it is never signalled. The pair is readable from the fork on; the command
line is not (`/proc/<pid>/cmdline` reads empty while the kernel is still loading a binary
that is not in the page cache), so judging by it made a cold start look like a crash and
left the "crashed" process running. Processes this Python process started are also polled
through their `Popen` handle, which reaps them and tells their exit code.

With `die_with_parent` the kernel sends SIGKILL to a child when the thread that started it
dies (PR_SET_PDEATHSIG; SIGKILL because kube-apiserver's graceful shutdown outlasts a lost
etcd), so an interrupted or killed test session leaves nothing behind; `phalanx cluster up`
turns it off because its processes must outlive the command.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PR_SET_PDEATHSIG = 1
GONE_STATES = ("Z", "X")  # zombie, dead: exited, whether reaped yet or not


@dataclass(frozen=True)
class Identity:
    """One process for its whole life: its pid and when it started."""

    pid: int
    start_time: int


@dataclass(frozen=True)
class Started:
    """A process this Python process started; `process` is its handle while we hold it."""

    name: str
    identity: Identity
    log: Path
    process: subprocess.Popen[bytes] = field(compare=False, repr=False)

    @property
    def pid(self) -> int:
        return self.identity.pid

    def exit_code(self, wait: float = 0.0) -> int | None:
        """None while it runs; reaps it once it has exited.

        `wait`: seconds to give a process already on its way out. A multi-threaded program's
        main thread shows as a zombie (so `running` is False) while its other threads are
        still exiting, and until they are gone the exit code cannot be collected.
        """
        if not wait:
            return self.process.poll()
        try:
            return self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None


# Handles of the children this Python process started and has not reaped: stop() reaps
# through them, so the exit code stays readable from the `Started` that holds the handle.
_CHILDREN: dict[Identity, subprocess.Popen[bytes]] = {}


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
    # Our own child cannot vanish before we wait for it: at worst it is a zombie, whose
    # /proc/<pid>/stat still holds its start time.
    found = identity_of(process.pid)
    if found is None:
        raise AssertionError(f"no /proc entry for our child {process.pid}")
    _CHILDREN[found] = process
    _write_pid_file(pids / f"{name}.pid", found)
    return Started(name=name, identity=found, log=log, process=process)


def _parent_death_signal() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def identity_of(pid: int) -> Identity | None:
    """The identity of whatever process has `pid` now, or None if there is none."""
    stat = _stat_fields(pid)
    return None if stat is None else Identity(pid, int(stat[19]))


def running(identity: Identity) -> bool:
    """The process is still there (not exited) and is the same one (not a reused pid)."""
    stat = _stat_fields(identity.pid)
    return stat is not None and stat[0] not in GONE_STATES and int(stat[19]) == identity.start_time


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of /proc/<pid>/stat (state first); the command name before them may hold
    spaces and parentheses, so split after its last ')'."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()


def _write_pid_file(path: Path, identity: Identity) -> None:
    path.write_text(json.dumps({"pid": identity.pid, "startTime": identity.start_time}) + "\n")


def _read_pid_file(path: Path) -> Identity | None:
    try:
        data = json.loads(path.read_text())
        return Identity(int(data["pid"]), int(data["startTime"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # not written by this version: nothing we can safely signal


def recorded(run_dir: Path) -> dict[str, Identity]:
    """Every process recorded in the run directory, running or not, by name."""
    found: dict[str, Identity] = {}
    for pid_file in sorted((run_dir / "pids").glob("*.pid")):
        identity = _read_pid_file(pid_file)
        if identity is not None:
            found[pid_file.stem] = identity
    return found


def alive(run_dir: Path) -> dict[str, Identity]:
    """The recorded processes that are still running."""
    return {name: ident for name, ident in recorded(run_dir).items() if running(ident)}


def stop(run_dir: Path, order: Sequence[str], grace_seconds: float = 10.0) -> list[str]:
    """Stop every recorded process, `order` first (others after), SIGTERM then SIGKILL.

    Returns the names of processes that had to be killed with SIGKILL.
    """
    found = recorded(run_dir)
    names = [name for name in order if name in found] + sorted(set(found) - set(order))
    return [name for name in names if stop_one(run_dir, name, grace_seconds)]


def stop_one(run_dir: Path, name: str, grace_seconds: float = 10.0) -> bool:
    """SIGTERM the recorded process's group, SIGKILL after the grace period, forget it.

    True if it needed SIGKILL. A record whose process is gone is only removed.
    """
    pid_file = run_dir / "pids" / f"{name}.pid"
    identity = _read_pid_file(pid_file)
    killed = False
    if identity is not None and running(identity):
        _signal_group(identity.pid, signal.SIGTERM)
        if not _wait(lambda: not running(identity), grace_seconds):
            if running(identity):
                _signal_group(identity.pid, signal.SIGKILL)
            _wait(lambda: not running(identity), grace_seconds)
            killed = True
    if identity is not None:
        _reap(identity)
    pid_file.unlink(missing_ok=True)
    return killed


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """The group first (its leader is our process, pgid = pid; the kernel does not hand out
    a pid still used as a group id), then the process itself in case it left the group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _reap(identity: Identity) -> None:
    """Collect our own exited child (nothing to do for processes another command started)."""
    child = _CHILDREN.pop(identity, None)
    if child is not None and child.poll() is None:
        _CHILDREN[identity] = child  # still running (it ignored SIGKILL?): keep the handle


def _wait(done: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.05)
    return done()
