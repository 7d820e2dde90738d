"""KRaft controllers beside a sandbox's ZooKeeper-mode brokers, and the operator's restarts of a ZooKeeper-to-KRaft
migration (KIP-866), each with the config kmigrate renders (``migrate.core.kraft.config``).

- ``add_controllers``: the controllers (``controller-<id>`` nodes, Kafka's jars of the sandbox, each on its own
  loopback address after every ZooKeeper server and broker, port :data:`CONTROLLER_PORT`), formatted with the
  cluster id read from ZooKeeper (``kafka-storage format --cluster-id=<id> -c server.properties``), started, and waited for
  by its log (``Kafka Server started``): no broker forwards DescribeQuorum before roll 1, and a controller has no
  Metadata API for a client to bootstrap on.
- ``restart_broker(id, phase)``: roll 1 (``migration``: the broker's ZooKeeper-mode config plus the migration
  lines) or roll 2 (``kraft``: its KRaft config). The ZooKeeper-mode config is kept once as
  ``server.properties.zookeeper``: the configs of every phase are rendered from it.
- ``restart_controller(id, finalize)``: the same controller config again, or without the migration flag and
  ZooKeeper (finalize: no way back after it).
- The rollback (``kmigrate kraft rollback``): ``stop_controllers`` (deprovision), ``restart_broker(id, "zookeeper")``
  (back to the ZooKeeper-mode config kept), and ``reformat_controllers`` for a new attempt (their metadata dirs wiped,
  formatted again with the cluster id, started: the docs want a fresh quorum for a retry).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

import javaproperties

from migrate.adapters.jars import KAFKA_MAIN
from migrate.core.kraft import config as kc
from migrate.errors import BadInput, StepFailed
from migrate.files import write_private
from migrate.sandbox.kraft_layout import FIRST_CONTROLLER_ID  # noqa: F401  (one definition for both sandboxes)
from migrate.sandbox.kraft_layout import STORAGE_TOOL
from migrate.sandbox.layout import CONTROLLER_PORT, log4j_properties
from migrate.sandbox.supervisor import NodeState
from migrate.waiting import wait_until

CONTROLLER_KIND = "controller"
ZOOKEEPER_MODE_FILE = "server.properties.zookeeper"
PHASES = ("migration", "kraft", "zookeeper")


def _read(path: Path) -> dict[str, str]:
    with open(path) as f:
        return dict(javaproperties.load(f))


def _write(path: Path, props: dict[str, str]) -> None:
    write_private(path, "\n".join(kc.lines(props)) + "\n")


class KraftSandbox:
    """The KRaft side of a sandbox (``sandbox``: a :class:`migrate.sandbox.Sandbox`)."""

    def __init__(self, sandbox: Any):
        self.sandbox = sandbox

    # ----------------------------------------------------------------- nodes
    @property
    def controllers(self) -> list[NodeState]:
        return [n for n in self.sandbox.nodes.values() if n.kind == CONTROLLER_KIND]

    def controller_nodes(self) -> tuple[kc.Controller, ...]:
        return tuple(kc.Controller(n.id, n.host, CONTROLLER_PORT, str(Path(n.dir) / "metadata"))
                     for n in sorted(self.controllers, key=lambda n: n.id))

    def _broker_dir(self, broker_id: int) -> Path:
        return Path(self.sandbox.node(f"kafka-{broker_id}").dir)

    def zookeeper_mode_properties(self, broker_id: int) -> dict[str, str]:
        """Broker ``broker_id``'s ZooKeeper-mode config: the copy kept before its first KRaft restart, else its file."""
        home = self._broker_dir(broker_id)
        kept = home / ZOOKEEPER_MODE_FILE
        return _read(kept if kept.exists() else home / "server.properties")

    def cluster_id(self) -> str:
        """The cluster id the brokers wrote in ZooKeeper (``<chroot>/cluster/id``)."""
        from migrate.core.kraft.phases import parse_json_znode
        from migrate.sandbox.probes import zookeeper

        sec = self.sandbox.security
        with zookeeper(self.sandbox.zookeeper_connect(), timeout_s=30, auth=sec.zookeeper_auth() if sec else None) as zk:
            doc = parse_json_znode(zk.read(f"{self.sandbox.spec.chroot}/cluster/id"))
        if not doc or not doc.get("id"):
            raise BadInput("the sandbox's ZooKeeper has no /cluster/id yet: start its brokers first (kmigrate sandbox up)")
        return str(doc["id"])

    def inputs(self, cluster_id: str | None = None) -> kc.KraftInputs:
        """What the configs are rendered from: the cluster id, every broker's ZooKeeper-mode config, the controllers."""
        spec = self.sandbox.spec
        brokers = {b.id: self.zookeeper_mode_properties(b.id) for b in spec.brokers}
        return kc.KraftInputs(cluster_id or self.cluster_id(), brokers, self.controller_nodes())

    # ----------------------------------------------------------- controllers
    def add_controllers(self, ids: tuple[int, ...], progress: Callable[[str], None] = lambda msg: None,
                        timeout_s: float = 120) -> None:
        """Prepare, format and start the controllers ``ids`` (a static quorum of all of them); on failure stop them."""
        spec = self.sandbox.spec
        if self.controllers:
            raise BadInput(f"this sandbox has controllers already ({', '.join(n.name for n in self.controllers)}): "
                           "restart one with kmigrate sandbox restart-controller")
        if not ids:
            raise BadInput("--kraft-controllers 0: give 1 or more controllers")
        first = max(len(spec.zookeepers), len(spec.brokers)) + 1
        if first + len(ids) - 1 > 254:
            raise BadInput("no loopback address is left for the controllers: use fewer nodes")
        cluster_id = self.cluster_id()
        for i, cid in enumerate(ids):
            node = NodeState(CONTROLLER_KIND, cid, spec.host(first + i), str(self.sandbox.dir / f"{CONTROLLER_KIND}-{cid}"))
            self.sandbox.nodes[node.name] = node
        inputs = self.inputs(cluster_id)  # checks the ids against the brokers' before anything is written
        self.sandbox._save()
        try:
            self._format_and_start(inputs, cluster_id, progress, timeout_s)
        except BaseException:
            self.sandbox.processes.stop([n for n in self.controllers if self.sandbox.is_alive(n.name)], 30)
            raise

    def _write_controller(self, node: NodeState, props: dict[str, str]) -> None:
        home = Path(node.dir)
        home.mkdir(parents=True, exist_ok=True)
        _write(home / "server.properties", props)
        (home / "log4j.properties").write_text(log4j_properties(str(home / "server.log")))

    def _format(self, node: NodeState, cluster_id: str) -> None:
        """``kafka-storage format`` (Kafka's StorageTool) of the controller's metadata dir; skipped when formatted."""
        home = Path(node.dir)
        if (home / "metadata" / "meta.properties").exists():
            return
        args = kc.format_command(cluster_id, str(home / "server.properties"))[1:]
        command = self.sandbox.dist.java_command(STORAGE_TOOL, args, [
            "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Dlog4j.configuration=file:{home / 'log4j.properties'}"], class_data=True)
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise StepFailed(f"kafka-storage format of {node.name} failed: {(proc.stderr or proc.stdout).strip()[-400:]}")

    def _launch(self, node: NodeState) -> None:
        from migrate.sandbox import launch

        home = Path(node.dir)
        # the broker command line (heap, GC, the JAAS file a secured sandbox's ZooKeeper wants) on the controller's files
        command = launch.broker_command(home, self.sandbox.spec, self.sandbox.dist, self.sandbox.security)
        assert command[-2] == KAFKA_MAIN
        self.sandbox._spawn(node, command)

    def wait_controllers(self, names: list[str], timeout_s: float = 120) -> None:
        """Wait until each controller logged ``Kafka Server started`` since its last start (its quorum formed
        enough for it to serve); StepFailed naming the one that exited or did not start in time."""
        nodes = [self.sandbox.node(n) for n in names]
        marks = {n.name: self._log_size(n) for n in nodes}

        def started() -> bool:
            for n in nodes:
                if not self.sandbox.is_alive(n.name):
                    raise StepFailed(f"{n.name} exited while starting: see {n.dir}/server.log")
            return all("Kafka Server started" in self._log_since(n, marks[n.name]) for n in nodes)

        wait_until(started, timeout_s=timeout_s, interval_s=0.5, what="KRaft controllers", on_timeout=lambda: StepFailed(
            f"{', '.join(names)} not started after {timeout_s:.0f} s: see their server.log"))

    @staticmethod
    def _log_size(node: NodeState) -> int:
        path = Path(node.dir) / "server.log"
        return path.stat().st_size if path.exists() else 0

    @staticmethod
    def _log_since(node: NodeState, offset: int) -> str:
        path = Path(node.dir) / "server.log"
        if not path.exists():
            return ""
        with open(path, "rb") as f:
            if path.stat().st_size >= offset:
                f.seek(offset)
            return f.read().decode("utf-8", "replace")

    def restart_controller(self, controller_id: int, finalize: bool = False, timeout_s: float = 120) -> None:
        """Restart one controller with its migration config again, or (``finalize``) without the migration flag
        and ZooKeeper: the finalize roll, after which there is no way back to ZooKeeper."""
        name = f"{CONTROLLER_KIND}-{controller_id}"
        node = self.sandbox.node(name)
        inputs = self.inputs()
        props = kc.controller_finalized_config(inputs, controller_id) if finalize else kc.controller_config(inputs, controller_id)
        self.sandbox.stop(name)
        self._write_controller(node, props)
        self._launch(node)
        self.wait_controllers([name], timeout_s)

    def stop_controllers(self, timeout_s: float = 60) -> list[str]:
        """Stop every running controller (the rollback's deprovision; their files stay); the names stopped."""
        running = [n for n in self.controllers if self.sandbox.is_alive(n.name)]
        if running:
            self.sandbox.processes.stop(running, timeout_s)
        return [n.name for n in running]

    def reformat_controllers(self, progress: Callable[[str], None] = lambda msg: None, timeout_s: float = 120) -> None:
        """A new migration attempt after a rollback: stop the controllers, wipe their metadata dirs, write their
        migration config again, format them with the cluster id from ZooKeeper and start them."""
        if not self.controllers:
            raise BadInput("this sandbox has no KRaft controllers: add them (kmigrate sandbox add-controllers)")
        self.stop_controllers()
        cluster_id = self.cluster_id()
        self._format_and_start(self.inputs(cluster_id), cluster_id, progress, timeout_s, wipe=True)

    def _format_and_start(self, inputs: kc.KraftInputs, cluster_id: str, progress: Callable[[str], None],
                          timeout_s: float, wipe: bool = False) -> None:
        """Write each controller's migration config and format it (``wipe``: its metadata dir emptied first), then
        start them all and wait until each has started."""
        for node in self.controllers:
            progress(f"{'wiping and formatting' if wipe else 'formatting'} {node.name} with cluster id {cluster_id}")
            if wipe:
                shutil.rmtree(Path(node.dir) / "metadata", ignore_errors=True)
            self._write_controller(node, kc.controller_config(inputs, node.id))
            self._format(node, cluster_id)
        for node in self.controllers:
            progress(f"starting {node.name} on {node.host}:{CONTROLLER_PORT}")
            self._launch(node)
        self.wait_controllers([n.name for n in self.controllers], timeout_s)

    # --------------------------------------------------------------- brokers
    def restart_broker(self, broker_id: int, phase: str, health_timeout_s: float | None = 300,
                       progress: Callable[[str], None] = lambda msg: None) -> None:
        """One step of roll 1 (``phase="migration"``), roll 2 (``"kraft"``) or the rollback's last roll
        (``"zookeeper"``: the ZooKeeper-mode config kept before the first KRaft restart): the broker restarts with
        the config of that phase; then, given ``health_timeout_s``, the cluster must be healthy again."""
        if phase not in PHASES:
            raise BadInput(f"--kraft-phase {phase!r}: choose migration, kraft or zookeeper")
        if not self.controllers and phase != "zookeeper":
            raise BadInput("this sandbox has no KRaft controllers: add them first (kmigrate sandbox add-controllers)")
        name = f"kafka-{broker_id}"
        node = self.sandbox.node(name)
        home = Path(node.dir)
        if phase == "zookeeper":
            props = self.zookeeper_mode_properties(broker_id)
        else:
            inputs = self.inputs()
            props = (kc.broker_migration_config(inputs, broker_id) if phase == "migration"
                     else kc.broker_kraft_config(inputs, broker_id))
        if not (home / ZOOKEEPER_MODE_FILE).exists():
            shutil.copyfile(home / "server.properties", home / ZOOKEEPER_MODE_FILE)
        progress(f"restarting broker {broker_id} with its {phase} config")
        self.sandbox.stop(name)
        _write(home / "server.properties", props)
        self.sandbox.start(name, wait=True)
        if health_timeout_s is not None:
            self.sandbox.wait_healthy(health_timeout_s, progress=progress)


def is_kraft_broker(props: dict[str, str]) -> bool:
    """True for a KRaft broker's config (``process.roles`` set): it registers with the controllers, not in ZooKeeper."""
    return bool(props.get("process.roles"))
