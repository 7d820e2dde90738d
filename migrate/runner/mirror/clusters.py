"""The two clusters of one ``kmigrate mirror`` command.

A :class:`Side` is a cluster as the operator named it (bootstrap servers and ``--*-command-config``).
:class:`Clusters` is both sides for the length of one command: each side's client settings are resolved
once (the command-config file read and its key stores opened once), each cluster is connected once, on
first use (one admin connection per cluster, handed to every step of the command), and the mirror's
bookkeeping on the target is one :class:`MirrorBook` (one writer). :func:`read_plan` reads both
clusters and plans; :func:`resolve_sides` finds the sides ``mirror start`` recorded in its state
directory.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess
from migrate.core.clientconfig import ClientSettings
from migrate.core.ledger import MIRROR_TOPIC, make_record, mirror_plan_id
from migrate.core.mirror.plan import MirrorPlan, compile_filter, plan_mirror
from migrate.errors import BadInput
from migrate.files import client_settings, load_command_config


@dataclass(frozen=True)
class Side:
    """One cluster as the operator named it: bootstrap and ``--*-command-config`` file."""

    bootstrap: str
    command_config: str | None = None
    role: str = "source"  # names the flags in messages: --source-command-config, --target-command-config

    def settings(self) -> ClientSettings:
        """The client settings (a :class:`Clusters` resolves them once per command)."""
        try:
            return client_settings(self.bootstrap, self.command_config)
        except BadInput as exc:
            raise BadInput(self._named(exc.message)) from None

    def java_properties(self) -> dict[str, str]:
        """The command config's Java client properties as written (also :attr:`ClientSettings.java`)."""
        try:
            return load_command_config(self.command_config)
        except BadInput as exc:
            raise BadInput(self._named(exc.message)) from None

    def _named(self, message: str) -> str:
        return (message.replace("--command-config", f"--{self.role}-command-config")
                .replace("--bootstrap-server", f"--{self.role}-bootstrap")
                .replace(" (or a playbook with kafka.bootstrap_servers)", ""))


@dataclass(frozen=True)
class Request:
    source: Side
    target: Side
    topics: str | None = None
    groups: str | None = None


class Clusters:
    """Both clusters of one command (see the module): settings resolved once, each cluster connected
    once on first use (``source`` before ``target`` wherever both are read, as the steps name them)."""

    def __init__(self, source: Side, target: Side, timeout_s: float = 15.0):
        self.sides = {"source": source, "target": target}
        self.timeout_s = timeout_s
        self._settings: dict[str, ClientSettings] = {}
        self._clusters: dict[str, MirrorCluster] = {}
        self._book: MirrorBook | None = None

    def settings(self, role: str) -> ClientSettings:
        if role not in self._settings:
            self._settings[role] = self.sides[role].settings()
        return self._settings[role]

    def cluster(self, role: str) -> MirrorCluster:
        if role not in self._clusters:
            self._clusters[role] = MirrorCluster(self.settings(role), role, timeout_s=self.timeout_s)
        return self._clusters[role]

    @property
    def source(self) -> MirrorCluster:
        return self.cluster("source")

    @property
    def target(self) -> MirrorCluster:
        return self.cluster("target")

    def java_properties(self, role: str) -> dict[str, str]:
        """The side's Java client properties (for MirrorMaker, a Java client)."""
        return self.settings(role).java

    def book(self, source_id: str | None = None, target_id: str | None = None) -> MirrorBook:
        """The mirror's bookkeeping on the target (the same one for the whole command)."""
        if self._book is None:
            source_id = source_id or self.source.cluster_id()
            self._book = MirrorBook(self.target, source_id, target_id)
        return self._book


def read_plan(req: Request, clusters: Clusters) -> MirrorPlan:
    """Read both clusters and plan (refusals are :class:`BadInput`; nothing is changed)."""
    wanted = compile_filter(req.topics, "--topics").fullmatch
    compile_filter(req.groups, "--groups")
    clusters.settings("source")  # both sides' settings first: a bad command config is named before any wait
    clusters.settings("target")
    source = clusters.source.read(configs_of=wanted)
    # the target's release: a Kafka 4 target (KRaft) refuses topic configs it removed (core.mirror.plan.REMOVED_IN_KAFKA_4)
    target = clusters.target.read(with_groups=False, with_acls=False, configs_of=wanted, with_release=True)
    return plan_mirror(source, target, req.topics, req.groups)


class MirrorBook:
    """The bookkeeping of one mirror (source cluster -> target cluster) in :data:`MIRROR_TOPIC` on the
    target: what ``kmigrate mirror`` did, read back by ``status`` and by a re-run of ``cutover``."""

    def __init__(self, target: MirrorCluster, source_id: str, target_id: str | None = None):
        self.target = target
        self.topic = BookkeepingTopic(target.settings, MIRROR_TOPIC)
        self.plan_id = mirror_plan_id(source_id, target_id or target.cluster_id())

    def exists(self) -> bool:
        return self.topic.exists(self.target.admin)

    def values(self) -> list[dict]:
        """Every record value of this mirror, in order (``[]`` before the first)."""
        return [dict(r.value) for r in self.topic.read().records if r.value.get("plan_id") == self.plan_id]

    def append(self, kind: str, subject: str, **fields) -> dict:
        """Write one record (``acks=all``, waited for); the topic is created on first use."""
        if not self.exists():
            self.topic.ensure(self.target.admin, self.target.broker_ids())
        rec = make_record(self.plan_id, kind, subject, time.time(), **fields)
        self.topic.append([rec])
        return dict(rec.value)


def resolve_sides(state_dir: Path, source: Side | None, target: Side | None) -> tuple[Side, Side, dict[str, int] | None, str]:
    """Both sides for ``status``: the flags given, else what ``start`` recorded in ``state_dir``."""
    state = MirrorMakerProcess(state_dir).read_state() or {}
    if source is None and state.get("source_bootstrap"):
        source = Side(state["source_bootstrap"], state.get("source_command_config"), "source")
    if target is None and state.get("target_bootstrap"):
        target = Side(state["target_bootstrap"], state.get("target_command_config"), "target")
    if source is None or target is None:
        raise BadInput(f"no mirror was started from {state_dir}: give --source-bootstrap and --target-bootstrap "
                       "(or the --state-dir of kmigrate mirror start)")
    return source, target, state.get("topics"), state.get("groups") or ".*"


@dataclass
class Started:
    """A started mirror as ``status``, ``stop``, ``translate`` and ``cutover`` see it: its state directory,
    both clusters (the flags given, else those ``start`` recorded), the topics start recorded (``None``:
    every non-internal topic of the source) and its ``--groups`` filter."""

    state_dir: Path
    clusters: Clusters
    topics: dict[str, int] | None
    groups_filter: str

    @classmethod
    def open(cls, state_dir: Path, source: Side | None = None, target: Side | None = None,
             timeout_s: float = 15.0) -> "Started":
        source, target, topics, groups = resolve_sides(state_dir, source, target)
        return cls(state_dir, Clusters(source, target, timeout_s), topics, groups)

    @property
    def source(self) -> Side:
        return self.clusters.sides["source"]

    @property
    def target(self) -> Side:
        return self.clusters.sides["target"]
