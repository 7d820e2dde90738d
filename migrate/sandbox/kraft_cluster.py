"""A native KRaft sandbox (``kmigrate sandbox up --kraft``): KRaft controllers and brokers, no ZooKeeper, Kafka
3.9.x to 4.4.x, each node one detached JVM as in the ZooKeeper sandbox (``migrate.sandbox.cluster``).

``start_all`` formats every node (``kafka-storage format``, Kafka's StorageTool, with the arguments of
``kraft_layout.format_args``: a fresh cluster id, the first controllers with ``--initial-controllers`` naming the
directory ids chosen here, the spares with ``-N``), starts the first controllers and waits until DescribeQuorum
shows a leader and all of them as voters, then the spare controllers until the leader lists them as observers, then
the brokers until each serves, ``__consumer_offsets`` on them, then the spare brokers (empty). A controller has no
Metadata API: the quorum is read with DescribeQuorum sent to the controllers themselves
(``adapters.kafka.quorum.describe_quorum_at_controller``); only the leader answers it.
"""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import javaproperties

from migrate.core.controllers.quorum import Quorum, quorum_from_answer
from migrate.errors import BadInput, StepFailed
from migrate.files import write_private
from migrate.sandbox import kraft_layout as kl
from migrate.sandbox.kraft import CONTROLLER_KIND
from migrate.sandbox.layout import CONTROLLER_PORT, SandboxSpec, with_settings
from migrate.sandbox.supervisor import NodeState
from migrate.waiting import wait_until

DESCRIBE_QUORUM_V2 = 2  # 3.9+: each replica's directory id
PLAYBOOK_FILE = "playbook.yaml"  # written by sandbox up --kraft in the sandbox directory


def random_uuid() -> str:
    """A random Kafka uuid (cluster id, directory id) in Kafka's text form (``kraft_layout.kafka_uuid``)."""
    while True:
        raw = os.urandom(16)
        if kl.usable_uuid(raw):
            return kl.kafka_uuid(raw)


def java_argfile(args: list[str]) -> str:
    """A java launcher argument file (``java @file``) holding ``args``, each quoted (backslashes and quotes escaped).

    >>> print(java_argfile(["kafka.tools.StorageTool", "--add-scram", 'SCRAM-SHA-512=[name=a,password=p"q]']))
    "kafka.tools.StorageTool"
    "--add-scram"
    "SCRAM-SHA-512=[name=a,password=p\\"q]"
    <BLANKLINE>
    """
    return "".join('"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"\n' for a in args)


def read_properties(path: Path) -> dict[str, str]:
    with open(path) as f:
        return dict(javaproperties.load(f))


