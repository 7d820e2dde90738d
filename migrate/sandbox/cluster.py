"""Start, inspect, fault and stop a real local Kafka + ZooKeeper cluster.

Each node is one detached JVM process (its own session), so a sandbox outlives the command
that started it. ``state.json`` in the sandbox directory records every node, its address and
pid; it is written after each process starts, so ``down`` can clean up after a crash mid-``up``.
A pid is only signalled when its command line names that node's directory (no stray kills
after pid reuse).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import javaproperties

from migrate.adapters.zookeeper import fourletter
from migrate.adapters.processes import command_line, process_state
from migrate.adapters.jars import (
    KAFKA_MAIN, KAFKA_VERSION, ZOOKEEPER_MAIN, ZOOKEEPER_VERSION, Distribution, cache_dir, ensure_distribution,
)
from migrate.errors import BadInput, StepFailed
from migrate.waiting import poll, wait_until
from migrate.sandbox import security as sandbox_security
from migrate.sandbox.layout import BrokerNode, SandboxSpec, ZkNode, log4j_properties, server_properties, zoo_cfg
from migrate.files import write_private
from migrate.sandbox.security import SandboxSecurity

STATE_FILE = "state.json"
TARGET_DIR = "target"  # the second, separate cluster of ``sandbox up --target-cluster``
STATE_VERSION = 1


def default_sandbox_dir() -> Path:
    """$KMIGRATE_SANDBOX_DIR, else ``<kmigrate cache>/sandbox``."""
    env = os.environ.get("KMIGRATE_SANDBOX_DIR")
    return Path(env) if env else cache_dir() / "sandbox"


def _port_free(host: str, port: int) -> bool:
    """True when a server could listen on ``host:port`` now.

    The probe binds as the servers do, with ``SO_REUSEADDR``: connections of a stopped server still in
    TIME_WAIT do not keep its port (Java's servers bind over them); a socket listening there does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _zookeeper(hosts: str, timeout_s: float, auth: list[tuple[str, str]] | None = None):
    """A ZooKeeper session (``migrate.adapters.zookeeper.client``); BadInput when no server answers in time."""
    from migrate.adapters.zookeeper.client import ZooKeeper  # kazoo loads when a sandbox is asked, not at every start

    return ZooKeeper.connect(hosts, auth=auth, timeout_s=timeout_s)


def fetch_jars(kafka_version: str = KAFKA_VERSION, zookeeper_version: str = ZOOKEEPER_VERSION):
    """The servers' jars and Spark's Kafka source, fetched from Maven Central into the cache once
    (``kmigrate sandbox fetch``): ``(Distribution, KafkaSourceJars)``."""
    from migrate.adapters.spark.session import kafka_source_jars
    from migrate.core.versions import check_kafka_version, check_zookeeper_version

    dist = ensure_distribution(check_kafka_version(kafka_version), check_zookeeper_version(zookeeper_version))
    return dist, kafka_source_jars()


@dataclass
class NodeState:
    kind: str  # "zookeeper" | "kafka"
    id: int
    host: str
    dir: str
    pid: int | None = None
    spare: bool = False  # spare broker / ZooKeeper joiner

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.id}"


def _zookeeper_role(mode: str, server_id: int, joiner: bool, members: dict[int, str] | None) -> str:
    """The role ``sandbox status`` shows: the server's own mode (srvr), unless the committed config says
    more. A joiner (a spare server, started with the committed config plus itself as an observer) follows
    without a vote until a reconfig makes it a participant; srvr calls it a follower. A server the
    committed config no longer lists, and that was no joiner, was removed by a reconfig."""
    if mode == "stopped" or members is None:
        return mode
    role = members.get(server_id)
    if role is None and not joiner:
        return "removed"  # running, often no longer serving: out of the ensemble either way
    if mode == "not serving":
        return mode
    if role is None:
        return "non-voting follower (joiner)"
    if role == "observer":
        return "non-voting follower (joiner)" if joiner else "non-voting follower (observer)"
    return mode


