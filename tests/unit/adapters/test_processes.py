"""adapters/processes without Java: a detached child, its pid file, finding it by its command line, reaping it."""

from __future__ import annotations

import os
import sys
import time

from migrate.adapters.processes import (
    command_line, find_pid, pid_alive, process_state, read_pid_file, reap, spawn, write_pid_file,
)


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
        assert find_pid(lambda pid: marker in command_line(pid)) == proc.pid
        assert pid_alive(proc.pid) and process_state(proc.pid) in ("R", "S")
    finally:
        os.kill(proc.pid, 9)
    while process_state(proc.pid) not in ("Z", None):
        time.sleep(0.01)
    reap(proc.pid)
    assert process_state(proc.pid) is None
    reap(proc.pid)  # not (or no longer) our child: nothing happens
