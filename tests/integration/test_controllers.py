"""Issue 30: ``kmigrate controllers`` moves the KRaft quorum of a Kafka 4.4.0 sandbox (controllers 3000-3002, the
leader among them) to controllers 3007-3009 (started as observers), under the canary, killed twice and run again.

One module-scoped sandbox (``sandbox up --kraft``, dynamic quorum, brokers 101 and 205), in the order an operator
works: the refusals first (nothing changed: the voters read again after each), a new controller that cannot catch up
(paused: a gate failure, nothing changed), the dry run, the brokers rolled to the old and new controllers, the move
(``--stop-command`` stops each old controller through the sandbox; SIGKILLed after the second add and after the
third removal, then run again to the end), the brokers rolled to the new controllers only, and a last run that finds
nothing to do.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.adapters.kafka import voters as kv
from migrate.runner.canary import Canary
from migrate.sandbox import Sandbox
from migrate.sandbox.layout import CONTROLLER_PORT
from migrate.sandbox.testing import free_ip_prefix, unique_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

OLD = (3000, 3001, 3002)
NEW = (3007, 3008, 3009)
BROKERS = (101, 205)
KAFKA = "4.4.0"


def kmigrate(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@contextmanager
def kraft_sandbox(directory: Path, voters: tuple[int, ...], spares: tuple[int, ...],
                  brokers: tuple[int, ...], kafka: str = KAFKA, static: bool = False,
                  spare_brokers: tuple[int, ...] = (), security: str = "plaintext") -> Iterator[Sandbox]:
    """A ``sandbox up --kraft`` of Kafka ``kafka`` (a dynamic quorum of ``voters``, or a static one, ``spares`` as
    observers; ``spare_brokers`` started empty; ``--security``), always stopped."""
    nodes = len(voters) + len(spares) + len(brokers) + len(spare_brokers)
    proc = kmigrate("sandbox", "up", "--kraft", *(["--static-quorum"] if static else []),
                    "--controller-ids", ",".join(map(str, voters)),
                    "--spare-controller-ids", ",".join(map(str, spares)), "--broker-ids", ",".join(map(str, brokers)),
                    *(["--spare-broker-ids", ",".join(map(str, spare_brokers))] if spare_brokers else []),
                    "--security", security, "--kafka-version", kafka, "--ip-prefix", free_ip_prefix(nodes + 4), "--dir", str(directory),
                    "--output", "json")
    sandbox = Sandbox(directory)
    try:
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield sandbox
    finally:
        sandbox.down()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kraft_sandbox(tmp_path_factory.mktemp("controllers"), OLD, NEW, BROKERS) as sandbox:
        yield sandbox


def address(sandbox: Sandbox, node_id: int) -> str:
    return f"{sandbox.node(f'controller-{node_id}').host}:{CONTROLLER_PORT}"


def controllers_flag(sandbox: Sandbox, ids=OLD) -> str:
    return ",".join(address(sandbox, i) for i in ids)


def voters(sandbox: Sandbox) -> tuple[int, ...]:
    return kv.read_quorum([address(sandbox, i) for i in (*OLD, *NEW)])[1].voter_ids


def stop_command(sandbox: Sandbox) -> str:
    """``--stop-command``: stop the sandbox's controller ``{id}``."""
    return (f"{shlex.quote(sys.executable)} -m migrate sandbox stop controller-{{id}} "
            f"--dir {shlex.quote(str(sandbox.dir))}")


def move_args(sandbox: Sandbox, *extra: str) -> list[str]:
    return ["controllers", "--add", ",".join(map(str, NEW)), "--remove", ",".join(map(str, OLD)),
            "--bootstrap-controller", controllers_flag(sandbox), "--kafka-version", KAFKA,
            "--stop-command", stop_command(sandbox), *extra]


def roll_brokers(sandbox: Sandbox, controllers: tuple[int, ...], brokers: tuple[int, ...] = BROKERS) -> None:
    value = ",".join(address(sandbox, i) for i in controllers)
    for b in brokers:
        r = kmigrate("sandbox", "restart-broker", str(b), "--controller-quorum-bootstrap-servers", value,
                     "--dir", str(sandbox.dir))
        assert r.returncode == 0, r.stderr[-2000:]


