"""Start, inspect, fault and stop a real local Kafka + ZooKeeper cluster.

Each node is one detached JVM process (its own session: ``supervisor``), so a sandbox outlives the
command that started it. ``state.json`` in the sandbox directory records every node, its address and
pid; it is written after each process starts, so ``down`` can clean up after a crash mid-``up``.
What each node runs is in ``launch``, what the running cluster says (readiness, roles) in ``probes``.
"""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import replace
from pathlib import Path
from typing import Callable

import javaproperties

from migrate.adapters.zookeeper import fourletter
from migrate.adapters.jars import KAFKA_VERSION, ZOOKEEPER_VERSION, Distribution, cache_dir, ensure_distribution
from migrate.errors import BadInput
from migrate.sandbox import launch, probes
from migrate.sandbox import security as sandbox_security
from migrate.sandbox.kraft_cluster import KraftCluster
from migrate.sandbox.layout import BrokerNode, SandboxSpec, ZkNode, with_settings
from migrate.sandbox.security import SandboxSecurity
from migrate.sandbox.supervisor import STATE_FILE, NodeProcesses, NodeState, read_state, write_state

TARGET_DIR = "target"  # the second, separate cluster of ``sandbox up --target-cluster``


def default_sandbox_dir() -> Path:
    """$KMIGRATE_SANDBOX_DIR, else ``<kmigrate cache>/sandbox``."""
    env = os.environ.get("KMIGRATE_SANDBOX_DIR")
    return Path(env) if env else cache_dir() / "sandbox"


def fetch_jars(kafka_version: str = KAFKA_VERSION, zookeeper_version: str = ZOOKEEPER_VERSION):
    """The servers' jars and Spark's Kafka source, fetched from Maven Central into the cache once
    (``kmigrate sandbox fetch``): ``(Distribution, KafkaSourceJars)``."""
    from migrate.adapters.spark.session import kafka_source_jars
    from migrate.core.versions import check_fetchable_kafka_version, check_zookeeper_version

    dist = ensure_distribution(check_fetchable_kafka_version(kafka_version), check_zookeeper_version(zookeeper_version))
    return dist, kafka_source_jars()


USER_FILES = (("KMIGRATE_COMMAND_CONFIG", "kmigrate"), ("KAFKA_ADMIN_COMMAND_CONFIG", "admin"),
              ("KAFKA_CLIENT_COMMAND_CONFIG", "client"))
"""``sandbox env`` on a secured sandbox: each Kafka user's client file (``--command-config``), by variable."""


