"""The local cluster's process records: a process is ours from the moment it exists, and
only ours (no unit under test here is mocked: real processes, real /proc)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from cold_binaries import cold_copy
from phalanx.cluster import processes

SLEEP = Path(shutil.which("sleep") or "/bin/sleep")


def wait_until(condition: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_a_process_started_from_a_cold_binary_is_alive_and_ours_at_once(tmp_path: Path) -> None:
    """Right after the spawn, while the kernel still loads the binary from disk (its command
    line reads empty), the process is judged running and ours, and stop() ends it."""
    binary = cold_copy(SLEEP, tmp_path / "cold-sleep")
    run_dir = tmp_path / "run"
    started = processes.start("sleeper", [str(binary), "600"], run_dir, die_with_parent=True)
    assert processes.running(started.identity)
    assert processes.alive(run_dir) == {"sleeper": started.identity}
    assert processes.stop(run_dir, ["sleeper"]) == []  # SIGTERM was enough
    assert not processes.running(started.identity)
    assert started.exit_code() == -signal.SIGTERM
    assert processes.recorded(run_dir) == {}


def test_back_to_back_starts_and_stops_leave_nothing_running(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    everything: list[processes.Started] = []
    for round_ in range(5):
        names = [f"p{index}" for index in range(3)]
        started = [
            processes.start(
                name, [str(cold_copy(SLEEP, tmp_path / f"sleep-{round_}-{name}")), "600"],
                run_dir, die_with_parent=True,
            )
            for name in names
        ]
        everything += started
        assert set(processes.alive(run_dir)) == set(names)
        processes.stop(run_dir, list(reversed(names)))
        assert processes.alive(run_dir) == {}
    assert not [s.name for s in everything if processes.running(s.identity)]


def test_a_reused_pid_is_never_signalled(tmp_path: Path) -> None:
    """A record whose pid now belongs to another process (here: this test's own) is not ours."""
    run_dir = tmp_path / "run"
    (run_dir / "pids").mkdir(parents=True)
    me = processes.identity_of(os.getpid())
    assert me is not None and processes.running(me)
    stranger = processes.Identity(me.pid, me.start_time - 1)
    (run_dir / "pids" / "old.pid").write_text(
        f'{{"pid": {stranger.pid}, "startTime": {stranger.start_time}}}\n'
    )
    assert not processes.running(stranger)
    assert processes.alive(run_dir) == {}
    assert processes.stop_one(run_dir, "old") is False  # we are still here to assert it
    assert not (run_dir / "pids" / "old.pid").exists()


def test_an_exited_process_is_not_alive_and_tells_its_exit_code(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    started = processes.start("quitter", ["sh", "-c", "exit 7"], run_dir, die_with_parent=True)
    assert wait_until(lambda: not processes.running(started.identity))
    assert processes.alive(run_dir) == {}
    assert started.exit_code() == 7
    assert set(processes.recorded(run_dir)) == {"quitter"}  # the record stays until stop()
    processes.stop(run_dir, [])
    assert processes.recorded(run_dir) == {}


def test_a_process_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    started = processes.start(
        "stubborn", ["sh", "-c", "trap '' TERM; echo trapped; while :; do sleep 1; done"],
        run_dir, die_with_parent=True,
    )
    assert wait_until(lambda: "trapped" in started.log.read_text())  # SIGTERM now ignored
    assert processes.stop(run_dir, [], grace_seconds=0.5) == ["stubborn"]
    assert not processes.running(started.identity)


@pytest.mark.parametrize("text", ["12345\n", "not json", '{"pid": 1}'])
def test_records_we_cannot_read_are_never_signalled(tmp_path: Path, text: str) -> None:
    (tmp_path / "pids").mkdir()
    (tmp_path / "pids" / "x.pid").write_text(text)
    assert processes.recorded(tmp_path) == {}
    assert processes.stop_one(tmp_path, "x") is False


LINGERING = """\
import ctypes, os, pathlib, sys, threading, time
release = pathlib.Path(sys.argv[1])
def last_thread():
    while not release.exists():
        time.sleep(0.01)
    os._exit(3)
threading.Thread(target=last_thread).start()
ctypes.CDLL("libc.so.6").pthread_exit(None)  # the main thread ends first, as in Go programs
"""


def test_a_program_whose_main_thread_ended_first_is_gone_and_its_code_is_waited_for(
    tmp_path: Path,
) -> None:
    """The main thread shows as a zombie while another thread still runs: the process counts
    as exiting, and its exit code arrives once the last thread is gone."""
    run_dir, release = tmp_path / "run", tmp_path / "release"
    started = processes.start("lingering", [sys.executable, "-c", LINGERING, str(release)],
                              run_dir, die_with_parent=True)
    assert wait_until(lambda: not processes.running(started.identity))
    assert started.exit_code() is None  # not collectable yet: a thread is still there
    release.touch()
    assert started.exit_code(wait=10.0) == 3
