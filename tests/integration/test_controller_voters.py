"""The KIP-853 adapters (migrate.adapters.kafka.voters) against a real dynamic KRaft quorum of Kafka 3.9.2, and the
core's catch-up gate and planner on what it shows.

One module-scoped quorum, no broker: controller 1 formatted ``--standalone`` (the one voter), controller 2 formatted
``--no-initial-controllers`` with ``controller.quorum.bootstrap.servers`` naming controller 1, as
``kmigrate controllers controller-config 2`` renders it: it starts as an observer. The tests run in order: read, gate,
add, the refused changes, remove the leader, unregister. Beside it, controller 3 alone in a static quorum
(``controller.quorum.voters``, formatted without a quorum flag): ``kraft.version`` 0, and AddRaftVoter refused.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from migrate.adapters.jars import ensure_distribution
from migrate.adapters.kafka import voters
from migrate.core.controllers.config import ControllerInputs, format_command, new_controller_config
from migrate.core.controllers.gate import CatchUpWatch
from migrate.core.controllers.plan import ControllerChange, NewController, StepKind, check_request, next_step
from migrate.core.controllers.quorum import Endpoint, Reading
from migrate.core.kraft.config import format_command as kraft_format_command
from migrate.errors import BadInput, StepFailed
from migrate.sandbox.launch import port_free
from migrate.sandbox.layout import log4j_properties
from migrate.sandbox.testing import free_ip_prefix, stop_process
from migrate.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PORT = 9093
JVM = ["-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def _cluster_id() -> str:
    """A random id that begins with '-', as one in 64 of the ids ZooKeeper-mode brokers generate do: the format
    command kmigrate prints must take it whole (``-t -Ab...`` made StorageTool read it as an option)."""
    while not (text := voters.kafka_uuid(uuid.uuid4())).startswith("-"):
        pass
    return text


def _write(path: Path, props: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    """(address of 1, address of 2, controller 2's home, the cluster id); both controllers stopped at the end."""
    dist = ensure_distribution()
    prefix = free_ip_prefix(2)
    hosts = {1: f"{prefix}.1", 2: f"{prefix}.2"}
    assert all(port_free(h, PORT) for h in hosts.values())
    cluster_id = _cluster_id()
    first = Endpoint("CONTROLLER", hosts[1], PORT)
    procs = []
    try:
        for node, mode in ((1, "--standalone"), (2, "--no-initial-controllers")):
            home = tmp_path_factory.mktemp(f"controller-{node}")
            props = new_controller_config(ControllerInputs(cluster_id, (first,), metadata_log_dir=str(home / "metadata")),
                                          NewController(node, hosts[node], PORT))
            _write(home / "server.properties", props)
            (home / "log4j.properties").write_text(log4j_properties(str(home / "server.log")))
            jvm = [*JVM, f"-Dlog4j.configuration=file:{home / 'log4j.properties'}"]
            args = format_command(cluster_id, str(home / "server.properties"))[1:]
            if mode == "--standalone":
                args[-1] = mode  # the first voter of a new quorum
            subprocess.run(dist.java_command("kafka.tools.StorageTool", args, jvm), check=True, capture_output=True,
                           timeout=120)
            procs.append(subprocess.Popen(dist.java_command("kafka.Kafka", [str(home / "server.properties")], jvm),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            log = home / "server.log"
            wait_until(lambda: procs[-1].poll() is None and log.exists() and "Kafka Server started" in log.read_text(),
                       timeout_s=90, interval_s=0.5, what=f"controller {node}")
        yield f"{hosts[1]}:{PORT}", f"{hosts[2]}:{PORT}", home, cluster_id
    finally:
        for proc in procs:
            stop_process(proc)


def _directory_id(home: Path) -> str:
    meta = (home / "metadata" / "meta.properties").read_text().splitlines()
    return next(line.split("=", 1)[1] for line in meta if line.startswith("directory.id="))


def _observed(addresses):
    view = voters.read_controllers(addresses, timeout_s=5)
    return view if view.quorum.observer(2) is not None else None


def test_describe_quorum_v2_shows_the_observer_with_its_directory_id(quorum):
    a1, a2, home2, cluster_id = quorum
    view = wait_until(lambda: _observed([a2]), timeout_s=30, interval_s=0.5, what="observer 2", retry_on=(StepFailed,))  # found from 2 alone
    assert view.leader == a1 and view.kraft_version == 1
    q = view.quorum
    assert q.voter_ids == (1,) and q.leader_id == 1 and q.observer_ids == (2,)
    assert q.observer(2).directory_id == _directory_id(home2)
    assert q.endpoints(1) == (Endpoint("CONTROLLER", a1.rsplit(":", 1)[0], PORT),)
    assert voters.describe_cluster_controllers(a2)["cluster_id"] == cluster_id


def test_the_gate_passes_and_the_planner_says_add(quorum):
    a1, a2, _, _ = quorum
    watch = CatchUpWatch(2, needed=3)
    wait_until(lambda: watch.observe(voters.read_quorum([a1])[1]), timeout_s=30, interval_s=0.3, what="gate")
    reading = Reading(voters.read_quorum([a1])[1], voters.kraft_version(a1), (3, 9))
    change = ControllerChange((NewController(2, a2.rsplit(":", 1)[0], PORT),), (1,))
    check_request(reading, change)
    step = next_step(reading, change, caught_up={2})
    assert (step.kind, step.node_id, step.directory_id) == (StepKind.ADD, 2, watch.directory_id)


def test_a_wrong_directory_id_is_not_added(quorum):
    a1, a2, _, _ = quorum
    with pytest.raises(voters.VoterChangeError) as e:
        voters.add_voter([a1], 2, voters.kafka_uuid(uuid.uuid4()), Endpoint("CONTROLLER", a2.rsplit(":", 1)[0], PORT),
                         timeout_s=10)
    assert e.value.error == "REQUEST_TIMED_OUT" and e.value.retriable, e.value.message
    assert voters.read_quorum([a1])[1].voter_ids == (1,)


def test_add_raft_voter_makes_the_observer_a_voter_and_a_second_add_is_duplicate(quorum):
    a1, a2, home2, _ = quorum
    directory = _directory_id(home2)
    endpoint = Endpoint("CONTROLLER", a2.rsplit(":", 1)[0], PORT)
    voters.add_voter([a2, a1], 2, directory, endpoint)  # a2 is a follower: the leader is found
    q = voters.read_quorum([a1])[1]
    assert q.voter_ids == (1, 2) and q.voter(2).directory_id == directory
    with pytest.raises(voters.VoterChangeError) as e:
        voters.add_voter([a1], 2, directory, endpoint)
    assert e.value.error == "DUPLICATE_VOTER" and not e.value.retriable
    assert e.value.message.startswith("adding controller 2 to the voters: it is already a voter")


def test_remove_raft_voter_of_an_unknown_voter_is_refused(quorum):
    a1, _, home2, _ = quorum
    with pytest.raises(voters.VoterChangeError) as e:
        voters.remove_voter([a1], 5, _directory_id(home2))
    assert e.value.error == "VOTER_NOT_FOUND"


def test_remove_raft_voter_removes_the_leader_and_the_other_leads(quorum):
    a1, a2, _, _ = quorum
    q = voters.read_quorum([a1, a2])[1]
    voters.remove_voter([a1, a2], 1, q.voter(1).directory_id)
    view = wait_until(lambda: (v := voters.read_controllers([a1, a2])).quorum.leader_id == 2 and v, timeout_s=30,
                      interval_s=0.5, what="controller 2 leads", retry_on=(StepFailed,))
    assert view.quorum.voter_ids == (2,) and view.leader == a2


def test_unregister_an_unknown_broker_says_so(quorum):
    _, a2, _, _ = quorum
    with pytest.raises(voters.VoterChangeError) as e:
        voters.unregister_broker([a2], 42)
    assert e.value.error == "BROKER_ID_NOT_REGISTERED"


@pytest.fixture(scope="module")
def static_controller(quorum, tmp_path_factory):
    """The address of controller 3, the one voter of a static quorum of its own (started after the dynamic one)."""
    dist = ensure_distribution()
    host = f"{quorum[0].rsplit('.', 1)[0]}.3"
    assert port_free(host, PORT)
    home = tmp_path_factory.mktemp("controller-3")
    props = {"process.roles": "controller", "node.id": "3", "controller.quorum.voters": f"3@{host}:{PORT}",
             "controller.listener.names": "CONTROLLER", "listeners": f"CONTROLLER://{host}:{PORT}",
             "listener.security.protocol.map": "CONTROLLER:PLAINTEXT", "log.dirs": str(home / "metadata")}
    _write(home / "server.properties", props)
    (home / "log4j.properties").write_text(log4j_properties(str(home / "server.log")))
    jvm = [*JVM, f"-Dlog4j.configuration=file:{home / 'log4j.properties'}"]
    args = kraft_format_command(_cluster_id(), str(home / "server.properties"))[1:]
    subprocess.run(dist.java_command("kafka.tools.StorageTool", args, jvm),
                   check=True, capture_output=True, timeout=120)
    proc = subprocess.Popen(dist.java_command("kafka.Kafka", [str(home / "server.properties")], jvm),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        log = home / "server.log"
        wait_until(lambda: proc.poll() is None and log.exists() and "Kafka Server started" in log.read_text(),
                   timeout_s=90, interval_s=0.5, what="controller 3")
        yield f"{host}:{PORT}"
    finally:
        stop_process(proc)


def test_a_static_quorum_reads_kraft_version_0_and_refuses_a_voter_change(static_controller):
    address = static_controller
    view = wait_until(lambda: voters.read_controllers([address]), timeout_s=30, interval_s=0.5, what="controller 3",
                      retry_on=(StepFailed,))
    assert view.kraft_version == 0 and view.quorum.voter_ids == (3,)
    with pytest.raises(BadInput, match="controller quorum is static") as e:
        check_request(Reading(view.quorum, view.kraft_version, (3, 9)),
                      ControllerChange((NewController(4, "c4", PORT),), (3,)))
    assert "kmigrate mirror" in e.value.message
    with pytest.raises(BadInput, match="the quorum is static"):
        voters.add_voter([address], 4, voters.kafka_uuid(uuid.uuid4()), Endpoint("CONTROLLER", "127.0.0.1", PORT))