class Sandbox:
    """A sandbox cluster in ``directory``. Methods are safe to call from another process than the one that started it."""

    def __init__(self, directory: Path | str | None = None):
        self.dir = Path(directory) if directory else default_sandbox_dir()
        self.spec: SandboxSpec | None = None
        self.nodes: dict[str, NodeState] = {}
        self.processes = NodeProcesses()
        self._dists: dict[tuple[str, str], Distribution] = {}
        if (self.dir / STATE_FILE).exists():
            self._load()

    # ----------------------------------------------------------------- state
    def _load(self) -> None:
        self.spec, self.nodes = read_state(self.dir)

    def _save(self) -> None:
        assert self.spec is not None
        write_state(self.dir, self.spec, self.nodes)

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
        return self.processes.is_alive(self.nodes[name])

    def running(self) -> list[str]:
        return [name for name in self.nodes if self.is_alive(name)]

    def _spawn(self, node: NodeState, command: list[str]) -> None:
        self.processes.start(node, command)
        self._save()

    # ------------------------------------------------------------------- up
    def up(self, spec: SandboxSpec, progress: Callable[[str], None] = lambda msg: None) -> None:
        """Start the whole cluster and wait until every node is ready; on failure stop what was started."""
        running = (self.running() if self.exists else []) + [f"{TARGET_DIR}/{n}" for n in self._target_running()]
        if running:
            raise BadInput(
                f"a sandbox is already running in {self.dir} ({', '.join(running)}): "
                "run kmigrate sandbox down first, or use another --dir"
            )
        launch.check_ports(spec)
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
            sandbox_security.create(spec.security, self.dir / "security",
                                    [(n.id, n.host) for n in (*spec.controllers, *spec.brokers)],
                                    [(z.id, z.host) for z in spec.zookeepers] if spec.zookeeper_tls else [],
                                    kraft=spec.kraft)
        for z in spec.zookeepers:
            self.nodes[z.name] = NodeState("zookeeper", z.id, z.host, str(self.dir / z.name), spare=z.joiner)
        for c in spec.controllers:  # a native KRaft sandbox's, listed first as ZooKeeper's
            self.nodes[c.name] = NodeState("controller", c.id, c.host, str(self.dir / c.name), spare=c.spare)
        for b in spec.brokers:
            self.nodes[b.name] = NodeState("kafka", b.id, b.host, str(self.dir / b.name), spare=b.spare)
        self._save()
        try:
            if spec.kraft:  # a native KRaft sandbox: controllers and brokers (migrate.sandbox.kraft_cluster)
                return KraftCluster(self).start_all(progress)
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
                launch.seed_zookeeper(spec, self.security)
            progress(f"starting brokers {[b.id for b in old]}")
            for b in old:
                self._start_broker(b, spec.zookeeper_connect())
            self.wait_brokers([b.name for b in old], timeout_s=180)
            if self.security is not None:
                progress("granting the Kafka users' ACLs")
                launch.grant_acls(spec, self.kafka_settings("admin"))
            probes.create_offsets_topic(spec.bootstrap_servers(spare=False), self.kafka_settings())
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

    def committed_zookeeper_config(self) -> str:
        """The committed dynamic config (``server.N=...`` lines and ``version=``) read from a running voter."""
        spec = self._require()
        return probes.committed_config(",".join(f"{z.host}:{z.client_port}" for z in spec.zookeepers if self.is_alive(z.name)))

    def start_joiners(self, joiners: list[ZkNode]) -> None:
        """Start ``joiners`` with the committed config plus every joiner as an observer; wait until they follow."""
        committed = [ln for ln in self.committed_zookeeper_config().splitlines() if ln.startswith("server.")]
        dynamic = "\n".join(committed + [j.server_line("observer") for j in joiners]) + "\n"
        for j in joiners:
            self._start_zookeeper(j, dynamic, self.dist)
        self.wait_zookeeper([j.name for j in joiners], timeout_s=90)

    def _start_zookeeper(self, z: ZkNode, dynamic: str, dist: Distribution) -> None:
        node = self.nodes[z.name]
        launch.write_zookeeper_files(Path(node.dir), z, dynamic, self._require(), self.security)
        self._launch_zookeeper(node, self._require(), dist)

    def _launch_zookeeper(self, node: NodeState, spec: SandboxSpec, dist: Distribution) -> None:
        self._spawn(node, launch.zookeeper_command(Path(node.dir), spec, dist, self.security))

    def _start_broker(self, b: BrokerNode, zookeeper_connect: str) -> None:
        node = self.nodes[b.name]
        launch.write_broker_files(Path(node.dir), b, zookeeper_connect, self._require(), self.security)
        self._launch_broker(node, self._require(), self.broker_dist(node.id))

    def _launch_broker(self, node: NodeState, spec: SandboxSpec, dist: Distribution) -> None:
        self._spawn(node, launch.broker_command(Path(node.dir), spec, dist, self.security))

    def broker_properties(self, broker_id: int) -> dict[str, str]:
        with open(Path(self.node(f"kafka-{broker_id}").dir) / "server.properties") as f:
            return javaproperties.load(f)

    # -------------------------------------------------------------- readiness
    def wait_zookeeper(self, names: list[str], timeout_s: float = 60) -> dict[str, fourletter.ServerStat]:
        """Wait until each named server answers ``srvr`` with a mode (a quorum is formed for it)."""
        return probes.wait_zookeeper([self.nodes[n] for n in names], self.spec, self.processes.is_alive, timeout_s)

    def wait_brokers(self, names: list[str], timeout_s: float = 120) -> None:
        """Wait until each broker is registered in ``/brokers/ids`` and answers metadata with its own id."""
        spec = self._require()
        probes.wait_brokers([self.nodes[n] for n in names], spec, self.zookeeper_connect(chroot=True),
                            self.kafka_settings(), self.processes.is_alive, timeout_s)

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
                        progress: Callable[[str], None] = lambda msg: None,
                        settings: dict[str, str | None] | None = None) -> None:
        """Restart brokers one at a time with a new ``zookeeper.connect`` (and ``settings``), each until healthy."""
        for b in broker_ids:
            progress(f"restarting broker {b} with zookeeper.connect={zookeeper_connect}")
            self.restart_broker(b, zookeeper_connect, health_timeout_s=timeout_s, progress=progress, settings=settings)

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
            env.update({name: str(sec.properties_file(user)) for name, user in USER_FILES})
        if spec.kraft:  # no ZooKeeper: the controllers instead (kafka-metadata-quorum --bootstrap-controller)
            return KraftCluster(self).env(env)
        if sec is not None:
            env["ZOOKEEPER_AUTH_FILE"] = str(sec.zookeeper_auth_file)
            env["ZOOKEEPER_JAAS_FILE"] = str(sec.broker_zookeeper_jaas)
            if spec.zookeeper_tls:  # the secureClientPort (client port + 1) and the file that reaches it
                env["ZOOKEEPER_SECURE_CONNECT"] = ",".join(f"{z.host}:{z.client_port + 1}" for z in spec.voters())
                env["ZOOKEEPER_CLIENT_CONFIG"] = str(sec.zookeeper_tls_client_file)
        target = self.target
        if target is not None:  # sandbox up --target-cluster
            tenv = target.env()
            env["KAFKA_TARGET_BOOTSTRAP_SERVERS"] = tenv["KAFKA_BOOTSTRAP_SERVERS"]
            if "ZOOKEEPER_CONNECT" in tenv:
                env["TARGET_ZOOKEEPER_CONNECT"] = tenv["ZOOKEEPER_CONNECT"]
            else:  # --target-kraft: a KRaft target, its controllers instead of ZooKeeper
                env["KAFKA_TARGET_BOOTSTRAP_CONTROLLERS"] = tenv["KAFKA_BOOTSTRAP_CONTROLLERS"]
            env.update({"_TARGET_".join(k.split("_", 1)): v for k, v in tenv.items() if k.endswith("COMMAND_CONFIG")})
        return env

    # ----------------------------------------------------------------- status
    def status(self) -> list[dict]:
        """One row per node: name, kind, id, address, pid, running, role (ZooKeeper mode, controller)."""
        spec = self._require()
        if spec.kraft:  # the roles DescribeQuorum gives (leader, voter, observer)
            return KraftCluster(self).status()
        controller = self._controller_id()
        members = probes.ensemble_roles(",".join(f"{z.host}:{z.client_port}" for z in spec.zookeepers
                                                 if self.is_alive(z.name)))
        rows = [probes.status_row(node, spec, self.is_alive(name), controller, members) for name, node in self.nodes.items()]
        target = self.target
        if target is not None:  # sandbox up --target-cluster: its nodes as target/<name>
            rows += [{**row, "name": f"{TARGET_DIR}/{row['name']}", "cluster": "target"} for row in target.status()]
        return rows

    def _controller_id(self) -> int | None:
        spec = self._require()
        if not any(self.is_alive(z.name) for z in spec.zookeepers):
            return None
        return probes.controller_id(self.zookeeper_connect(chroot=True))

    # -------------------------------------------------------- fault injection
    def stop(self, name: str, timeout_s: float = 60) -> None:
        """Stop a node gracefully (SIGTERM; SIGKILL after ``timeout_s``)."""
        node = self.node(name)
        if self.is_alive(name):
            self.processes.stop([node], timeout_s)

    def kill(self, name: str) -> None:
        """kill -9 a node."""
        self.processes.kill(self.node(name))

    def pause(self, name: str) -> None:
        """SIGSTOP a node: it stays up but answers nothing (a hung host)."""
        self.processes.signal(self.node(name), signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self.processes.signal(self.node(name), signal.SIGCONT)

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
        elif node.kind == "controller" and spec.kraft:  # a native KRaft sandbox's controller
            KraftCluster(self).start_controller(node.id, wait=wait)
        elif node.kind == "controller":  # a KRaft controller (sandbox add-controllers)
            from migrate.sandbox.kraft import KraftSandbox

            kraft = KraftSandbox(self)
            kraft._launch(node)
            if wait:
                kraft.wait_controllers([name])
        else:
            from migrate.sandbox.kraft import is_kraft_broker

            kraft_broker = spec.kraft or ((Path(node.dir) / "server.properties").exists()
                                          and is_kraft_broker(self.broker_properties(node.id)))
            if not kraft_broker:
                probes.wait_registration_gone(self.zookeeper_connect(chroot=True), node.id)
            self._launch_broker(node, spec, self.broker_dist(node.id))
            if wait and kraft_broker:  # registered with the controllers, not in /brokers/ids
                probes.wait_serving([node], spec, self.kafka_settings(), self.processes.is_alive, timeout_s=180)
            elif wait:
                self.wait_brokers([name], timeout_s=180)

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
                       progress: Callable[[str], None] = lambda msg: None, kafka_version: str | None = None,
                       settings: dict[str, str | None] | None = None) -> None:
        """Restart one broker, optionally with a new ``zookeeper.connect`` (one step of a rolling restart), other
        ``settings`` in its server.properties (None: the setting removed), or on another Kafka release (``kafka_version``: one step of a rolling
        upgrade); with ``wait``, return once it serves and the cluster is healthy (``health_timeout_s=None``: once it
        serves)."""
        name = f"kafka-{broker_id}"
        node = self.node(name)
        if kafka_version is not None:
            spec = self._require()
            versions = {**spec.broker_kafka_versions, str(broker_id): kafka_version}
            new_spec = replace(spec, broker_kafka_versions=versions)  # checks the release: bad input changes nothing
            self._dist_of(kafka_version, spec.zookeeper_version)  # fetched before the broker stops
            self.spec = new_spec
            self._save()
        if zookeeper_connect is not None or settings:
            props = self.broker_properties(broker_id)
            if zookeeper_connect is not None:
                props["zookeeper.connect"] = zookeeper_connect
            props = with_settings(props, settings)
            with open(Path(node.dir) / "server.properties", "w") as f:
                javaproperties.dump(props, f, timestamp=False, sort_keys=True)
        self.restart(name, wait=wait, health_timeout_s=health_timeout_s, progress=progress)

    # ------------------------------------------------------------------ down
    def down(self) -> list[int]:
        """Stop every node this sandbox started (brokers, then KRaft controllers, then ZooKeeper); return the pids stopped."""
        if not self.exists:
            return []
        self._load()  # the pids on disk: another process (a restart command) may have started a node since
        target = self.target
        stopped = target.down() if target is not None else []  # sandbox up --target-cluster
        alive = [n for n in self.nodes if self.is_alive(n)]
        # Brokers all at once: a controlled shutdown of each in turn is slow and buys nothing here. Then the KRaft
        # controllers (a KRaft broker's controlled shutdown asks them), then ZooKeeper.
        for kind in ("kafka", "controller", "zookeeper"):
            group = [n for n in alive if self.nodes[n].kind == kind]
            self.processes.stop([self.nodes[name] for name in group], 30)
            stopped += [self.nodes[name].pid for name in group]
        self._save()
        return stopped
