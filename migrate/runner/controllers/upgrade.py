"""Sequencer of ``kmigrate controllers upgrade-kraft-version``: a static KRaft quorum made dynamic (Kafka 4.1+).

1. **Read** the leader and its quorum (DescribeQuorum v2), the finalized features the *active controller* reports
   (ApiVersions: ``kraft.version``, ``metadata.version``; never another controller's word: an observer controller
   can report ``kraft.version`` 1 in a static quorum), and each voter's supported ``metadata.version`` (its release).
2. **Decide** (:func:`migrate.core.controllers.upgrade.check_upgrade`): refused (BadInput, nothing sent), dynamic
   already (nothing sent: a rerun changes nothing), or send.
3. **Send** UpdateFeatures ``kraft.version=1`` to the active controller on its controller listener (``--dry-run``
   stops before it and says what it would send). A refusal or a lost answer is followed by a fresh read: the
   upgrade may have happened (then it is done), or another controller became active (then it is sent there), at
   most :data:`MAX_TRIES` times.
4. **Wait**, bounded, until ``kraft.version`` 1 is read back at the active controller, at every voter that answers
   and, with ``--bootstrap-server``, at a broker.
5. **What is left**: the controllers and brokers that still run with ``controller.quorum.voters`` (DescribeConfigs on
   each controller's listener and on the brokers), to be rolled with ``controller.quorum.bootstrap.servers``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from migrate.adapters.kafka import voters as kv
from migrate.core.clientconfig import ClientSettings
from migrate.core.controllers.config import QUORUM_VOTERS
from migrate.core.controllers.quorum import DYNAMIC
from migrate.core.controllers.upgrade import (
    KRAFT_VERSION, METADATA_VERSION, FeatureReading, check_upgrade, metadata_version_text, next_steps, request_text,
    resolve_release, restart_unregistered, still_static, unregistered_controllers,
)
from migrate.errors import BadInput, StepFailed
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock, wait_until

log = logging.getLogger("kmigrate.controllers")

Emit = Callable[[dict], None]
MAX_TRIES = 3
"""Times UpdateFeatures is sent when Kafka answers with a retriable error (another controller became active, no
answer) before kmigrate stops with the error."""


@dataclass
class KraftUpgradeRequest:
    """What ``kmigrate controllers upgrade-kraft-version`` was asked: ``controllers`` (``--bootstrap-controller``),
    ``release`` (``--kafka-version``: used only where the controllers cannot tell theirs)."""

    controllers: tuple[str, ...]
    settings: ClientSettings | None = None
    broker_settings: ClientSettings | None = None
    release: tuple[int, int] | None = None
    dry_run: bool = False
    timeout_s: float = 60.0
    interval_s: float = 0.5


@dataclass
class KraftUpgradeResult:
    action: str = ""  # upgraded, already-dynamic, dry-run
    leader: int | None = None
    kraft_version_before: int | None = None
    kraft_version_after: int | None = None
    metadata_version: str = ""
    release: str = ""
    request: str = ""  # what was sent, or (dry run) would be sent; "" when nothing
    voters: list[dict] = field(default_factory=list)
    bootstrap_servers: str = ""
    static_controllers: list[int] | None = None
    static_brokers: list[int] | None = None  # None: not asked (no --bootstrap-server)
    next_steps: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"action": self.action, "leader": self.leader, "kraft_version_before": self.kraft_version_before,
                "kraft_version_after": self.kraft_version_after, "metadata_version": self.metadata_version,
                "release": self.release, "request": self.request, "voters": self.voters,
                "bootstrap_servers": self.bootstrap_servers, "static_controllers": self.static_controllers,
                "static_brokers": self.static_brokers, "next_steps": self.next_steps, "seconds": round(self.seconds, 1)}


class KraftUpgrade:
    def __init__(self, request: KraftUpgradeRequest, emit: Emit | None = None,
                 clock: Clock | FakeClock = SYSTEM_CLOCK):
        self.req = request
        self.emit = emit or (lambda _e: None)
        self.clock = clock

    # ------------------------------------------------------------------ reads
    def _view(self) -> kv.ControllerView | None:
        """The leader, its quorum and its finalized kraft.version; None when no leader answers while a controller
        does (a quorum without a leader); StepFailed when no controller answers at all."""
        try:
            return kv.read_controllers(self.req.controllers, self.req.settings)
        except StepFailed:
            if any(kv.controller_features(a, self.req.settings, timeout_s=3.0) is not None for a in self.req.controllers):
                return None
            raise

    def _addresses(self, view: kv.ControllerView) -> dict[int, str]:
        """Each voter's controller listener ``host:port`` (DescribeQuorum ``nodes``; one listener name, else the
        endpoint among ``--bootstrap-controller``, else the first)."""
        out = {}
        for i in view.quorum.voter_ids:
            found = [e.address for e in view.quorum.endpoints(i)]
            given = [a for a in found if a in self.req.controllers]
            if found:
                out[i] = (given or found)[0]
        return out

    def read(self) -> tuple[kv.ControllerView | None, FeatureReading]:
        view = self._view()
        if view is None:
            return None, FeatureReading(None, None, None, self.req.release)
        features = kv.controller_features(view.leader, self.req.settings)
        finalized = features["finalized"] if features is not None else None
        levels = []
        for address in {*self._addresses(view).values(), *self.req.controllers}:
            seen = features if address == view.leader else kv.controller_features(address, self.req.settings, 3.0)
            if seen is not None:
                levels.append((seen["supported"].get(METADATA_VERSION) or (None, None))[1])
        reading = FeatureReading(view.quorum.leader_id, None if finalized is None else finalized.get(KRAFT_VERSION, 0),
                                 None if finalized is None else finalized.get(METADATA_VERSION),
                                 resolve_release(levels, self.req.release))
        return view, reading

    def _static_nodes(self, view: kv.ControllerView) -> tuple[list[int], list[int] | None]:
        """The voters and the brokers that still run with controller.quorum.voters (a controller that does not
        answer DescribeConfigs is named too: it could not be asked); brokers None without --bootstrap-server."""
        from migrate.adapters.kafka.quorum import controller_configs

        controllers = {}
        for i, address in self._addresses(view).items():
            configs = controller_configs(address, i, (QUORUM_VOTERS,), settings=self.req.settings)
            controllers[i] = "?" if configs is None else configs.get(QUORUM_VOTERS)
        brokers = None
        if self.req.broker_settings is not None:
            from migrate.adapters.kafka.client import admin_client, broker_static_configs, live_broker_ids

            admin = admin_client(self.req.broker_settings)
            configs = broker_static_configs(admin, live_broker_ids(admin), (QUORUM_VOTERS,))
            brokers = still_static({b: c.get(QUORUM_VOTERS) for b, c in configs.items()})
        return still_static(controllers), brokers

    def _unregistered(self, view: kv.ControllerView) -> list[int]:
        """Observer controllers not registered (:func:`unregistered_controllers`); [] without --bootstrap-server
        (the brokers' ids are needed to tell an observer controller from a broker) or when DescribeCluster fails."""
        if self.req.broker_settings is None:
            return []
        from migrate.adapters.kraft.registrations import broker_registrations

        cluster = kv.describe_cluster_controllers(view.leader, self.req.settings)
        if cluster is None:
            return []
        try:  # every registered broker, fenced ones too where Kafka lists them (a stopped broker may still observe)
            brokers, _complete = broker_registrations(self.req.broker_settings.bootstrap_servers.split(","),
                                                      self.req.broker_settings)
        except StepFailed:
            return []
        return unregistered_controllers(view.quorum.observer_ids, cluster["controllers"], brokers)

    # ------------------------------------------------------------------ the run
    def run(self) -> KraftUpgradeResult:
        start = self.clock.now()
        view, reading = self.read()
        send = check_upgrade(reading)  # BadInput: nothing sent (a reading without a leader among the refusals)
        if view is None:  # pragma: no cover (check_upgrade refused it)
            raise StepFailed("no leader")
        result = KraftUpgradeResult(leader=reading.leader_id, kraft_version_before=reading.kraft_version,
                                    metadata_version=metadata_version_text(reading.metadata_version),
                                    release="unknown" if reading.release is None else "%d.%d" % reading.release)
        self.emit({"event": "features", "leader": reading.leader_id, "kraft_version": reading.kraft_version,
                   "metadata_version": result.metadata_version, "release": result.release})
        if self.req.broker_settings is not None and kv.broker_finalized_features(self.req.broker_settings) is None:
            raise BadInput(f"no broker answered at --bootstrap-server {self.req.broker_settings.bootstrap_servers} "
                           "(DescribeFeatures): check it and --command-config; nothing was sent")
        if not send:
            result.action = "already-dynamic"
        elif self.req.dry_run:
            result.action, result.request = "dry-run", request_text(reading.leader_id, view.leader)
            result.kraft_version_after = reading.kraft_version
            return self._finish(result, view, start)
        else:
            result.action, result.request = "upgraded", self._send(view, reading)
            view = self._wait_dynamic()
        result.kraft_version_after = DYNAMIC
        return self._finish(result, view, start)

    def _send(self, view: kv.ControllerView, reading: FeatureReading) -> str:
        """UpdateFeatures to the active controller, again at the new one after a retriable refusal; the request as
        last sent. Returns early when a fresh read shows kraft.version 1 (a lost answer, or someone else's)."""
        for attempt in range(1, MAX_TRIES + 1):
            sent = request_text(reading.leader_id, view.leader)
            self.emit({"event": "send", "message": sent})
            try:
                kv.upgrade_kraft_version(view.leader, settings=self.req.settings)
                return sent
            except kv.FeatureUpdateError as exc:
                log.info("%s", exc)
                fresh, reading = self.read()
                if reading.kraft_version is not None and reading.kraft_version >= DYNAMIC:
                    return sent
                if not exc.retriable or attempt == MAX_TRIES or fresh is None:
                    raise StepFailed(f"{exc} (sent {attempt} time(s)); kraft.version is still "
                                     f"{reading.kraft_version}, nothing was changed: fix it and run the same command "
                                     "again") from None
                self.emit({"event": "retry", "message": f"{exc}: reading the quorum again"})
                view = fresh
        raise StepFailed("UpdateFeatures was not sent")  # pragma: no cover

    def _wait_dynamic(self) -> kv.ControllerView:
        """Read until kraft.version 1 shows at the active controller, every voter that answers and a broker."""
        last: dict = {}

        def dynamic() -> kv.ControllerView | None:
            view = self._view()
            if view is None or view.kraft_version != DYNAMIC:
                last["at"] = "the active controller"
                return None
            for i, address in self._addresses(view).items():
                if kv.kraft_version(address, self.req.settings, 3.0) not in (None, DYNAMIC):
                    last["at"] = f"controller {i}"
                    return None
            if self.req.broker_settings is not None:
                features = kv.broker_finalized_features(self.req.broker_settings)
                if features is None or features.get(KRAFT_VERSION) != DYNAMIC:
                    last["at"] = "the brokers"
                    return None
            return view

        what = "finalized kraft.version 1 at the active controller, every voter that answers and the brokers"
        return wait_until(dynamic, timeout_s=self.req.timeout_s, interval_s=self.req.interval_s, what=what,
                          clock=self.clock, on_timeout=lambda: StepFailed(
                              f"the active controller accepted kraft.version=1, but {last.get('at', 'the cluster')} "
                              f"did not show it within {self.req.timeout_s:g} s (waiting for {what}): run the same "
                              "command again (it reads kraft.version first)"))

    def _finish(self, result: KraftUpgradeResult, view: kv.ControllerView, start: float) -> KraftUpgradeResult:
        result.voters = [{"id": v.id, "directory_id": v.directory_id} for v in view.quorum.voters]
        addresses = self._addresses(view)
        result.bootstrap_servers = ",".join(addresses[i] for i in sorted(addresses))
        try:
            result.static_controllers, result.static_brokers = self._static_nodes(view)
        except BadInput as exc:
            if result.action != "upgraded":
                raise
            raise StepFailed(f"kraft.version is 1 now, but the nodes' configs could not be read: {exc.message}; run "
                             "the same command again to see what is left") from None
        result.next_steps = next_steps(result.bootstrap_servers, result.static_controllers, result.static_brokers)
        restart = restart_unregistered(self._unregistered(view))
        if restart:
            result.next_steps.insert(0, restart)
        if result.action == "dry-run":
            result.next_steps.insert(0, "run it without --dry-run: kmigrate sends it, then reads kraft.version 1 back")
        result.seconds = self.clock.now() - start
        return result


def run_kraft_upgrade(request: KraftUpgradeRequest, emit: Emit | None = None) -> KraftUpgradeResult:
    return KraftUpgrade(request, emit).run()
