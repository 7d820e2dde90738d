"""The mirror engine: what copies the records from the source to the target, behind one interface.

Two implementations: MirrorMaker 2 (``runner/mirror/mm2.py``, the default) and Kafka's legacy
MirrorMaker 1 (``runner/mirror/mm1.py``). ``runner/mirror/engines.py`` picks one by the name given to
``--engine`` or recorded in ``mirror.json``; nothing else asks which engine it is. What an engine does:

- ``needs``: the rights it needs with kmigrate's client settings, checked before anything is created;
- ``start`` / ``stop`` / ``refuse_if_running``: its processes in the state directory;
- ``read_status`` (and, built on it, :meth:`Engine.status` and :meth:`Engine.wait_caught_up`): each
  mirrored partition's lag, as one :class:`migrate.core.mirror.status.MirrorStatus`;
- for the cut-over: ``cutover_reads`` (its topics on the target the cut-over reads), ``next_to_copy``
  (gate b: what it has not copied yet) and ``translate_offsets`` (gate d: the groups' offsets on the target);
- ``connect_configs``: its flow as Kafka Connect connectors (MirrorMaker 2 only).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, ClassVar, Protocol

from migrate.core.mirror.cutover import Translation
from migrate.core.mirror.plan import MirrorPlan, compile_filter
from migrate.core.mirror.rights import Needs
from migrate.core.mirror.status import MirrorStatus, copied_since
from migrate.runner.mirror.clusters import Request, Side, Started
from migrate.waiting import Clock, poll

TP = tuple[str, int]
Say = Callable[[str], None]


class Outcome(Protocol):
    """What ``start`` or ``stop`` did: its JSON document and its lines of text (``topics``: what ``start``
    created first, ``None`` when it started nothing)."""

    def to_dict(self) -> dict: ...

    def lines(self) -> list[str]: ...


class Engine(ABC):
    """One mirror engine (see the module)."""

    name: ClassVar[str]  # as --engine takes it and mirror.json records it
    label: ClassVar[str]  # in words: "MirrorMaker 2"
    notices: ClassVar[tuple[str, ...]] = ()  # warnings its plan and start print first
    live_progress: ClassVar[bool] = True  # waits show their progress as it goes (a bar on a terminal)
    cutover_reads: ClassVar[tuple[str, ...]] = ()  # its topics on the target the cut-over reads
    exactly_once: ClassVar[bool] = True  # copies each record once (else a restart copies some again: duplicates)

    def check_options(self, instances: int = 1) -> None:
        """Refuse options this engine cannot take (BadInput), before anything is read."""

    @abstractmethod
    def needs(self, plan: MirrorPlan, group: str | None = None) -> Needs:
        """The rights this engine needs on (source, target) to copy ``plan``, beyond create-topics' own."""

    @abstractmethod
    def refuse_if_running(self, state_dir: Path) -> None:
        """BadInput when this engine runs from ``state_dir`` (another engine is about to start there)."""

    @abstractmethod
    def start(self, req: Request, state_dir: Path, *, heap_mb: int, tasks: int = 2, instances: int = 1) -> Outcome:
        """Plan, create the target's topics, start its processes (those not running already)."""

    @abstractmethod
    def stop(self, state_dir: Path, timeout_s: float = 30.0) -> Outcome:
        """Stop its processes (SIGTERM, wait, SIGKILL)."""

    @abstractmethod
    def read_status(self, mirror: Started, topic_re: re.Pattern[str], quick: bool = False) -> MirrorStatus:
        """Each mirrored partition's lag and the processes; ``quick``: only what a wait needs."""

    @abstractmethod
    def next_to_copy(self, mirror: Started, ends: dict[TP, tuple[int, int]]) -> dict[TP, int]:
        """Cut-over gate b: (topic, partition) -> the next source offset it copies, for each partition of
        ``ends`` ((topic, partition) -> (log start, end)) it has not copied to the end."""

    @abstractmethod
    def translate_offsets(self, mirror: Started, topics: dict[str, int], groups: tuple[str, ...],
                          committed: dict[str, dict[TP, int]], timeout_s: float, say: Say,
                          clock: Clock) -> list[Translation]:
        """Cut-over gate d: each group's committed source offsets (``committed``) on the target, before
        the duplicates are counted."""

    @abstractmethod
    def connect_configs(self, req: Request, tasks: int, out: Path | None):
        """``mirror start --connect-config``: the flow as Kafka Connect connector configs."""

    # ------------------------------------------------------------------ built on the above
    def status(self, state_dir: Path, source: Side | None = None, target: Side | None = None,
               topics_filter: str | None = None) -> MirrorStatus:
        """``mirror status``: the sides given, else those ``start`` recorded in ``state_dir``."""
        topic_re = compile_filter(topics_filter, "--topics")
        return self.read_status(Started.open(state_dir, source, target), topic_re)

    def wait_caught_up(self, state_dir: Path, source: Side | None, target: Side | None, topics_filter: str | None,
                       timeout_s: float, interval_s: float = 2.0,
                       on_status: Callable[[MirrorStatus], None] = lambda s: None) -> tuple[bool, MirrorStatus]:
        """Look (quickly) every ``interval_s`` until every partition has copied what its source held at the first
        look (:func:`~migrate.core.mirror.status.copied_since`: lag 0 once the producers stop) or ``timeout_s``
        passes: ``(caught up, the last status)``, the last one complete. Both clusters are connected once."""
        topic_re = compile_filter(topics_filter, "--topics")
        mirror = Started.open(state_dir, source, target)
        first: list[MirrorStatus] = []

        def check() -> MirrorStatus | None:
            current = self.read_status(mirror, topic_re, quick=True)
            on_status(current)
            if not first:
                first.append(current)
            return current if current.caught_up or copied_since(first[0], current) else None

        done = poll(check, timeout_s=timeout_s, interval_s=interval_s)
        if done is not None and done.complete:
            return True, done
        return done is not None, self.read_status(mirror, topic_re)
