"""``kmigrate controllers``: bad input is one line, exit 2, before any cluster is asked (the controller address
given is closed: a command that asked it would fail with exit 1, not 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from migrate.commands.controllers.app import _release, parse_adds
from migrate.core.controllers.plan import NewController
from migrate.errors import BadInput

CLOSED = "127.0.0.1:1"


def run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_BOOTSTRAP")}
    return subprocess.run([sys.executable, "-m", "migrate", "controllers", *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize("args, says", [
    (["--add", "7,8", "--remove", "1", "--bootstrap-controller", CLOSED], "give as many of each"),
    (["--add", "7", "--remove", "1"], "--bootstrap-controller"),
    (["--add", "x", "--remove", "1", "--bootstrap-controller", CLOSED], "--add 'x'"),
    (["--add", "7=c7", "--remove", "1", "--bootstrap-controller", CLOSED, "--stop-command", "stop {name}"], "{id}"),
    (["--add", "7", "--remove", "7", "--bootstrap-controller", CLOSED], "both added and removed"),
    (["--add", "7", "--remove", "1", "--bootstrap-controller", CLOSED, "--kafka-version", "four"], "--kafka-version"),
    (["--add", "7", "--remove", "1", "--bootstrap-controller", CLOSED, "--catch-up-timeout", "0"], "--catch-up-timeout"),
    (["--bootstrap-controller", CLOSED], "nothing to do"),
    (["--add", "7", "--remove", "1", "--bootstrap-controller", "c1:port"], "--bootstrap-controller"),
])
def test_bad_input_is_one_line_and_exit_2(args, says):
    r = run(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and not r.stdout, r.stderr


def test_adds_take_ids_ranges_and_endpoints():
    assert parse_adds(["7-8", "9=c9:19093"], "CONTROLLER") == (7, 8, NewController(9, "c9", 19093, "CONTROLLER"))
    with pytest.raises(BadInput, match="id=host:port"):
        parse_adds(["x=c9:9093"], "CONTROLLER")


def test_release():
    assert _release("4.1.1") == (4, 1) and _release("3.9") == (3, 9) and _release(None) is None
