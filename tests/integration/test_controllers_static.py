"""Issue 30: a static KRaft quorum on Kafka 4.1 (``controller.quorum.voters``, ``kraft.version`` 0) made dynamic by
``kmigrate controllers upgrade-kraft-version``, then its leader replaced under the canary.

One module-scoped sandbox (``sandbox up --kraft --static-quorum``, Kafka 4.1.2, the first release that converts):
voters 3000-3002, spare controller 3003 (an observer, formatted with ``--no-initial-controllers``), broker 101. In the
order an operator works: the move refused on the static quorum (nothing changed), the upgrade's dry run (nothing
sent), the upgrade (``kraft.version`` 1 read back from the leader, every voter and the broker; the voters' directory
ids appear in DescribeQuorum), a rerun that changes nothing, the broker rolled to the old and new controllers'
``controller.quorum.bootstrap.servers``, the move of the leader to 3003 *while the controllers still run with
``controller.quorum.voters``* (it works at once: seen on 4.1.2 and 4.4.0), then the controllers that stay and the
broker rolled to the bootstrap list, after which the upgrade has nothing left to name.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate.adapters.kafka import voters as kv
from migrate.runner.canary import Canary
from migrate.sandbox import Sandbox
from migrate.sandbox.kraft_cluster import KraftCluster, read_properties

from test_controllers import address, kraft_sandbox

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

OLD = (3000, 3001, 3002)
NEW = 3003
BROKER = 101
KAFKA = "4.1.2"
VOTERS_KEY = "controller.quorum.voters"
BOOTSTRAP_KEY = "controller.quorum.bootstrap.servers"


def kmigrate(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True, timeout=timeout,
                          env=os.environ.copy())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kraft_sandbox(tmp_path_factory.mktemp("controllers-static"), OLD, (NEW,), (BROKER,), kafka=KAFKA,
                       static=True) as sandbox:
        yield sandbox


def controllers_flag(sandbox: Sandbox, ids=OLD) -> str:
    return ",".join(address(sandbox, i) for i in ids)


def look(sandbox: Sandbox) -> kv.ControllerView:
    """The leader's quorum and the finalized kraft.version it reports (read from the cluster every time)."""
    return kv.read_controllers([address(sandbox, i) for i in (*OLD, NEW)])


def broker_kraft_version(sandbox: Sandbox) -> int | None:
    features = kv.broker_finalized_features(sandbox.client_settings())
    return None if features is None else features["kraft.version"]


def upgrade(sandbox: Sandbox, *extra: str, ids=OLD) -> subprocess.CompletedProcess:
    return kmigrate("controllers", "upgrade-kraft-version", "--bootstrap-controller", controllers_flag(sandbox, ids),
                    "--bootstrap-server", sandbox.bootstrap_servers(), *extra)


def node_config(sandbox: Sandbox, name: str) -> dict[str, str]:
    return read_properties(Path(sandbox.node(name).dir) / "server.properties")


def one_line_refusal(r: subprocess.CompletedProcess, *says: str) -> str:
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2 and len(lines) == 1 and all(s in lines[0] for s in says), (r.returncode, r.stderr[-2000:])
    return lines[0]


def test_the_move_is_refused_on_the_static_quorum(cluster):
    before = look(cluster)
    assert before.kraft_version == 0 and before.quorum.voter_ids == OLD
    assert all(v.directory_id is None for v in before.quorum.voters)  # a static voter set has no directory ids
    r = kmigrate("controllers", "--add", str(NEW), "--remove", str(OLD[0]), "--bootstrap-controller",
                 controllers_flag(cluster), "--bootstrap-server", cluster.bootstrap_servers(), "--kafka-version", "4.1")
    one_line_refusal(r, "static", "kmigrate controllers upgrade-kraft-version")
    after = look(cluster)
    assert after.kraft_version == 0 and after.quorum.voter_ids == OLD and after.quorum.observer(NEW) is not None