class KraftCluster:
    """The native KRaft side of a sandbox (``sandbox``: a :class:`migrate.sandbox.Sandbox` whose spec is ``kraft``)."""

    def __init__(self, sandbox: Any):
        self.sandbox = sandbox
        self._started_ms = 0  # when start_controller last launched one (wall clock, ms)

    @property
    def spec(self) -> SandboxSpec:
        spec = self.sandbox._require()
        if not spec.kraft:
            raise BadInput(f"the sandbox in {self.sandbox.dir} is not a KRaft one: start one with kmigrate sandbox up --kraft")
        return spec

    @property
    def controllers(self) -> list[NodeState]:
        return [n for n in self.sandbox.nodes.values() if n.kind == CONTROLLER_KIND]

    # ------------------------------------------------------------------ files
    def _home(self, name: str) -> Path:
        return Path(self.sandbox.node(name).dir)

    def _version_of(self, node: NodeState) -> str:
        return self.spec.kafka_version_of(node.id) if node.kind == "kafka" else self.spec.kafka_version

    def _dist_of(self, node: NodeState):
        return self.sandbox.broker_dist(node.id) if node.kind == "kafka" else self.sandbox.dist

    def _write(self, node: NodeState, props: dict[str, str]) -> None:
        home = Path(node.dir)
        home.mkdir(parents=True, exist_ok=True)
        write_private(home / "server.properties", javaproperties.dumps(props, timestamp=False, sort_keys=False))
        version = self._version_of(node)
        log = str(home / "server.log")
        text = kl.log4j2_properties(log) if kl.logging_file(version) == "log4j2.properties" else _log4j(log)
        (home / kl.logging_file(version)).write_text(text)

    def _render(self, node: NodeState) -> dict[str, str]:
        spec = self.spec
        home = Path(node.dir)
        sec = self.sandbox.security
        if node.kind == CONTROLLER_KIND:
            c = next(c for c in spec.controllers if c.id == node.id)
            props = kl.controller_properties(spec, c, str(home / "metadata"))
            if sec is not None:
                props.update(sec.kraft_controller_properties(c.id, kl.CONTROLLER_LISTENER))
            return props
        b = next(b for b in spec.brokers if b.id == node.id)
        props = kl.broker_properties(spec, b, str(home / "data"))
        if sec is not None:
            props.update(sec.kraft_broker_properties(b.id, b.address, kl.CONTROLLER_LISTENER))
            props.update(spec.kafka_settings)
        return props

    def _format(self, node: NodeState, cluster_id: str, directory_ids: dict[int, str]) -> None:
        home = Path(node.dir)
        args = kl.format_args(self.spec, node.id, cluster_id, str(home / "server.properties"), directory_ids)
        version = self._version_of(node)
        dist = self._dist_of(node)
        sec = self.sandbox.security
        scram = sec.scram_arguments() if sec is not None and node.kind == CONTROLLER_KIND else []
        if scram:  # the users' SCRAM credentials into the metadata log (KIP-900): secrets, so in a 0600 file
            args += [arg for value in scram for arg in ("--add-scram", value)]
        command = dist.java_command(kl.STORAGE_TOOL, args, [
            "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            *kl.logging_options(version, str(home / kl.logging_file(version)))], class_data=True)
        argfile = home / "format.args"
        if scram:  # java expands @file before it reads the main class: the arguments never reach a command line
            main = command.index(kl.STORAGE_TOOL)
            write_private(argfile, java_argfile(command[main:]))
            command = command[:main] + [f"@{argfile}"]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=180)
        finally:
            argfile.unlink(missing_ok=True)
        if proc.returncode != 0:
            raise StepFailed(f"kafka-storage format of {node.name} failed: {(proc.stderr or proc.stdout).strip()[-400:]}")

    def cluster_id(self) -> str:
        """The cluster id the nodes were formatted with (``meta.properties`` of a controller)."""
        for node in self.controllers:
            meta = Path(node.dir) / "metadata" / "meta.properties"
            if meta.exists():
                return read_properties(meta)["cluster.id"]
        raise BadInput("no controller of this sandbox is formatted: start it with kmigrate sandbox up --kraft")

    def directory_id(self, controller_id: int) -> str:
        """The ``directory.id`` a controller was formatted with (its ``meta.properties``)."""
        meta = self._home(f"{CONTROLLER_KIND}-{controller_id}") / "metadata" / "meta.properties"
        return read_properties(meta)["directory.id"]

    # ---------------------------------------------------------------- processes
    def _launch(self, node: NodeState) -> None:
        from migrate.sandbox import launch

        heap = self.spec.controller_heap_mb if node.kind == CONTROLLER_KIND else self.spec.kafka_heap_mb
        self.sandbox._spawn(node, launch.kafka_server_command(Path(node.dir), heap, self._dist_of(node)))

    def start_all(self, progress: Callable[[str], None] = lambda msg: None, timeout_s: float = 180) -> None:
        """Format and start every node of the sandbox (its nodes already recorded), waiting for each step."""
        spec = self.spec
        nodes = self.sandbox.nodes
        cluster_id = random_uuid()
        directory_ids = {c.id: random_uuid() for c in kl.voters(spec)}
        everyone = [nodes[c.name] for c in spec.controllers] + [nodes[b.name] for b in spec.brokers]
        progress(f"formatting {len(everyone)} nodes with cluster id {cluster_id}"
                 f" ({'static quorum' if spec.static_quorum else 'dynamic quorum'})")
        for node in everyone:
            self._write(node, self._render(node))
        with ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(lambda n: self._format(n, cluster_id, directory_ids), everyone))
        first = [nodes[c.name] for c in kl.voters(spec)]
        progress(f"starting controllers {[n.id for n in first]}")
        for node in first:
            self._launch(node)
        self.wait_quorum(timeout_s, progress)
        spares = [nodes[c.name] for c in spec.controllers if c.spare]
        if spares:
            progress(f"starting spare controllers {[n.id for n in spares]} (observers)")
            for node in spares:
                self._launch(node)
            self.wait_listed([n.id for n in spares], timeout_s)
        old = [nodes[b.name] for b in spec.brokers if not b.spare]
        if not old:
            return
        progress(f"starting brokers {[n.id for n in old]}")
        for node in old:
            self._launch(node)
        self.wait_brokers(old, timeout_s)
        from migrate.sandbox import launch, probes

        if self.sandbox.security is not None:  # in the metadata log: the spares and the controllers see them too
            progress("granting the Kafka users' ACLs")
            launch.grant_acls(spec, self.sandbox.kafka_settings("admin"))
        probes.create_offsets_topic(spec.bootstrap_servers(spare=False), self.sandbox.kafka_settings("admin"))
        new = [nodes[b.name] for b in spec.brokers if b.spare]
        if new:
            progress(f"starting spare brokers {[n.id for n in new]}")
            for node in new:
                self._launch(node)
            self.wait_brokers(new, timeout_s)

    def wait_brokers(self, nodes: list[NodeState], timeout_s: float = 180) -> None:
        from migrate.sandbox import probes

        probes.wait_serving(nodes, self.spec, self.sandbox.kafka_settings("admin"), self.sandbox.processes.is_alive,
                            timeout_s)

    # ------------------------------------------------------------------ quorum
    def quorum(self, timeout_s: float = 3.0) -> Quorum | None:
        """DescribeQuorum (v2) from whichever running controller answers it (the leader), or None."""
        from migrate.adapters.kafka.quorum import describe_quorum_at_controller

        for node in self.controllers:
            if not self.sandbox.is_alive(node.name):
                continue
            address = f"{node.host}:{CONTROLLER_PORT}"
            answer = describe_quorum_at_controller(address, timeout_s, settings=self.controller_settings(address),
                                                   version=DESCRIBE_QUORUM_V2)
            if answer is not None:
                return quorum_from_answer(answer)
        return None

    def controller_settings(self, address: str, user: str = "admin"):
        """``user``'s client settings on the controller listener at ``address`` (None: PLAINTEXT)."""
        from migrate.core.clientconfig import ClientSettings

        sec = self.sandbox.security
        return ClientSettings(address, sec.controller_librdkafka(user)) if sec is not None else None

    def _check_alive(self, nodes: list[NodeState]) -> None:
        for node in nodes:
            if not self.sandbox.is_alive(node.name):
                raise StepFailed(f"{node.name} exited while starting: see {node.dir}/server.log")

    def wait_quorum(self, timeout_s: float = 180, progress: Callable[[str], None] = lambda msg: None) -> Quorum:
        """Wait until a leader answers DescribeQuorum with every first controller as a voter."""
        wanted = sorted(c.id for c in kl.voters(self.spec))
        first = [n for n in self.controllers if n.id in wanted]
        seen: list[Quorum | None] = [None]

        def formed() -> Quorum | None:
            self._check_alive(first)
            seen[0] = view = self.quorum()
            return view if view is not None and view.leader_id is not None and list(view.voter_ids) == wanted else None

        return wait_until(formed, timeout_s=timeout_s, interval_s=0.5, what="the KRaft quorum", on_timeout=lambda: StepFailed(
            f"no KRaft quorum of {wanted} after {timeout_s:.0f} s (last seen: {seen[0]}): see the controllers' server.log"))

    def wait_listed(self, ids: list[int], timeout_s: float = 120, since_ms: int = 0) -> Quorum:
        """Wait until the leader lists each of ``ids`` (voter or observer) as caught up since ``since_ms`` (wall
        clock, ms: its ``lastCaughtUpTimestamp``, Kafka's own word for it), or it is the leader itself."""
        nodes = [self.sandbox.node(f"{CONTROLLER_KIND}-{i}") for i in ids]
        seen: list[Quorum | None] = [None]

        def listed() -> Quorum | None:
            self._check_alive(nodes)
            seen[0] = view = self.quorum()
            if view is None or view.leader_id is None:
                return None
            for i in ids:
                if i == view.leader_id:
                    continue
                r = view.replica(i)
                if r is None or (r.last_fetch_ms or -1) < since_ms or (r.last_caught_up_ms or -1) < since_ms:
                    return None
            return view

        return wait_until(listed, timeout_s=timeout_s, interval_s=0.5, what="controllers in the quorum",
                          on_timeout=lambda: StepFailed(f"controllers {ids} not caught up in the quorum after "
                                                        f"{timeout_s:.0f} s (last seen: {seen[0]}): see their server.log"))

    # ---------------------------------------------------------------- restarts
    def start_controller(self, controller_id: int, wait: bool = True, timeout_s: float = 120) -> None:
        """Start a stopped controller with its files; with ``wait``, until the leader lists it caught up."""
        node = self.sandbox.node(f"{CONTROLLER_KIND}-{controller_id}")
        if self.sandbox.is_alive(node.name):
            raise BadInput(f"{node.name} is already running (pid {node.pid})")
        since_ms = self._started_ms = int(time.time() * 1000)  # not running now: what the leader sees after is the new one
        self._launch(node)
        if wait:
            self.wait_listed([controller_id], timeout_s, since_ms=since_ms)

    def restart_controller(self, controller_id: int, timeout_s: float = 120,
                           settings: dict[str, str | None] | None = None) -> Quorum:
        """Stop one controller and start it again with its files (``settings`` changed in its server.properties
        first, None removing one); return once the leader (maybe another one: a stopped leader resigns) lists it as
        fetching again and caught up since it started."""
        name = f"{CONTROLLER_KIND}-{controller_id}"
        node = self.sandbox.node(name)
        self.sandbox.stop(name)
        if settings:
            path = Path(node.dir) / "server.properties"
            props = with_settings(read_properties(path), settings)
            write_private(path, javaproperties.dumps(props, timestamp=False, sort_keys=False))
        self.start_controller(controller_id, wait=False)
        return self.wait_listed([controller_id], timeout_s, since_ms=self._started_ms)

    # ------------------------------------------------------------- status, env
    def status(self) -> list[dict]:
        """``sandbox status``'s rows, each node's role as DescribeQuorum gives it (leader, voter, observer)."""
        from migrate.sandbox import probes

        quorum = self.quorum()
        return [probes.status_row(node, self.spec, self.sandbox.is_alive(name), None, None, quorum)
                for name, node in self.sandbox.nodes.items()]

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """``sandbox env`` without ZooKeeper: the controllers (``--bootstrap-controller``) and the playbook instead;
        on a secured sandbox, the controller listener's client files beside the Kafka users' ones ``env`` has."""
        env = {k: v for k, v in env.items() if k != "ZOOKEEPER_CONNECT"}
        env["KAFKA_BOOTSTRAP_CONTROLLERS"] = self.spec.bootstrap_controllers(spare=False)
        env["KAFKA_NEW_BOOTSTRAP_CONTROLLERS"] = self.spec.bootstrap_controllers(spare=True)
        env["KMIGRATE_PLAYBOOK"] = str(self.sandbox.dir / PLAYBOOK_FILE)
        sec = self.sandbox.security
        if sec is not None:  # paths only: the files hold the secrets (mode 0600)
            env["KMIGRATE_CONTROLLER_COMMAND_CONFIG"] = str(sec.controller_properties_file("kmigrate"))
            env["KAFKA_ADMIN_CONTROLLER_COMMAND_CONFIG"] = str(sec.controller_properties_file("admin"))
        return env

    # ---------------------------------------------------------------- playbook
    def playbook(self, throttle: str = "50MB/s") -> str:
        """A playbook for the sandbox: its brokers to its spare brokers (in id order; kept without spares), no
        ``zookeeper:`` section; its controllers named in a comment."""
        return kraft_playbook(self.spec, throttle)


