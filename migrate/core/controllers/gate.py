"""kmigrate's own catch-up gate for a new controller before it is added as a voter (pure).

Kafka's AddRaftVoter accepts a new voter once it has *ever* caught up and fetched within the last hour
(``lastCaughtUpTimestamp > 0``): a controller that lagged a minute ago, or one formatted again since, passes.
Adding a voter that cannot keep up shrinks the quorum's fault tolerance the moment the change commits, so kmigrate
asks more, on every poll (:func:`judge_observer`):

- the controller is an observer of the quorum (it fetches from the leader), not yet a voter;
- its directory id is the one expected (the operator's, or the one first seen in this wait: a controller formatted
  again mid-wait shows another, and AddRaftVoter must name the directory that caught up);
- its lag (the leader's log end offset minus its own) is at most :data:`MAX_LAG_RECORDS`;
- its last fetch and its ``lastCaughtUpTimestamp`` are at most :data:`MAX_AGE_MS` old on the leader's clock.

and :class:`CatchUpWatch` holds that over :data:`POLLS_NEEDED` polls in a row, the last fetch moving on between
two polls (a controller paused a second ago still shows a fetch within the age bound; any failing poll starts the
count again). Nothing outside one wait is kept: killed and run again, the wait starts from a fresh reading.
"""

from __future__ import annotations

from dataclasses import dataclass

from migrate.core.controllers.quorum import Quorum

MAX_LAG_RECORDS = 10
"""The leader appends a no-op record every 500 ms, so a controller that keeps up reads 0 to a few records behind."""
MAX_AGE_MS = 5_000
"""An observer fetches continuously (a long poll of at most 500 ms by default): 5 s without a fetch or without having
caught up means it is stopped, paused or too slow."""
POLLS_NEEDED = 3
"""Polls in a row the gate must pass (one good poll can fall between a pause and its consequences)."""


def judge_observer(quorum: Quorum, node_id: int, expected_directory_id: str | None = None, *,
                   now_ms: int | None = None, max_lag: int = MAX_LAG_RECORDS, max_age_ms: int = MAX_AGE_MS) -> str | None:
    """Why controller ``node_id`` is not caught up on this reading (one line), or None when it is.

    ``now_ms`` is used only when the leader does not report its own time (DescribeQuorum v0).

    >>> from migrate.core.controllers.quorum import Replica
    >>> q = Quorum(1, 5, 100, (Replica(1, "d1", 100, None, 50_000),), (Replica(7, "d7", 99, 49_900, 49_800),))
    >>> judge_observer(q, 7, "d7") is None
    True
    >>> judge_observer(q, 7, "dX")
    'controller 7 runs with directory id d7, not dX: it was formatted again; let this wait start over (run it again) or check which machine runs node.id 7'
    >>> judge_observer(q, 8)
    'controller 8 is not an observer of the quorum (observers: 7): start it, formatted with --no-initial-controllers (kmigrate controllers controller-config 8)'
    """
    if quorum.leader_id is None or quorum.leader is None:
        return "the quorum has no leader: a new controller is judged against the leader's log"
    if quorum.is_voter(node_id):
        return f"controller {node_id} is already a voter"
    me = quorum.observer(node_id)
    if me is None:
        return (f"controller {node_id} is not an observer of the quorum (observers: "
                f"{', '.join(map(str, quorum.observer_ids)) or 'none'}): start it, formatted with "
                f"--no-initial-controllers (kmigrate controllers controller-config {node_id})")
    if me.directory_id is None:
        return (f"controller {node_id} shows no directory id (DescribeQuorum v2 gives it from Kafka 3.9; a controller "
                "formatted before 3.9 has none): format it with a 3.9+ kafka-storage")
    if expected_directory_id is not None and me.directory_id != expected_directory_id:
        return (f"controller {node_id} runs with directory id {me.directory_id}, not {expected_directory_id}: it was "
                f"formatted again; let this wait start over (run it again) or check which machine runs node.id {node_id}")
    lag = quorum.lag(me)
    if lag is None:
        return f"controller {node_id}'s log end offset is not known yet"
    if lag > max_lag:
        return f"controller {node_id} is {lag} records behind the leader (at most {max_lag})"
    now = quorum.leader_now_ms(now_ms)
    for what, at in (("fetched", me.last_fetch_ms), ("caught up", me.last_caught_up_ms)):
        if at is None:
            return f"controller {node_id} has not {what} yet"
        if now is not None and now - at > max_age_ms:
            return f"controller {node_id} last {what} {(now - at) / 1000:.1f} s ago (at most {max_age_ms / 1000:g} s)"
    return None


@dataclass
class CatchUpWatch:
    """The polls of one wait for controller ``node_id``: passed after ``needed`` polls in a row that pass.

    The directory id it expects is the operator's (``expected_directory_id``) or, without one, the first seen in
    this wait (:attr:`directory_id` is the one AddRaftVoter must name).

    >>> from migrate.core.controllers.quorum import Replica
    >>> def q(fetched): return Quorum(1, 5, 100, (Replica(1, "d1", 100, None, 50_000),), (Replica(7, "d7", 100, fetched, 49_990),))
    >>> w = CatchUpWatch(7, needed=2)
    >>> w.observe(q(49_980)), w.observe(q(49_990)), w.directory_id
    (False, True, 'd7')
    >>> w.observe(q(49_990)), w.problem
    (False, 'controller 7 has not fetched since the last poll (paused or hung?)')
    """

    node_id: int
    expected_directory_id: str | None = None
    needed: int = POLLS_NEEDED
    max_lag: int = MAX_LAG_RECORDS
    max_age_ms: int = MAX_AGE_MS
    consecutive: int = 0
    polls: int = 0
    directory_id: str | None = None
    problem: str | None = "no poll yet"
    last_fetch_ms: int | None = None

    def __post_init__(self) -> None:
        if self.needed < 1:
            raise ValueError("needed must be 1 or more")
        self.directory_id = self.expected_directory_id

    def observe(self, quorum: Quorum, now_ms: int | None = None) -> bool:
        """Judge one more poll; True once the gate has passed."""
        self.polls += 1
        if self.directory_id is None and (me := quorum.observer(self.node_id)) is not None:
            self.directory_id = me.directory_id
        problem = judge_observer(quorum, self.node_id, self.directory_id, now_ms=now_ms,
                                 max_lag=self.max_lag, max_age_ms=self.max_age_ms)
        me = quorum.observer(self.node_id)
        fetched = me.last_fetch_ms if me is not None else None
        if problem is None and fetched is not None and self.last_fetch_ms is not None and fetched <= self.last_fetch_ms:
            # a recent fetch is not enough: one that does not move between polls is a paused or hung controller
            problem = f"controller {self.node_id} has not fetched since the last poll (paused or hung?)"
        self.last_fetch_ms = fetched
        self.consecutive = 0 if problem else self.consecutive + 1
        if problem is None and self.consecutive < self.needed:
            problem = f"controller {self.node_id} caught up on {self.consecutive} of {self.needed} polls in a row"
        self.problem = problem
        return problem is None

    @property
    def passed(self) -> bool:
        return self.problem is None

    def failure(self, waited_s: float) -> str:
        """The gate failure an operator reads when the wait ends without a pass (one line)."""
        return (f"controller {self.node_id} did not catch up within {waited_s:g} s ({self.polls} polls): {self.problem}; "
                "nothing was changed in the quorum: fix it and run the same command again")
