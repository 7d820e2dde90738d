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
    (["status"], "nothing to read: give --zookeeper"),
    (["status", "--bootstrap-server", "127.0.0.1:9", "--wait-for", "dual-write"],
     "--wait-for dual-write is read in ZooKeeper: give --zookeeper"),
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


# ------------------------------------------------------------------ kraft status once ZooKeeper is retired
def _status_in_process(monkeypatch, reading, *args):
    """``kmigrate kraft status ARGS`` in this process, the cluster read replaced by ``reading`` (an Observation)."""
    from typer.testing import CliRunner

    from migrate.commands.kraft.app import app
    from migrate.runner.kraft import observe as runner_observe

    seen = {}

    def fake(connect, auth, settings, known=(), **kw):
        seen.update(connect=connect, optional=kw.get("zookeeper_optional"))
        return reading(connect)

    monkeypatch.delenv("ZOOKEEPER_CONNECT", raising=False)
    monkeypatch.setattr(runner_observe, "observe", fake)
    result = CliRunner().invoke(app, ["status", *args])
    return result, seen


def _retired(flag: bool, why: str = "not reachable"):
    from migrate.core.kraft.phases import Observation, QuorumView

    return lambda connect: Observation(None, (), (), None, None, None, QuorumView(3000, 4, 900, (3000,), (1, 2)), (),
                                       {3000: flag}, zookeeper_unread=why, zookeeper_connect=connect,
                                       broker_modes_read={1: "kraft", 2: "kraft"})


def test_status_finalized_with_zookeeper_stopped_is_exit_0_and_says_zookeeper_was_not_read(monkeypatch):
    import json

    r, seen = _status_in_process(monkeypatch, _retired(False), "--zookeeper", "zk1:2181/kafka", "--bootstrap-server",
                                 "k1:9092")
    assert r.exit_code == 0, r.output
    assert seen == {"connect": "zk1:2181/kafka", "optional": True}
    lines = r.output.splitlines()
    assert lines[0].startswith("phase: finalized: every broker is KRaft (brokers 1, 2)")
    assert "brokers: 1 kraft, 2 kraft" in lines
    assert ("ZooKeeper: not read (not reachable at zk1:2181/kafka): finalized, nothing needs it any more (it can be "
            "retired)") in lines
    r, _ = _status_in_process(monkeypatch, _retired(False), "--zookeeper", "zk1:2181/kafka", "--bootstrap-server",
                              "k1:9092", "--output", "json")
    doc = json.loads(r.output)
    assert r.exit_code == 0 and doc["phase"] == "finalized" and doc["zookeeper"] is None
    assert doc["zookeeper_not_read"] == {"reason": "not reachable", "connect": "zk1:2181/kafka", "needed": False}
    assert doc["brokers"] == {"1": "kraft", "2": "kraft"} and doc["brokers_modes_read"] == {"1": "kraft", "2": "kraft"}


def test_status_without_zookeeper_given_on_a_finalized_cluster_is_exit_0(monkeypatch):
    r, seen = _status_in_process(monkeypatch, _retired(False, "not given"), "--bootstrap-server", "k1:9092")
    assert r.exit_code == 0 and seen["connect"] is None, r.output
    assert "ZooKeeper: not read (not given): finalized, nothing needs it any more" in r.output


def test_status_before_finalize_with_zookeeper_down_is_exit_1_naming_the_connect_string(monkeypatch):
    import json

    r, _ = _status_in_process(monkeypatch, _retired(True), "--zookeeper", "zk1:2181/kafka", "--bootstrap-server", "k1:9092")
    assert r.exit_code == 1, r.output
    first = r.output.splitlines()[0]
    assert first.startswith("phase: unknown: the phase cannot be known without ZooKeeper (not reachable at "
                            "zk1:2181/kafka): controller 3000 still runs with the migration flag"), first
    assert "Traceback" not in r.output
    r, _ = _status_in_process(monkeypatch, _retired(True), "--zookeeper", "zk1:2181/kafka", "--bootstrap-server",
                              "k1:9092", "--output", "json")
    doc = json.loads(r.output)
    assert r.exit_code == 1 and doc["phase"] == "unknown" and doc["zookeeper"] is None
    assert doc["zookeeper_not_read"]["needed"] is True


def test_status_before_finalize_without_zookeeper_given_is_bad_input(monkeypatch):
    r, _ = _status_in_process(monkeypatch, _retired(True, "not given"), "--bootstrap-server", "k1:9092")
    assert isinstance(r.exception, BadInput), r.output  # kmigrate's entry point: one line, exit 2
    assert str(r.exception).startswith("the phase cannot be known without ZooKeeper (not given): controller 3000 still "
                                       "runs with the migration flag")
    assert str(r.exception).endswith("give --zookeeper host:port/chroot (the brokers' zookeeper.connect)")