def test_dry_run_says_what_it_would_send_and_sends_nothing(cluster):
    r = upgrade(cluster, "--dry-run", "-O", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    leader = look(cluster).quorum.leader_id
    assert doc["action"] == "dry-run" and doc["kraft_version_before"] == 0 and doc["release"] == "4.1", doc
    assert doc["request"].startswith("UpdateFeatures kraft.version=1") and f"controller {leader} at" in doc["request"]
    assert doc["static_controllers"] == list(OLD) and doc["static_brokers"] == [BROKER], doc
    assert look(cluster).kraft_version == 0 and broker_kraft_version(cluster) == 0


def test_upgrade_kraft_version_reads_1_back(cluster):
    r = upgrade(cluster)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert "upgraded: kraft.version 0 -> 1" in r.stdout and "next:" in r.stdout, r.stdout
    view = look(cluster)
    assert view.kraft_version == 1 and view.quorum.voter_ids == OLD
    for i in OLD:
        assert kv.kraft_version(address(cluster, i)) == 1
        # the voter set is in the log now, with the directory each voter was formatted with
        assert view.quorum.voter(i).directory_id == KraftCluster(cluster).directory_id(i)
    assert broker_kraft_version(cluster) == 1
    for line in ("controllers 3000, 3001 and 3002: remove controller.quorum.voters", "broker 101: remove"):
        assert line in " ".join(r.stdout.split()), r.stdout


def test_a_rerun_changes_nothing(cluster):
    before = look(cluster)
    r = upgrade(cluster, "-O", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert doc["action"] == "already-dynamic" and doc["request"] == "" and doc["kraft_version_after"] == 1, doc
    assert doc["static_controllers"] == list(OLD) and doc["static_brokers"] == [BROKER]  # not rolled yet: named
    after = look(cluster)
    assert after.kraft_version == 1 and after.quorum.voter_ids == before.quorum.voter_ids
    assert [v.directory_id for v in after.quorum.voters] == [v.directory_id for v in before.quorum.voters]


def test_the_leader_moves_to_the_new_controller_under_the_canary(cluster):
    roll = kmigrate("sandbox", "restart-broker", str(BROKER), "--controller-quorum-bootstrap-servers",
                    controllers_flag(cluster, (*OLD, NEW)), "--dir", str(cluster.dir))
    assert roll.returncode == 0, roll.stderr[-2000:]
    assert VOTERS_KEY not in node_config(cluster, f"kafka-{BROKER}")
    leader = look(cluster).quorum.leader_id
    stop = f"{shlex.quote(sys.executable)} -m migrate sandbox stop controller-{{id}} --dir {shlex.quote(str(cluster.dir))}"
    canary = Canary(cluster.client_settings(), topic="controllers-static-canary", rate_per_s=50).start()
    try:
        deadline = time.monotonic() + 60
        while canary.report().acknowledged < 100 and time.monotonic() < deadline:
            time.sleep(0.2)
        # the new controller's endpoint is given: a controller that joined a static quorum as an observer can stay
        # unregistered (its registration timed out while it could not reach the active controller; seen on 4.1.2)
        r = kmigrate("controllers", "--add", f"{NEW}={address(cluster, NEW)}", "--remove", str(leader), "--bootstrap-controller",
                     controllers_flag(cluster), "--bootstrap-server", cluster.bootstrap_servers(), "--kafka-version",
                     "4.1", "--stop-command", stop)
        assert r.returncode == 0, r.stdout + r.stderr[-3000:]
        time.sleep(2)  # the canary keeps producing on the new leader's quorum
    finally:
        report = canary.stop(drain_timeout_s=60)
    view = look(cluster)
    assert view.quorum.voter_ids == tuple(sorted({*OLD, NEW} - {leader})) and view.quorum.leader_id is not None
    assert kv.controller_features(address(cluster, leader), timeout_s=2.0) is None  # the old leader was stopped
    # the controllers that stay were never rolled: they still run with their static voter list
    assert all(VOTERS_KEY in node_config(cluster, f"controller-{i}") for i in OLD if i != leader)
    figures = report.to_dict()
    print("canary across the leader's move:", {k: figures[k] for k in ("sent", "acknowledged", "lost", "produce_stall_s")})
    assert report.sent > 100 and report.lost == 0 and report.acknowledged == report.sent, figures


def test_after_the_rolls_nothing_is_left(cluster):
    view = look(cluster)
    voters = view.quorum.voter_ids
    value = controllers_flag(cluster, voters)
    for i in voters:
        if i in OLD:
            r = kmigrate("sandbox", "restart-controller", str(i), "--controller-quorum-bootstrap-servers", value,
                         "--dir", str(cluster.dir))
            assert r.returncode == 0, r.stderr[-2000:]
            assert VOTERS_KEY not in node_config(cluster, f"controller-{i}")
    r = kmigrate("sandbox", "restart-broker", str(BROKER), "--controller-quorum-bootstrap-servers", value,
                 "--dir", str(cluster.dir))
    assert r.returncode == 0, r.stderr[-2000:]
    assert node_config(cluster, f"kafka-{BROKER}")[BOOTSTRAP_KEY] == value
    r = upgrade(cluster, ids=voters)
    assert r.returncode == 0 and "already dynamic" in r.stdout and "nothing left" in r.stdout, r.stdout + r.stderr
    after = look(cluster)
    assert after.kraft_version == 1 and after.quorum.voter_ids == voters and broker_kraft_version(cluster) == 1