def one_line_refusal(r: subprocess.CompletedProcess, says: str) -> None:
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2 and len(lines) == 1 and says in lines[0], (r.returncode, r.stderr[-2000:])


def test_refusals_change_nothing(cluster):
    before = voters(cluster)
    assert before == OLD
    bs = cluster.bootstrap_servers()
    cases = [
        (["--remove", "3000,3001"], "removes a majority at once"),
        (["--add", "3999", "--remove", "3000"], "controller 3999 is neither an observer nor a voter"),
        (["--add", "101", "--remove", "3000"], "controller id 101 is already a broker id"),
        (["--add", "3007", "--remove", "3555"], "controller 3555 is not a voter"),
        (["--add", "3007", "--remove", "3000"], "lacks"),  # the brokers' bootstrap list does not name 3007 yet
    ]
    for args, says in cases:
        r = kmigrate("controllers", *args, "--bootstrap-controller", controllers_flag(cluster), "--bootstrap-server", bs)
        one_line_refusal(r, says)
        assert voters(cluster) == before


def test_a_new_controller_that_does_not_catch_up_is_a_gate_failure(cluster):
    pid = cluster.node("controller-3007").pid
    os.kill(pid, signal.SIGSTOP)
    try:
        r = kmigrate("controllers", "--add", "3007", "--remove", "3000", "--bootstrap-controller",
                     controllers_flag(cluster), "--catch-up-timeout", "6", "--kafka-version", KAFKA)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert r.returncode in (1, 2), r.stderr[-2000:]
    assert ("did not catch up" in r.stderr) if r.returncode == 1 else ("neither an observer" in r.stderr), r.stderr
    assert voters(cluster) == OLD


def test_dry_run_prints_every_step_and_changes_nothing(cluster):
    r = kmigrate(*move_args(cluster, "--dry-run"))
    assert r.returncode == 0, r.stderr[-2000:]
    planned = [line.strip() for line in r.stdout.splitlines() if line.strip()[:2].rstrip(".").isdigit()]
    assert sum("add controller" in s for s in planned) == 3 and sum("remove controller" in s for s in planned) == 3
    assert sum(s.split(". ", 1)[1].startswith("stop controller") for s in planned) == 3, r.stdout
    assert "(the leader)" in r.stdout, r.stdout
    assert voters(cluster) == OLD