class Sandbox:
    """A sandbox cluster in ``directory``. Methods are safe to call from another process than the one that started it."""

    def __init__(self, directory: Path | str | None = None):
        self.dir = Path(directory) if directory else default_sandbox_dir()
        self.spec: SandboxSpec | None = None
        self.nodes: dict[str, NodeState] = {}
        self._children: dict[int, subprocess.Popen] = {}
        self._dists: dict[tuple[str, str], Distribution] = {}
        self.started_s: dict[str, float] = {}
        if (self.dir / STATE_FILE).exists():
            self._load()

    # ----------------------------------------------------------------- state
    def _load(self) -> None:
        try:
            raw = json.loads((self.dir / STATE_FILE).read_text())
            if raw.get("version") != STATE_VERSION:
                raise ValueError("version")
            spec = dict(raw["spec"])
            for key in ("zookeeper_ids", "spare_zookeeper_ids", "broker_ids", "spare_broker_ids"):
                spec[key] = tuple(spec[key])
            self.spec = SandboxSpec(**spec)
            self.nodes = {n["kind"] + "-" + str(n["id"]): NodeState(**n) for n in raw["nodes"]}
        except (ValueError, KeyError, TypeError) as exc:
            raise BadInput(
                f"{self.dir / STATE_FILE} is not a kmigrate sandbox state file ({exc}): remove it or choose another --dir"
            ) from None

    def _save(self) -> None:
        assert self.spec is not None
        self.dir.mkdir(parents=True, exist_ok=True)
        raw = {"version": STATE_VERSION, "spec": asdict(self.spec), "nodes": [asdict(n) for n in self.nodes.values()]}
        tmp = self.dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(raw, indent=2, sort_keys=True))
        tmp.replace(self.dir / STATE_FILE)

    @property
    def exists(self) -> bool:
        return self.spec is not None

    def _require(self) -> SandboxSpec:
        if self.spec is None:
            raise BadInput(f"no sandbox in {self.dir}: start one with kmigrate sandbox up")
        return self.spec

    def node(self, name: str) -> NodeState:
        """A node by name (``kafka-4``, ``zookeeper-2``); BadInput naming the known ones otherwise."""
        self._require()
        if name not in self.nodes:
            raise BadInput(f"unknown node {name!r}: this sandbox has {', '.join(self.nodes)}")
        return self.nodes[name]

    @property
    def security(self) -> SandboxSecurity | None:
        """The users, certificates and stores of a secured sandbox (None when it is plaintext)."""
        spec = self._require()
        return sandbox_security.load(spec.security, self.dir / "security")

    def kafka_settings(self, user: str = "admin") -> dict[str, str]:
        """librdkafka settings for ``user`` on this sandbox (empty when it is plaintext)."""
        sec = self.security
        return sec.librdkafka(user) if sec else {}

    def client_settings(self, bootstrap: str | None = None, user: str = "admin"):
        """``ClientSettings`` of ``user`` on this sandbox's brokers (all of them unless ``bootstrap``)."""
        from migrate.core.clientconfig import ClientSettings

        return ClientSettings(bootstrap or self.bootstrap_servers(), self.kafka_settings(user))

    def _zookeeper_auth(self) -> list[tuple[str, str]] | None:
        sec = self.security
        return sec.zookeeper_auth() if sec else None

    @property
    def dist(self) -> Distribution:
        """The jars of the sandbox's releases: its ZooKeeper servers, and its brokers but those
        ``broker_kafka_versions`` puts on another release (:meth:`broker_dist`)."""
        spec = self.spec
        return self._dist_of(spec.kafka_version if spec else KAFKA_VERSION,
                             spec.zookeeper_version if spec else ZOOKEEPER_VERSION)

    def broker_dist(self, broker_id: int) -> Distribution:
        """The jars broker ``broker_id`` runs (its own Kafka release in a rolling upgrade)."""
        spec = self._require()
        return self._dist_of(spec.kafka_version_of(broker_id), spec.zookeeper_version)

    def _dist_of(self, kafka_version: str, zookeeper_version: str) -> Distribution:
        key = (kafka_version, zookeeper_version)
        if key not in self._dists:
            self._dists[key] = ensure_distribution(kafka_version, zookeeper_version)
        return self._dists[key]

    # ------------------------------------------------------------- processes
    def is_alive(self, name: str) -> bool:
        node = self.nodes[name]
        if node.pid is None:
            return False
        child = self._children.get(node.pid)
        if child is not None:
            # Our own child: trust poll(). (Between fork and exec its cmdline is still ours, not the JVM's.)
            return child.poll() is None
        state = process_state(node.pid)
        if state is None or state in ("Z", "X"):
            return False
        return node.dir in " ".join(command_line(node.pid))

    def running(self) -> list[str]:
        return [name for name in self.nodes if self.is_alive(name)]

    def _spawn(self, node: NodeState, command: list[str]) -> None:
        out = open(Path(node.dir) / "stdout.log", "ab")
        try:
            proc = subprocess.Popen(
                command, cwd=node.dir, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            out.close()
        self._children[proc.pid] = proc
        node.pid = proc.pid
        self.started_s[node.name] = time.monotonic()
        self._save()

    def _signal(self, name: str, sig: int) -> None:
        node = self.node(name)
        if not self.is_alive(name):
            raise BadInput(f"{name} is not running: start it with kmigrate sandbox restart {name}")
        os.kill(node.pid, sig)  # type: ignore[arg-type]

    def _wait_dead(self, name: str, timeout_s: float) -> bool:
        if poll(lambda: not self.is_alive(name), timeout_s=timeout_s, interval_s=0.1):
            self._reap(name)
            return True
        return False

    def _reap(self, name: str) -> None:
        pid = self.nodes[name].pid
        child = self._children.pop(pid, None) if pid is not None else None
        if child is not None:
            child.wait(timeout=5)

    # ------------------------------------------------------------------- up
    def up(self, spec: SandboxSpec, progress: Callable[[str], None] = lambda msg: None) -> None:
        """Start the whole cluster and wait until every node is ready; on failure stop what was started."""
        running = (self.running() if self.exists else []) + [f"{TARGET_DIR}/{n}" for n in self._target_running()]
        if running:
            raise BadInput(
                f"a sandbox is already running in {self.dir} ({', '.join(running)}): "
                "run kmigrate sandbox down first, or use another --dir"
            )
        self._check_ports(spec)
        dist = self._dist_of(spec.kafka_version, spec.zookeeper_version)  # fetched before anything is removed
        for b in spec.brokers:
            self._dist_of(spec.kafka_version_of(b.id), spec.zookeeper_version)
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self.spec = spec
        self.nodes = {}
        if spec.security != "plaintext":
            os.chmod(self.dir, 0o700)  # node dirs hold server.properties and zoo.cfg with secrets
            sandbox_security.create(spec.security, self.dir / "security", [(b.id, b.host) for b in spec.brokers],
                                    [(z.id, z.host) for z in spec.zookeepers] if spec.zookeeper_tls else [])
        for z in spec.zookeepers:
            self.nodes[z.name] = NodeState("zookeeper", z.id, z.host, str(self.dir / z.name), spare=z.joiner)
        for b in spec.brokers:
            self.nodes[b.name] = NodeState("kafka", b.id, b.host, str(self.dir / b.name), spare=b.spare)
        self._save()
        try:
            voters = spec.voters()
            progress(f"starting ZooKeeper voters {[z.id for z in voters]}")
            for z in voters:
                self._start_zookeeper(z, "\n".join(v.server_line("participant") for v in voters) + "\n", dist)
            self.wait_zookeeper([z.name for z in voters], timeout_s=90)
            joiners = [z for z in spec.zookeepers if z.joiner]
            if joiners:
                progress(f"starting ZooKeeper joiners {[z.id for z in joiners]} as observers")
                self.start_joiners(joiners)
            old = [b for b in spec.brokers if not b.spare]
            if not old:  # a ZooKeeper-only sandbox
                return
            if self.security is not None:
                progress("writing the Kafka users into ZooKeeper")
                self._seed_zookeeper(self.security)
            progress(f"starting brokers {[b.id for b in old]}")
            for b in old:
                self._start_broker(b, spec.zookeeper_connect())
            self.wait_brokers([b.name for b in old], timeout_s=180)
            if self.security is not None:
                progress("granting the Kafka users' ACLs")
                self._grant_acls()
            self._create_offsets_topic()
            spares = [b for b in spec.brokers if b.spare]
            if spares:
                progress(f"starting spare brokers {[b.id for b in spares]}")
                # New brokers are configured for the ensemble they will live with: voters and joiners.
                for b in spares:
                    self._start_broker(b, spec.zookeeper_connect(spec.zookeepers))
                self.wait_brokers([b.name for b in spares], timeout_s=180)
        except BaseException:
            self.down()
            raise

    @property
    def target(self) -> "Sandbox | None":
        """The second, separate cluster of ``sandbox up --target-cluster`` (a sandbox of its own in
        ``<dir>/target``: per-node commands take ``--dir <dir>/target``), or None."""
        target = Sandbox(self.dir / TARGET_DIR)
        return target if target.exists else None

    def _target_running(self) -> list[str]:
        target = self.target
        return target.running() if target is not None else []

    def up_target(self, spec: SandboxSpec, progress: Callable[[str], None] = lambda msg: None) -> None:
        """Start the target cluster (``layout.target_spec``) after this one; on failure stop both."""
        try:
            Sandbox(self.dir / TARGET_DIR).up(spec, progress=lambda msg: progress(f"target cluster: {msg}"))
        except BaseException:
            self.down()
            raise

    def _check_ports(self, spec: SandboxSpec) -> None:
        wanted = [(z.host, p) for z in spec.zookeepers for p in (z.client_port, z.quorum_port, z.election_port)]
        wanted += [(b.host, b.port) for b in spec.brokers]
        for host, port in wanted:
            if not _port_free(host, port):
                raise BadInput(
                    f"{host}:{port} is in use: stop what listens there, or pick other ports "
                    "(--kafka-port, --zookeeper-port) or addresses (--ip-prefix)"
                )

    def _seed_zookeeper(self, sec: SandboxSecurity) -> None:
        """Write the SCRAM credentials of the Kafka users (``<chroot>/config/users/<user>``, as Kafka's
        ConfigCommand does) before any broker starts, with the ACLs brokers with ``zookeeper.set.acl``
        give them: only the brokers' ZooKeeper user may touch them."""
        from migrate.sandbox.security import MECHANISM, USERS, ZK_BROKER_USER, scram_credential, uses_sasl

        spec = self._require()
        owner = [("sasl", ZK_BROKER_USER, "cdrwa")]
        readable = owner + [("world", "anyone", "r")]
        hosts = ",".join(f"{z.host}:{z.client_port}" for z in spec.voters())
        with _zookeeper(hosts, timeout_s=30, auth=sec.zookeeper_auth()) as zk:
            if spec.chroot:
                zk.write(spec.chroot, b"", acl=readable)
            zk.write(f"{spec.chroot}/config", b"", acl=readable)
            if not uses_sasl(spec.security):
                return
            zk.write(f"{spec.chroot}/config/users", b"", acl=owner)
            for user in USERS:
                credential = scram_credential(sec.password(user), os.urandom(32))
                data = json.dumps({"version": 1, "config": {MECHANISM: credential}}).encode()
                zk.write(f"{spec.chroot}/config/users/{user}", data, acl=owner)

    def _grant_acls(self) -> None:
        from migrate.adapters.kafka.local_cluster import grant
        from migrate.sandbox.security import KMIGRATE_ACLS

        grant(self._require().bootstrap_servers(spare=False), self.kafka_settings("admin"), KMIGRATE_ACLS)

    def committed_zookeeper_config(self) -> str:
        """The committed dynamic config (``server.N=...`` lines and ``version=``) read from a running voter."""
        spec = self._require()
        hosts = ",".join(f"{z.host}:{z.client_port}" for z in spec.zookeepers if self.is_alive(z.name))
        with _zookeeper(hosts, timeout_s=30) as zk:
            return (zk.read("/zookeeper/config") or b"").decode()

    def start_joiners(self, joiners: list[ZkNode]) -> None:
        """Start ``joiners`` with the committed config plus every joiner as an observer; wait until they follow."""
        committed = [ln for ln in self.committed_zookeeper_config().splitlines() if ln.startswith("server.")]
        dynamic = "\n".join(committed + [j.server_line("observer") for j in joiners]) + "\n"
        for j in joiners:
            self._start_zookeeper(j, dynamic, self.dist)
        self.wait_zookeeper([j.name for j in joiners], timeout_s=90)

    def _start_zookeeper(self, z: ZkNode, dynamic: str, dist: Distribution) -> None:
        spec = self._require()
        node = self.nodes[z.name]
        home = Path(node.dir)
        (home / "data").mkdir(parents=True, exist_ok=True)
        (home / "data" / "myid").write_text(f"{z.id}\n")
        (home / "zoo.cfg.dynamic").write_text(dynamic)
        sec = self.security
        cfg = zoo_cfg(str(home / "data"), str(home / "zoo.cfg.dynamic"), sec.zoo_cfg_lines() if sec else None)
        if spec.zookeeper_tls and sec is not None:
            cfg += "\n".join(sec.zookeeper_tls_lines(z.id, z.host, z.client_port + 1)) + "\n"
        if sec is not None:
            write_private(home / "zoo.cfg", cfg)  # the super user's digest
        else:
            (home / "zoo.cfg").write_text(cfg)
        (home / "log4j.properties").write_text(log4j_properties(str(home / "zookeeper.log")))
        self._launch_zookeeper(node, spec, dist)

    def _launch_zookeeper(self, node: NodeState, spec: SandboxSpec, dist: Distribution) -> None:
        home = Path(node.dir)
        opts = [
            f"-Xmx{spec.zookeeper_heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:+ExitOnOutOfMemoryError", f"-Dlog4j.configuration=file:{home / 'log4j.properties'}",
            f"-Dzookeeper.log.dir={home}", "-Dzookeeper.jmx.log4j.disable=true",
            *(self.security.zookeeper_jvm_options() if self.security else []),
        ]
        self._spawn(node, dist.java_command(ZOOKEEPER_MAIN, [str(home / "zoo.cfg")], opts))

    def _start_broker(self, b: BrokerNode, zookeeper_connect: str) -> None:
        spec = self._require()
        node = self.nodes[b.name]
        home = Path(node.dir)
        (home / "data").mkdir(parents=True, exist_ok=True)
        props = server_properties(spec, b, str(home / "data"), zookeeper_connect)
        if self.security is not None:
            props.update(self.security.broker_properties(b.id, b.address))
            props.update(spec.kafka_settings)
        write_private(home / "server.properties", javaproperties.dumps(props, timestamp=False, sort_keys=True))
        (home / "log4j.properties").write_text(log4j_properties(str(home / "server.log")))
        self._launch_broker(node, spec, self.broker_dist(node.id))

    def _launch_broker(self, node: NodeState, spec: SandboxSpec, dist: Distribution) -> None:
        home = Path(node.dir)
        opts = [
            f"-Xmx{spec.kafka_heap_mb}m", f"-Xms{spec.kafka_heap_mb}m", "-XX:+UseSerialGC",
            "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{home / 'log4j.properties'}", f"-Dkafka.logs.dir={home}",
            *(self.security.broker_jvm_options() if self.security else []),
        ]
        self._spawn(node, dist.java_command(KAFKA_MAIN, [str(home / "server.properties")], opts))

    def broker_properties(self, broker_id: int) -> dict[str, str]:
        with open(Path(self.node(f"kafka-{broker_id}").dir) / "server.properties") as f:
            return javaproperties.load(f)

    # -------------------------------------------------------------- readiness
    def wait_zookeeper(self, names: list[str], timeout_s: float = 60) -> dict[str, fourletter.ServerStat]:
        """Wait until each named server answers ``srvr`` with a mode (a quorum is formed for it)."""
        ready: dict[str, fourletter.ServerStat] = {}
        if not names:
            return ready

        def all_serving() -> dict[str, fourletter.ServerStat] | None:
            for name in names:
                if name in ready:
                    continue
                node = self.nodes[name]
                if not self.is_alive(name):
                    raise StepFailed(f"{name} exited while starting: see {node.dir}/zookeeper.log")
                try:
                    ready[name] = fourletter.srvr(node.host, self.spec.zookeeper_client_port, timeout_s=2)
                except (OSError, ValueError):
                    pass
            return ready if len(ready) == len(names) else None

        def late() -> StepFailed:
            missing = [n for n in names if n not in ready]
            return StepFailed(f"ZooKeeper {', '.join(missing)} not serving after {timeout_s:.0f} s: see their zookeeper.log")

        return wait_until(all_serving, timeout_s=timeout_s, interval_s=0.25, what="ZooKeeper", on_timeout=late)

    def wait_brokers(self, names: list[str], timeout_s: float = 120) -> None:
        """Wait until each broker is registered in ``/brokers/ids`` and answers metadata with its own id."""
        from migrate.adapters.kafka.local_cluster import broker_serves

        spec = self._require()
        pending = list(names)
        settings = self.kafka_settings()
        with _zookeeper(self.zookeeper_connect(chroot=True), timeout_s=30) as zk:

            def all_ready() -> bool:
                for name in list(pending):
                    node = self.nodes[name]
                    if not self.is_alive(name):
                        raise StepFailed(f"{name} exited while starting: see {node.dir}/server.log")
                    if str(node.id) in (zk.children("/brokers/ids") or []) and \
                            broker_serves(f"{node.host}:{spec.kafka_port}", node.id, settings):
                        pending.remove(name)
                return not pending

            wait_until(all_ready, timeout_s=timeout_s, interval_s=0.5, what="brokers", on_timeout=lambda: StepFailed(
                f"{', '.join(pending)} not ready after {timeout_s:.0f} s: see their server.log"))

    def wait_healthy(self, timeout_s: float = 300, bootstrap: str | None = None,
                     progress: Callable[[str], None] = lambda msg: None) -> None:
        """Wait until the cluster is healthy for 3 checks in a row (``migrate.runner.health``: no under-replicated
        or offline partition, every broker hosting a replica registered, the controller known): the gate
        between two brokers of a rolling restart. StepFailed naming what is still wrong at the timeout."""
        from migrate.core.clientconfig import check_bootstrap
        from migrate.runner.health import cluster_reader, require_healthy

        check_bootstrap(bootstrap or self.bootstrap_servers())
        read = cluster_reader(self.client_settings(bootstrap))
        require_healthy(read, timeout_s=timeout_s, interval_s=1.0, check_count=3,
                        on_check=lambda c: progress(f"health check {c.number}: {c.health.summary()}"))

    def rolling_restart(self, broker_ids: list[int], zookeeper_connect: str, timeout_s: float = 300,
                        progress: Callable[[str], None] = lambda msg: None) -> None:
        """Restart brokers one at a time with a new ``zookeeper.connect``, waiting for a healthy cluster after each."""
        for b in broker_ids:
            progress(f"restarting broker {b} with zookeeper.connect={zookeeper_connect}")
            self.restart_broker(b, zookeeper_connect, health_timeout_s=timeout_s, progress=progress)

    def _create_offsets_topic(self, timeout_s: float = 90) -> None:
        """Have the old brokers create ``__consumer_offsets`` now, before spares start (spares hold no partitions)."""
        from migrate.adapters.kafka.local_cluster import KafkaProbe

        probe = KafkaProbe(self._require().bootstrap_servers(spare=False), settings=self.kafka_settings())
        wait_until(probe.offsets_topic_led, timeout_s=timeout_s, interval_s=0.5, what="__consumer_offsets",
                   on_timeout=lambda: StepFailed("__consumer_offsets was not created in time: see the brokers' server.log"))

    # ------------------------------------------------------------- addresses
    def zookeeper_connect(self, chroot: bool = False) -> str:
        """Connect string of every ZooKeeper server of the sandbox that is running (voters and joiners)."""
        spec = self._require()
        live = [z for z in spec.zookeepers if self.is_alive(z.name)] or list(spec.zookeepers)
        return ",".join(f"{z.host}:{z.client_port}" for z in live) + (spec.chroot if chroot else "")

    def bootstrap_servers(self, spare: bool | None = None) -> str:
        return self._require().bootstrap_servers(spare)

    def env(self) -> dict[str, str]:
        spec = self._require()
        env = {
            "KAFKA_BOOTSTRAP_SERVERS": spec.bootstrap_servers(spare=False),
            "KAFKA_NEW_BOOTSTRAP_SERVERS": spec.bootstrap_servers(spare=True),
            "ZOOKEEPER_CONNECT": spec.zookeeper_connect(),
            "KMIGRATE_SANDBOX_DIR": str(self.dir),
        }
        sec = self.security
        if sec is not None:  # paths only: the files hold the secrets (mode 0600)
            env["KMIGRATE_COMMAND_CONFIG"] = str(sec.properties_file("kmigrate"))
            env["KAFKA_ADMIN_COMMAND_CONFIG"] = str(sec.properties_file("admin"))
            env["KAFKA_CLIENT_COMMAND_CONFIG"] = str(sec.properties_file("client"))
            env["ZOOKEEPER_AUTH_FILE"] = str(sec.zookeeper_auth_file)
            env["ZOOKEEPER_JAAS_FILE"] = str(sec.broker_zookeeper_jaas)
            if spec.zookeeper_tls:  # the secureClientPort (client port + 1) and the file that reaches it
                env["ZOOKEEPER_SECURE_CONNECT"] = ",".join(f"{z.host}:{z.client_port + 1}" for z in spec.voters())
                env["ZOOKEEPER_CLIENT_CONFIG"] = str(sec.zookeeper_tls_client_file)
        target = self.target
        if target is not None:  # sandbox up --target-cluster
            tenv = target.env()
            env["KAFKA_TARGET_BOOTSTRAP_SERVERS"] = tenv["KAFKA_BOOTSTRAP_SERVERS"]
            env["TARGET_ZOOKEEPER_CONNECT"] = tenv["ZOOKEEPER_CONNECT"]
            env.update({"_TARGET_".join(k.split("_", 1)): v for k, v in tenv.items() if k.endswith("COMMAND_CONFIG")})
        return env

    # ----------------------------------------------------------------- status
    def status(self) -> list[dict]:
        """One row per node: name, kind, id, address, pid, running, role (ZooKeeper mode, controller)."""
        spec = self._require()
        controller = self._controller_id()
        members = self._ensemble_roles()
        rows = []
        for name, node in self.nodes.items():
            alive = self.is_alive(name)
            row = {"name": name, "kind": node.kind, "id": node.id, "pid": node.pid if alive else None,
                   "running": alive, "spare": node.spare}
            if node.kind == "zookeeper":
                row["address"] = f"{node.host}:{spec.zookeeper_client_port}"
                role = "stopped"
                if alive:
                    try:
                        role = fourletter.srvr(node.host, spec.zookeeper_client_port).mode
                    except (OSError, ValueError):
                        role = "not serving"
                row["role"] = _zookeeper_role(role, node.id, node.spare, members)
            else:
                row["address"] = f"{node.host}:{spec.kafka_port}"
                row["rack"] = next(b.rack for b in spec.brokers if b.id == node.id)
                row["role"] = ("controller" if controller == node.id else "broker") if alive else "stopped"
            rows.append(row)
        target = self.target
        if target is not None:  # sandbox up --target-cluster: its nodes as target/<name>
            rows += [{**row, "name": f"{TARGET_DIR}/{row['name']}", "cluster": "target"} for row in target.status()]
        return rows

    def _ensemble_roles(self) -> dict[int, str] | None:
        """Server id -> participant/observer in the committed dynamic config (None: not readable now)."""
        from migrate.core.zookeeper.config import parse_server_line

        spec = self._require()
        hosts = ",".join(f"{z.host}:{z.client_port}" for z in spec.zookeepers if self.is_alive(z.name))
        if not hosts:
            return None
        try:
            with _zookeeper(hosts, timeout_s=10) as zk:
                lines = (zk.read("/zookeeper/config") or b"").decode().splitlines()
            return {s.id: s.role for s in (parse_server_line(ln) for ln in lines if ln.startswith("server."))}
        except Exception:  # no quorum, or a config kmigrate cannot read: show the servers' own modes
            return None

    def _controller_id(self) -> int | None:
        spec = self._require()
        if not any(self.is_alive(z.name) for z in spec.zookeepers):
            return None
        try:
            with _zookeeper(self.zookeeper_connect(chroot=True), timeout_s=10) as zk:
                return int(json.loads(zk.read("/controller") or b"")["brokerid"])
        except Exception:  # no quorum, no controller yet, or not its JSON: no controller to show
            return None

    # -------------------------------------------------------- fault injection
    def stop(self, name: str, timeout_s: float = 60) -> None:
        """Stop a node gracefully (SIGTERM; SIGKILL after ``timeout_s``)."""
        node = self.node(name)
        if not self.is_alive(name):
            return
        os.kill(node.pid, signal.SIGCONT)  # a paused node cannot shut down
        os.kill(node.pid, signal.SIGTERM)
        if not self._wait_dead(name, timeout_s):
            os.kill(node.pid, signal.SIGKILL)
            self._wait_dead(name, 10)

    def kill(self, name: str) -> None:
        """kill -9 a node."""
        self._signal(name, signal.SIGKILL)
        self._wait_dead(name, 10)

    def pause(self, name: str) -> None:
        """SIGSTOP a node: it stays up but answers nothing (a hung host)."""
        self._signal(name, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self._signal(name, signal.SIGCONT)

    def start(self, name: str, wait: bool = True) -> None:
        """Start a stopped node again with its current config files (ZooKeeper rewrites its own)."""
        spec = self._require()
        node = self.node(name)
        if self.is_alive(name):
            raise BadInput(f"{name} is already running (pid {node.pid})")
        if node.kind == "zookeeper":
            if not (Path(node.dir) / "zoo.cfg").exists():
                raise BadInput(f"{name} was never started: it has no zoo.cfg")
            self._launch_zookeeper(node, spec, self.dist)
            if wait:
                self.wait_zookeeper([name], timeout_s=90)
        else:
            self._wait_registration_gone(node)
            self._launch_broker(node, spec, self.broker_dist(node.id))
            if wait:
                self.wait_brokers([name], timeout_s=180)

    def _wait_registration_gone(self, node: NodeState, timeout_s: float = 60) -> None:
        """Wait until a killed broker's ``/brokers/ids/<id>`` is gone before it starts again.

        A broker killed with SIGKILL leaves its ephemeral registration until its ZooKeeper session
        expires (``zookeeper.session.timeout.ms``, 18 s here). A broker that starts before then finds
        the node owned by another session and exits with NodeExistsException.
        """
        try:
            zk = _zookeeper(self.zookeeper_connect(chroot=True), timeout_s=15)
        except BadInput:  # no quorum: the broker will wait for it itself
            return
        with zk:
            wait_until(lambda: zk.read(f"/brokers/ids/{node.id}") is None, timeout_s=timeout_s, interval_s=0.25,
                       what="the old registration to go", on_timeout=lambda: StepFailed(
                           f"broker id {node.id} is still registered in ZooKeeper after {timeout_s:.0f} s: "
                           f"is another broker with that id running?"))

    def restart(self, name: str, wait: bool = True, health_timeout_s: float | None = None,
                progress: Callable[[str], None] = lambda msg: None) -> None:
        """Stop and start a node; with ``wait``, until it is ready, and for a broker given ``health_timeout_s``,
        until the cluster is healthy again (:meth:`wait_healthy`)."""
        self.stop(name)
        self.start(name, wait=wait)
        if wait and health_timeout_s is not None and self.node(name).kind == "kafka":
            self.wait_healthy(health_timeout_s, progress=progress)

    def restart_broker(self, broker_id: int, zookeeper_connect: str | None = None, wait: bool = True,
                       health_timeout_s: float | None = 300,
                       progress: Callable[[str], None] = lambda msg: None, kafka_version: str | None = None) -> None:
        """Restart one broker, optionally with a new ``zookeeper.connect`` (one step of a rolling restart) or on
        another Kafka release (``kafka_version``: one step of a rolling upgrade); with ``wait``, return once it
        serves and the cluster is healthy (``health_timeout_s=None``: once it serves)."""
        name = f"kafka-{broker_id}"
        node = self.node(name)
        if kafka_version is not None:
            spec = self._require()
            versions = {**spec.broker_kafka_versions, str(broker_id): kafka_version}
            new_spec = replace(spec, broker_kafka_versions=versions)  # checks the release: bad input changes nothing
            self._dist_of(kafka_version, spec.zookeeper_version)  # fetched before the broker stops
            self.spec = new_spec
            self._save()
        if zookeeper_connect is not None:
            props = self.broker_properties(broker_id)
            props["zookeeper.connect"] = zookeeper_connect
            with open(Path(node.dir) / "server.properties", "w") as f:
                javaproperties.dump(props, f, timestamp=False, sort_keys=True)
        self.restart(name, wait=wait, health_timeout_s=health_timeout_s, progress=progress)

    # ------------------------------------------------------------------ down
    def down(self) -> list[int]:
        """Stop every node this sandbox started (brokers first, then ZooKeeper); return the pids stopped."""
        if not self.exists:
            return []
        target = self.target
        stopped = target.down() if target is not None else []  # sandbox up --target-cluster
        names = [n for n, s in self.nodes.items() if s.kind == "kafka"] + [
            n for n, s in self.nodes.items() if s.kind == "zookeeper"
        ]
        alive = [n for n in names if self.is_alive(n)]
        brokers = [n for n in alive if self.nodes[n].kind == "kafka"]
        # Brokers all at once: a controlled shutdown of each in turn is slow and buys nothing here.
        for group in (brokers, [n for n in alive if n not in brokers]):
            for name in group:
                os.kill(self.nodes[name].pid, signal.SIGCONT)
                os.kill(self.nodes[name].pid, signal.SIGTERM)
            for name in group:
                if not self._wait_dead(name, 30):
                    os.kill(self.nodes[name].pid, signal.SIGKILL)
                    self._wait_dead(name, 10)
                stopped.append(self.nodes[name].pid)
        self._save()
        return stopped
