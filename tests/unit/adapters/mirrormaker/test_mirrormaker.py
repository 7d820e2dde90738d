"""adapters/mirrormaker without Java: the pid file, a stale one, a process found by its command line, the properties' mode."""

from __future__ import annotations

import os
import subprocess
import sys

from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess


def test_a_pid_file_naming_another_program_is_stale_and_removed(tmp_path):
    mm = MirrorMakerProcess(tmp_path)
    (tmp_path / "mm2.pid").write_text(f"{os.getpid()}\n")  # alive, but not this directory's MirrorMaker
    assert mm.pid() is None
    assert not (tmp_path / "mm2.pid").exists()
    assert mm.stop().how == "not running"


def test_a_process_naming_the_properties_is_found_without_a_pid_file(tmp_path):
    mm = MirrorMakerProcess(tmp_path)
    mm.write_properties("clusters = source, target\n")
    assert (tmp_path / "mm2.properties").stat().st_mode & 0o777 == 0o600
    # a stand-in with MirrorMaker's main class and this properties file on its command line
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                              "org.apache.kafka.connect.mirror.MirrorMaker", str(mm.properties_path.resolve())])
    try:
        assert mm.pid() == child.pid
        assert (tmp_path / "mm2.pid").read_text().strip() == str(child.pid)
        result = mm.stop(timeout_s=10)
        assert (result.pid, result.how) == (child.pid, "SIGTERM")
        assert mm.pid() is None and not (tmp_path / "mm2.pid").exists()
        assert not os.path.exists(f"/proc/{child.pid}") or open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
