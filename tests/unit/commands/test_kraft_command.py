"""``kmigrate kraft``'s option parsing: one line and exit 2 for bad input, before any cluster is asked."""

from __future__ import annotations

import subprocess
import sys

import pytest

from migrate.commands.kraft import parse_voters
from migrate.core.kraft.config import Controller
from migrate.errors import BadInput


def test_controller_quorum_voters_in_kafkas_syntax():
    assert parse_voters("3000@c1:9093, 3001@[::1]:9094") == (Controller(3000, "c1", 9093), Controller(3001, "::1", 9094))


@pytest.mark.parametrize("text", ["c1:9093", "x@c1:9093", ""])
def test_bad_voters_are_one_line(text):
    with pytest.raises(BadInput, match="controller-quorum-voters"):
        parse_voters(text)


@pytest.mark.parametrize("args, message", [
    (["broker-config", "1", "--phase", "zk", "--zookeeper", "127.0.0.1:9"], "--phase 'zk': choose migration"),
    (["controller-config", "3000", "--zookeeper", "127.0.0.1:9", "--controller-quorum-voters", "3000-c1"],
     "expected id@host:port"),
    (["status"], "no ZooKeeper given"),
])
def test_bad_input_exits_2_naming_the_fix(args, message, monkeypatch):
    monkeypatch.delenv("ZOOKEEPER_CONNECT", raising=False)
    r = subprocess.run([sys.executable, "-m", "migrate", "kraft", *args], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in __import__("os").environ.items() if k != "ZOOKEEPER_CONNECT"})
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
