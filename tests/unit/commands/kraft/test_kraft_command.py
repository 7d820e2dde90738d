"""``kmigrate kraft``'s option parsing: one line and exit 2 for bad input, before any cluster is asked."""

from __future__ import annotations

import subprocess
import sys

import pytest

from migrate.commands.kraft.connect import parse_voters
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
    (["status", "--zookeeper", "127.0.0.1:9", "--wait-for", "soak"],
     "--wait-for 'soak': choose one of controllers-ready, dual-write, brokers-kraft, finalized"),
    (["status", "--zookeeper", "127.0.0.1:9", "--wait-for", "dual-write", "--check-count", "0"], "--check-count 0"),
    (["status", "--zookeeper", "127.0.0.1:9", "--wait-for", "dual-write", "--timeout", "soon"], "--timeout"),
])
def test_bad_input_exits_2_naming_the_fix(args, message, monkeypatch):
    monkeypatch.delenv("ZOOKEEPER_CONNECT", raising=False)
    r = subprocess.run([sys.executable, "-m", "migrate", "kraft", *args], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in __import__("os").environ.items() if k != "ZOOKEEPER_CONNECT"})
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_controller_settings_follow_the_playbooks_controller_protocol(tmp_path):
    """--controller-command-config as it is; else --command-config's with the playbook's kraft.security_protocol
    (PLAINTEXT: no security settings at all); without a playbook, --command-config's."""
    from types import SimpleNamespace

    from migrate.commands.kraft.connect import controller_settings as _controller_settings

    conf = tmp_path / "client.properties"
    conf.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common."
                    "security.plain.PlainLoginModule required username=\"a\" password=\"b\";\n")
    own = tmp_path / "controller.properties"
    own.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common."
                   "security.plain.PlainLoginModule required username=\"c\" password=\"d\";\n")
    c = ("c1:9093",)
    pb = lambda protocol: SimpleNamespace(kraft=SimpleNamespace(security_protocol=protocol))  # noqa: E731
    assert _controller_settings(None, None, None, c, None) is None
    assert _controller_settings(None, conf, None, c, None).settings["security.protocol"].upper() == "SASL_SSL"
    assert _controller_settings(pb("PLAINTEXT"), conf, None, c, None) is None
    plain = _controller_settings(pb("SASL_PLAINTEXT"), conf, None, c, None)
    assert plain.settings["security.protocol"] == "sasl_plaintext" and plain.settings["sasl.username"] == "a"
    with pytest.raises(BadInput, match="kraft.security_protocol is SASL_SSL: give --controller-command-config"):
        _controller_settings(pb("SASL_SSL"), None, None, c, None)
    mine = _controller_settings(pb("PLAINTEXT"), conf, own, c, None)
    assert mine.settings["sasl.username"] == "c" and mine.bootstrap_servers == "c1:9093"
