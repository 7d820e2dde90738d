"""The settings of a partitions command, resolved once: flag > plan > playbook > default.

``kmigrate partitions`` (run and ``--cancel``) and ``kmigrate status`` take the same sources: the
options, a plan written by ``kmigrate plan`` (``--plan``) and a playbook (``--playbook``).
:func:`resolve` reads them in that order of precedence for the five settings they share (the
broker mapping, the throttle, the bookkeeping topic and the two move caps) and returns one frozen
:class:`Settings`; the commands never pick between the sources themselves.

    >>> s = resolve(Inputs(), throttle="10MB/s", mapping="1:4")
    >>> (s.mapping, s.throttle_bytes_per_s, s.bookkeeping_topic, s.max_moves_per_broker, s.plan_id)
    ({1: 4}, 10000000, '__kmigrate_migration', 5, 'mapping-1.4')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional

from migrate.core.ledger import DEFAULT_TOPIC
from migrate.core.partitions.mapping import mapping_plan_id, parse_mapping
from migrate.core.partitions.scheduler import DEFAULT_MAX_MOVES_PER_BROKER, Caps
from migrate.core.units import parse_rate
from migrate.errors import BadInput

if TYPE_CHECKING:
    from migrate.core.clientconfig import ClientSettings
    from migrate.core.plan.document import Plan
    from migrate.core.playbook import Playbook

DEFAULT_THROTTLE = "50MB/s"


@dataclass(frozen=True)
class Inputs:
    """The documents an operator named: a playbook and a plan (either may be absent)."""

    playbook: Optional["Playbook"] = None
    plan: Optional["Plan"] = None

    @classmethod
    def load(cls, playbook: Optional[Path], plan: Optional[Path]) -> "Inputs":
        """Read ``--playbook`` and ``--plan`` (BadInput naming the file when one cannot be read)."""
        from migrate.files import load_plan, load_playbook

        return cls(load_playbook(playbook) if playbook is not None else None,
                   load_plan(plan) if plan is not None else None)

    def client(self, bootstrap_server: Optional[str], command_config: Optional[Path]) -> "ClientSettings":
        """Kafka client settings: ``--bootstrap-server`` > the playbook's; the playbook's client
        properties, then ``--command-config`` over them."""
        from migrate.files import client_settings

        extra: dict[str, str] = {}
        pb = self.playbook
        if pb is not None:
            bootstrap_server = bootstrap_server or pb.kafka.bootstrap_servers
            extra = {k: str(v) for k, v in pb.kafka.client_settings().items() if k != "bootstrap.servers"}
        return client_settings(bootstrap_server, command_config, extra)


@dataclass(frozen=True)
class Settings:
    """What a partitions command works with, every value resolved (see :func:`resolve`)."""

    mapping: Mapping[int, int] | None
    plan_id: str | None
    throttle_bytes_per_s: int
    bookkeeping_topic: str
    max_moves_per_broker: int
    max_moves_cluster: int | None
    keep: tuple[int, ...] = ()
    plan_targets: Mapping[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)

    @property
    def caps(self) -> Caps:
        return Caps(per_broker=self.max_moves_per_broker, cluster=self.max_moves_cluster)


def throttle_flag(text: str) -> int:
    """``--throttle`` in bytes per second (BadInput naming the option)."""
    try:
        return parse_rate(text)
    except BadInput as exc:
        raise BadInput(f"--throttle: {exc.message}") from None


def resolve(inputs: Inputs, *, mapping: Optional[str] = None, throttle: Optional[str] = None,
            bookkeeping_topic: Optional[str] = None, max_moves_per_broker: Optional[int] = None,
            max_moves_cluster: Optional[int] = None, run: bool = False, force: bool = False) -> Settings:
    """Flag > plan > playbook > default, once, for the five shared settings.

    ``run`` (``kmigrate partitions`` moving data): the mapping is required and must agree with the
    plan's, and the plan's errors that block the partitions step stop it here (``force`` lets the
    forceable ones pass). Otherwise (``status``, ``--cancel``) the mapping may stay unknown and a
    ``--mapping`` is taken as given.
    """
    pb, pl = inputs.playbook, inputs.plan
    mig = pb.migration if pb is not None else None
    the_mapping = _mapping(mapping, inputs) if run else _known_mapping(mapping, inputs)
    if run and pl is not None:
        blocking = pl.errors(force=force, step="partitions")
        if blocking:
            raise BadInput(f"plan {pl.plan_id}: {blocking[0].message}" + (f" (and {len(blocking) - 1} more error(s))" if len(blocking) > 1 else ""))
    if throttle is not None:
        rate = throttle_flag(throttle)
    elif pl is not None:
        rate = pl.throttle_bytes_per_s
    elif mig is not None:
        rate = mig.throttle_bytes_per_s
    else:
        rate = throttle_flag(DEFAULT_THROTTLE)
    book = bookkeeping_topic or (pl.bookkeeping_topic if pl else None) or (mig.bookkeeping_topic if mig else None) or DEFAULT_TOPIC
    per_broker = max_moves_per_broker or (pl.max_partition_moves_per_broker if pl else None) or (
        mig.max_partition_moves_per_broker if mig else None) or DEFAULT_MAX_MOVES_PER_BROKER
    cluster = max_moves_cluster or (pl.max_partition_moves_cluster if pl else None) or (mig.max_partition_moves_cluster if mig else None)
    plan_id = pl.plan_id if pl is not None else (mapping_plan_id(the_mapping) if the_mapping else None)
    return Settings(
        mapping=the_mapping,
        plan_id=plan_id,
        throttle_bytes_per_s=rate,
        bookkeeping_topic=book,
        max_moves_per_broker=per_broker,
        max_moves_cluster=cluster,
        keep=tuple(pb.brokers.keep) if pb is not None else (),
        plan_targets={(m.topic, m.partition): tuple(m.target) for m in pl.moves} if pl is not None else {},
    )


def _mapping(flag: Optional[str], inputs: Inputs) -> dict[int, int]:
    """The mapping a run moves by: ``--mapping`` (which must agree with the plan's), the plan's,
    the playbook's; BadInput when there is none."""
    pb, pl = inputs.playbook, inputs.plan
    if flag is not None:
        the_mapping = parse_mapping(flag)
        if pl is not None and dict(pl.mapping) != the_mapping:
            raise BadInput(f"--mapping {flag!r} differs from the plan's mapping {dict(pl.mapping)}: drop one of them")
    elif pl is not None:
        the_mapping = dict(pl.mapping)
    elif pb is not None and pb.brokers.mapping:
        the_mapping = dict(pb.brokers.mapping)
    else:
        raise BadInput("no broker mapping: give --mapping OLD:NEW,... (e.g. 1:4,2:5,3:6), --playbook or --plan")
    if not the_mapping:
        raise BadInput("the broker mapping is empty: give --mapping OLD:NEW,... (e.g. 1:4,2:5,3:6)")
    return the_mapping


def _known_mapping(flag: Optional[str], inputs: Inputs) -> dict[int, int] | None:
    """The mapping if any source gives one (``None``: unknown; the ledger's latest plan is used)."""
    pb, pl = inputs.playbook, inputs.plan
    if flag:
        return parse_mapping(flag)
    if pl is not None:
        return dict(pl.mapping)
    if pb is not None and pb.brokers.mapping:
        return dict(pb.brokers.mapping)
    return None