def kraft_playbook(spec: SandboxSpec, throttle: str = "50MB/s") -> str:
    """A native KRaft sandbox's playbook (pure): brokers old -> spare ones one to one (kept when there are no
    spares, or not as many), no ``zookeeper:`` section; a ``controllers:`` section: the voters, and the spare
    controllers replacing as many voters, in order.

    >>> print(kraft_playbook(kl.kraft_spec((3000,), (1, 2), spare_controller_ids=(3001,), spare_broker_ids=(3, 4))))
    # Written by kmigrate sandbox up --kraft: a KRaft cluster (no ZooKeeper), brokers 1,2 -> 3,4.
    # Controllers (port 9093): voters 3000, spares (observers) 3001; dynamic quorum (kraft.version 1).
    kafka:
      bootstrap_servers: "127.0.0.1:9092,127.0.0.2:9092"
    brokers:
      mapping: {1: 3, 2: 4}
      new:
        3: {availability_domain: AD-3, fault_domain: FD-1}
        4: {availability_domain: AD-1, fault_domain: FD-2}
    controllers:
      voters: [{id: 3000, host: 127.0.0.1, port: 9093}]
      add: [{id: 3001, host: 127.0.0.2, port: 9093}]
      remove: [3000]
    migration:
      throttle: 50MB/s
    <BLANKLINE>
    """
    old = [b for b in spec.brokers if not b.spare]
    new = [b for b in spec.brokers if b.spare]
    ids = lambda nodes: ",".join(str(n.id) for n in nodes)  # noqa: E731
    if new and len(new) == len(old):
        what = f"brokers {ids(old)} -> {ids(new)}"
        brokers = ("brokers:\n  mapping: {" + ", ".join(f"{o.id}: {n.id}" for o, n in zip(old, new)) + "}\n  new:\n"
                   + "\n".join(f"    {b.id}: {{availability_domain: {b.rack.split('/')[0]}, fault_domain: {b.rack.split('/')[1]}}}"
                               for b in new) + "\n")
    else:
        what = f"brokers {ids(old)} kept"
        brokers = f"brokers:\n  keep: [{', '.join(str(b.id) for b in old)}]\n"
    voters = [c for c in spec.controllers if not c.spare]
    spares = [c for c in spec.controllers if c.spare]
    quorum = "static quorum (kraft.version 0)" if spec.static_quorum else "dynamic quorum (kraft.version 1)"
    node = lambda c: f"{{id: {c.id}, host: {c.host}, port: {c.port}}}"  # noqa: E731
    controllers = "controllers:\n  voters: [" + ", ".join(node(c) for c in voters) + "]\n"
    if spares:  # each spare replaces a voter, in order
        controllers += ("  add: [" + ", ".join(node(c) for c in spares) + "]\n"
                        f"  remove: [{', '.join(str(c.id) for c in voters[:len(spares)])}]\n")
    secured = ""
    if spec.security != "plaintext":  # the kmigrate user's files, relative to the playbook's folder
        secured = (f"  command_config: security/kmigrate.properties  # {spec.security}, SCRAM-SHA-512; the controllers "
                   "take PLAIN: --controller-command-config security/kmigrate-controller.properties\n")
    return (f"# Written by kmigrate sandbox up --kraft: a KRaft cluster (no ZooKeeper), {what}.\n"
            f"# Controllers (port {CONTROLLER_PORT}): voters {ids(voters)}"
            + (f", spares (observers) {ids(spares)}" if spares else "") + f"; {quorum}.\n"
            f'kafka:\n  bootstrap_servers: "{spec.bootstrap_servers(spare=False)}"\n' + secured
            + brokers + controllers + f"migration:\n  throttle: {throttle}\n")


def _log4j(log_file: str) -> str:
    from migrate.sandbox.layout import log4j_properties

    return log4j_properties(log_file)