def test_the_sandbox_playbook_gives_the_same_dry_run_and_controller_config(cluster):
    """``--playbook`` (the controllers: section ``sandbox up --kraft`` writes) in place of --add, --remove and
    --bootstrap-controller: the same steps, nothing changed; controller-config takes the host and port from it."""
    from migrate.sandbox.kraft_cluster import PLAYBOOK_FILE

    playbook = str(cluster.dir / PLAYBOOK_FILE)
    by_flags = kmigrate(*move_args(cluster, "--dry-run", "-O", "json"))
    by_playbook = kmigrate("controllers", "--playbook", playbook, "--kafka-version", KAFKA, "--dry-run", "-O", "json")
    assert by_flags.returncode == 0 and by_playbook.returncode == 0, (by_flags.stderr[-2000:], by_playbook.stderr[-2000:])
    done = [json.loads(line) for line in by_playbook.stdout.splitlines() if line.startswith("{")][-1]
    assert done["planned"] and done["planned"] == _events(by_flags.stdout)[-1]["planned"], (done, by_flags.stdout)
    assert voters(cluster) == OLD
    r = kmigrate("controllers", "controller-config", "3008", "--playbook", playbook, "--output", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    props = json.loads(r.stdout)["properties"]
    host = cluster.node("controller-3008").host
    assert props["advertised.listeners"] == f"CONTROLLER://{host}:{CONTROLLER_PORT}", props
    assert set(props["controller.quorum.bootstrap.servers"].split(",")) == {address(cluster, i) for i in OLD}


def test_controller_config_of_a_new_controller(cluster):
    from migrate.sandbox.kraft_cluster import KraftCluster

    host = cluster.node("controller-3008").host
    r = kmigrate("controllers", "controller-config", "3008", "--host", host, "--bootstrap-controller",
                 address(cluster, 3001), "--output", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    props, cluster_id = doc["properties"], KraftCluster(cluster).cluster_id()
    assert props["node.id"] == "3008" and props["process.roles"] == "controller"
    assert set(props["controller.quorum.bootstrap.servers"].split(",")) == {address(cluster, i) for i in OLD}
    assert props["advertised.listeners"] == f"CONTROLLER://{host}:{CONTROLLER_PORT}"
    assert doc["cluster_id"] == cluster_id and doc["format_command"][-1] == "--no-initial-controllers"
    assert f"--cluster-id={cluster_id}" in doc["format_command"]
    r = kmigrate("controllers", "controller-config", "3000", "--host", "h", "--bootstrap-controller", address(cluster, 3001))
    one_line_refusal(r, "already a voter")


def _events(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_move_under_the_canary_killed_twice_then_resumed(cluster):
    roll_brokers(cluster, (*OLD, *NEW))
    leader_before = kv.read_quorum([address(cluster, i) for i in OLD])[1].leader_id
    assert leader_before in OLD
    canary = Canary(cluster.client_settings(), topic="controllers-canary", rate_per_s=50).start()
    runs = []
    try:
        deadline = time.monotonic() + 60
        while canary.report().acknowledged < 100 and time.monotonic() < deadline:
            time.sleep(0.2)
        for crash in ("after-add:2", "after-remove:2", None):
            r = kmigrate(*move_args(cluster, "--bootstrap-server", cluster.bootstrap_servers(), "-O", "json"),
                         env={"KMIGRATE_CRASH_AT": crash} if crash else None)
            runs.append(r)
            if crash:
                assert r.returncode == -9, (crash, r.returncode, r.stderr[-2000:])
            else:
                assert r.returncode == 0, r.stderr[-3000:]
    finally:
        report = canary.stop(drain_timeout_s=120)
    done = _events(runs[-1].stdout)[-1]
    assert done["event"] == "done" and tuple(done["voters_after"]) == NEW and done["leader_after"] in NEW, done
    # each run went on from where the last one was killed: every add and removal happened once in all
    steps = [(e["step"], e["controller"]) for r in runs for e in _events(r.stdout) if e["event"] == "step"]
    for kind in ("add", "remove", "stop"):
        done_ids = [c for k, c in steps if k == kind]
        expected = NEW if kind == "add" else OLD
        assert sorted(set(done_ids)) == sorted(expected), steps
    assert sorted(c for k, c in steps if k == "add") == sorted(NEW), steps  # no add sent twice
    assert voters(cluster) == NEW
    for i in OLD:
        assert kv.controller_features(address(cluster, i), timeout_s=2.0) is None, f"controller {i} still answers"
    figures = report.to_dict()
    print("canary across the controller move:", {k: figures[k] for k in ("sent", "acknowledged", "lost",
                                                                          "produce_stall_s")})
    assert report.sent > 100 and report.lost == 0 and report.acknowledged == report.sent, figures


def test_brokers_on_the_new_controllers_only_then_a_rerun_changes_nothing(cluster):
    roll_brokers(cluster, NEW)
    bs = cluster.bootstrap_servers()
    topic = unique_topic("after-move")
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 2, 2)])[topic].result(timeout=60)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(20):
        p.produce(topic, value=b"%d" % i)
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": bs, "group.id": topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 60
    while seen < 20 and time.monotonic() < deadline:
        m = c.poll(1.0)
        seen += m is not None and m.error() is None
    c.close()
    assert seen == 20
    r = kmigrate("controllers", "--add", ",".join(map(str, NEW)), "--remove", ",".join(map(str, OLD)),
                 "--bootstrap-controller", controllers_flag(cluster, NEW), "--bootstrap-server", bs)
    assert r.returncode == 0 and "already done" in r.stdout, r.stdout + r.stderr[-2000:]
    assert voters(cluster) == NEW
