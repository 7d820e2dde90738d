"""adapters/processes without Java: a detached child, its pid file, finding it by its command line, reaping it,
what counts as alive, and terminate (SIGTERM, SIGKILL after the timeout, a paused process, a process group)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from migrate.adapters.processes import (
    command_line, find_pid, pid_alive, process_state, read_pid_file, reap, spawn, stopped, terminate, write_pid_file,
)
from migrate.waiting import poll


def test_a_spawned_process_runs_detached_with_its_output_in_the_log(tmp_path):
    proc = spawn([sys.executable, "-c", "import os; print('hello', os.getsid(0) == os.getpid(), flush=True)"],
                 tmp_path, tmp_path / "out.log")
    assert proc.wait(timeout=30) == 0
    assert (tmp_path / "out.log").read_text() == "hello True\n"  # its own session


def test_a_pid_file_is_written_whole_and_read_back(tmp_path):
    assert read_pid_file(tmp_path / "x.pid") is None
    write_pid_file(tmp_path / "x.pid", 1234)
    assert read_pid_file(tmp_path / "x.pid") == 1234 and (tmp_path / "x.pid").read_text() == "1234\n"
    assert not (tmp_path / "x.pid.tmp").exists()
    (tmp_path / "x.pid").write_text("not a pid\n")
    assert read_pid_file(tmp_path / "x.pid") is None


def test_a_process_is_found_by_its_command_line_and_reaped_once_it_exits(tmp_path):
    marker = str(tmp_path / "marker")
    proc = spawn([sys.executable, "-c", "import time; time.sleep(60)",
                  marker], tmp_path, tmp_path / "out.log")
    try:
        found, deadline = None, time.monotonic() + 30
        while found is None and time.monotonic() < deadline:  # until exec, the child's command line is ours
            found = find_pid(lambda pid: marker in command_line(pid))
        assert found == proc.pid
        assert pid_alive(proc.pid) and process_state(proc.pid) in ("R", "S")
    finally:
        os.kill(proc.pid, 9)
    while process_state(proc.pid) not in ("Z", None):
        time.sleep(0.01)
    reap(proc.pid)
    assert process_state(proc.pid) is None
    reap(proc.pid)  # not (or no longer) our child: nothing happens
    proc.poll()


def _child(code: str, tmp_path) -> subprocess.Popen:
    return spawn([sys.executable, "-c", code], tmp_path, tmp_path / "out.log")


def _wait_for(path, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_a_zombie_is_not_alive(tmp_path):
    proc = _child("pass", tmp_path)
    while process_state(proc.pid) != "Z":
        time.sleep(0.01)
    assert not pid_alive(proc.pid)
    proc.wait()
    assert not pid_alive(proc.pid) and not pid_alive(0) and not pid_alive(-1)


def test_terminate_ends_a_process_with_sigterm_and_collects_it(tmp_path):
    proc = _child("import time; time.sleep(60)", tmp_path)
    [result] = terminate(proc.pid, timeout_s=20)
    assert (result.pid, result.how) == (proc.pid, "SIGTERM") and result.waited_s < 20
    assert process_state(proc.pid) is None  # reaped: no zombie left
    proc.poll()


def test_terminate_kills_what_outlives_the_timeout_and_resumes_a_paused_process(tmp_path):
    stubborn = _child("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                      "open('ready', 'w').close(); time.sleep(60)", tmp_path)
    paused = _child("import time; time.sleep(60)", tmp_path)
    os.kill(paused.pid, signal.SIGSTOP)
    _wait_for(tmp_path / "ready")
    results = terminate(stubborn.pid, paused.pid, timeout_s=1)
    assert [(r.pid, r.how) for r in results] == [(stubborn.pid, "SIGKILL"), (paused.pid, "SIGTERM")]
    assert 1 <= results[0].waited_s < 11
    assert process_state(stubborn.pid) is None and process_state(paused.pid) is None
    stubborn.poll(), paused.poll()


def test_terminate_with_group_ends_what_the_process_started(tmp_path):
    leader = _child("import os, subprocess, sys, time; "
                    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                    "open('child.tmp', 'w').write(str(c.pid)); os.replace('child.tmp', 'child'); time.sleep(60)",
                    tmp_path)
    _wait_for(tmp_path / "child")
    grandchild = int((tmp_path / "child").read_text())
    [result] = terminate(leader.pid, timeout_s=20, group=True)
    assert result.how == "SIGTERM"
    leader.poll()
    deadline = time.monotonic() + 20
    while pid_alive(grandchild):  # reparented when the leader ended: another process collects it
        assert time.monotonic() < deadline, "the leader's child outlived its group's SIGTERM"
        time.sleep(0.05)


def test_terminate_of_a_process_already_gone_is_no_error(tmp_path):
    proc = _child("pass", tmp_path)
    proc.wait()
    assert [r.how for r in terminate(proc.pid, timeout_s=1)] == ["SIGTERM"]


def test_stopped_is_true_only_once_every_thread_has_stopped(tmp_path):
    script = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\ntime.sleep(60)\n"
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        assert poll(lambda: len(os.listdir(f"/proc/{child.pid}/task")) >= 2, timeout_s=10, interval_s=0.05)
        assert not stopped(child.pid)
        os.kill(child.pid, signal.SIGSTOP)
        assert poll(lambda: stopped(child.pid), timeout_s=10, interval_s=0.05)
        os.kill(child.pid, signal.SIGCONT)
        assert poll(lambda: not stopped(child.pid), timeout_s=10, interval_s=0.05)
    finally:
        child.kill()
        child.wait()
    assert not stopped(child.pid)  # gone


def test_terminate_never_signals_a_later_process_given_the_same_pid(tmp_path, monkeypatch):
    """A pid whose process ended is taken by another (or by a thread of another: ids are shared): terminate holds
    each pid to the process it named when it began, by its start time."""
    from migrate.adapters import processes

    ignores_sigterm = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", ignores_sigterm], stdout=subprocess.PIPE)
    assert proc.stdout.readline()  # its handler is in place: SIGTERM alone would not end it
    sent = []
    real_send = processes._send
    monkeypatch.setattr(processes, "_send", lambda send, pid, sig: (sent.append(sig), real_send(send, pid, sig)))
    born = processes.start_time(proc.pid)
    assert born is not None and processes.start_time(2**22 + 7) is None
    # the process "ends" and its pid now names a later one: another start time from the second look on
    looks = iter([born])
    monkeypatch.setattr(processes, "start_time", lambda pid: next(looks, born + 1))
    try:
        [result] = terminate(proc.pid, timeout_s=1)
        assert signal.SIGKILL not in sent, sent  # the "later" process was never killed
        assert result.waited_s < 1  # seen as ended at the first look
        assert proc.poll() is None  # the process the pid first named was not killed either: it ignores SIGTERM
    finally:
        proc.kill()
        proc.wait()


def test_a_thread_id_is_not_a_live_process():
    """Thread ids share the pids' numbers and kill() accepts them: a pid that came back as another program's
    thread must not count as the process kmigrate started."""
    import threading

    ready, done = threading.Event(), threading.Event()
    ids = []

    def run():
        ids.append(threading.get_native_id())
        ready.set()
        done.wait(30)

    t = threading.Thread(target=run)
    t.start()
    try:
        assert ready.wait(10)
        assert ids[0] != os.getpid() and os.path.exists(f"/proc/{ids[0]}/stat")  # /proc answers for the thread
        assert not pid_alive(ids[0])
        assert pid_alive(os.getpid())
    finally:
        done.set()
        t.join()
