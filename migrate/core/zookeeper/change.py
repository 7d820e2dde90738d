"""A ZooKeeper membership change, pure: plan it, refuse it, judge its outcome.

The rules here are the ones that keep a quorum system safe while its voters are replaced:

* joiners start as observers of the last committed config (never as participants: several
  joiners listed as participants can elect a leader of their own, a split brain), with ids
  greater than every current id;
* the target config must be able to form a quorum from servers that are up and in sync;
* done one server at a time (``--step-by-step``), every step keeps a majority of the config it
  leaves and of the config it enters, so the two always share a member that saw every commit.

The configs are :mod:`migrate.core.zookeeper.config`'s. No I/O, no clock: the adapters read the
ensemble, the runner (:mod:`migrate.runner.zookeeper.change`) sequences the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from migrate.core.zookeeper.config import OBSERVER, PARTICIPANT, ConfigError, DynamicConfig, Server


class Problem(str):
    """A refusal or a failed check: the one-line sentence an operator reads, with a stable ``code``
    that code decides on (never the wording)."""

    code: str

    def __new__(cls, code: str, message: str) -> "Problem":
        self = super().__new__(cls, message)
        self.code = code
        return self


# ----------------------------------------------------------------- the change
def quorum_size(voters: int) -> int:
    """Votes a config of ``voters`` participants needs to commit (a strict majority)."""
    return voters // 2 + 1


def tolerated_failures(voters: int) -> int:
    return max(0, voters - quorum_size(voters))


@dataclass(frozen=True)
class Change:
    """What the operator asked for: servers to add as voters, ids to remove."""

    add: tuple[Server, ...]
    remove: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "add", tuple(sorted(self.add, key=lambda s: s.id)))
        object.__setattr__(self, "remove", tuple(sorted(set(self.remove))))

    @property
    def add_ids(self) -> tuple[int, ...]:
        return tuple(s.id for s in self.add)


def validate_change(change: Change) -> None:
    """Errors in the request itself, before looking at any ensemble."""
    if not change.add and not change.remove:
        raise ConfigError("nothing to do: give --add and/or --remove")
    ids = change.add_ids
    if len(set(ids)) != len(ids):
        raise ConfigError(f"--add lists a server id twice: {list(ids)}")
    both = sorted(set(ids) & set(change.remove))
    if both:
        raise ConfigError(f"server {both[0]} is both added and removed: give each id to one of --add/--remove")
    for s in change.add:
        if s.id <= 0:
            raise ConfigError(f"server id {s.id}: ZooKeeper server ids are positive integers")


def target_config(committed: DynamicConfig, change: Change) -> DynamicConfig:
    """The config the change leads to: committed servers not removed, plus the added ones as voters.

    Idempotent: ``target_config(target_config(c, ch), ch)`` has the same membership, so a rerun
    after success (or after a partial step-by-step run) aims at the same config.
    """
    by_id = {s.id: s for s in committed.servers if s.id not in change.remove}
    for s in change.add:
        by_id[s.id] = s.with_role(PARTICIPANT)
    return DynamicConfig(tuple(by_id.values()), None)


def is_reached(committed: DynamicConfig, target: DynamicConfig) -> bool:
    """True when the committed config already is the target membership (same ids, roles, addresses)."""
    return committed.same_membership(target)


def joiner_config(committed: DynamicConfig, joiners: tuple[Server, ...]) -> DynamicConfig:
    """The dynamic config a joiner starts with: the committed servers plus every joiner as an observer.

    A joiner already in the committed config keeps its committed line.

    >>> from migrate.core.zookeeper.config import parse_config
    >>> c = parse_config("server.1=a:1:2:participant;a:3\\nversion=1")
    >>> joiner_config(c, (Server(4, "d", 1, 2, client_port=3),)).lines()[-1]
    'server.4=d:1:2:observer;3'
    """
    by_id = {s.id: s for s in committed.servers}
    for j in joiners:
        if j.id not in by_id:
            by_id[j.id] = j.with_role(OBSERVER)
    return DynamicConfig(tuple(by_id.values()), None)


def joiners_of(committed: DynamicConfig, change: Change) -> tuple[Server, ...]:
    """Added servers that are not yet voters of the committed config (they must be up and in sync)."""
    return tuple(s for s in change.add if not ((c := committed.get(s.id)) is not None and c.is_voter))


# problem codes: what code decides on (the sentences may change, the codes do not)
CONFLICTING_MEMBER = "conflicting-member"  # an added id is in the committed config with other addresses
JOINER_ID_ORDER = "joiner-id-order"  # a new server's id is not above every current id
NO_VOTER = "no-voter"  # the target has no voter
NOT_TARGET = "not-target"  # the committed config is not the target
REMOVED_STILL_IN = "removed-still-in"
NO_LEADER = "no-leader"  # no leader among the new voters
NOT_IN_SYNC = "not-in-sync"  # voters not in sync with the leader


def low_joiner_ids(current_ids: tuple[int, ...] | list[int], joiner_ids: tuple[int, ...] | list[int]) -> tuple[int, list[int]]:
    """The joiner id rule: a new server's id must be above every id that stays. Returns the highest
    current id that is not a joiner and the new joiners (not in ``current_ids``) at or below it."""
    top = max((i for i in current_ids if i not in joiner_ids), default=0)
    return top, [j for j in joiner_ids if j not in current_ids and j <= top]


def check_change(committed: DynamicConfig, change: Change) -> list[Problem]:
    """Refusals (each a one-line reason with a code) for applying ``change`` to ``committed``; [] when allowed.

    Call only when the target is not already reached (a finished change is not refused).
    """
    problems: list[Problem] = []
    target = target_config(committed, change)
    for s in change.add:
        present = committed.get(s.id)
        if present is not None and not present.same_member(s):
            problems.append(Problem(
                CONFLICTING_MEMBER,
                f"server {s.id} is in the committed config as {present.line()!r}, not {s.line()!r}: "
                "use a new id for a new server, or the same addresses to promote it"
            ))
    top, low = low_joiner_ids(committed.ids, change.add_ids)
    for sid in low:
        problems.append(Problem(
            JOINER_ID_ORDER,
            f"joiner id {sid} is not greater than every current id {list(committed.ids)}: "
            f"give new servers ids above {top}"
        ))
    if not target.voters:
        problems.append(Problem(NO_VOTER, "the change leaves no voter: keep or add at least one server"))
    return problems


def voter_count_risk(voters: int) -> str | None:
    """The voter-count rule: ``none`` (0 voters), ``one``, ``two`` (a quorum needs both), ``even``
    (4, 6...: no more fault tolerance than one voter less), or None (an odd number from 3)."""
    if voters == 0:
        return "none"
    if voters == 1:
        return "one"
    if voters == 2:
        return "two"
    return "even" if voters % 2 == 0 else None


def warnings_for(target: DynamicConfig) -> list[str]:
    """What an operator should know about the target's fault tolerance."""
    n = len(target.voters)
    risk = voter_count_risk(n)
    if risk == "one":
        return ["the new ensemble has 1 voter: it tolerates no failure; add voters soon"]
    if risk == "two":
        return ["the new ensemble has 2 voters, which tolerate no failure (a quorum needs both): add a third voter soon"]
    if risk == "even":
        f = tolerated_failures(n)
        return [f"the new ensemble has {n} voters, which tolerate {f} failure{'s' if f != 1 else ''}, "
                f"no more than {n - 1} voters would: use an odd number of voters"]
    return []


def quorum_problem(target: DynamicConfig, synced_ids: set[int] | frozenset[int]) -> str | None:
    """Why the target cannot form a quorum from the servers that are up and in sync, or None.

    ZooKeeper refuses such a reconfig itself (NewConfigNoQuorum); kmigrate says it first.
    """
    voters = target.voter_ids
    ready = [i for i in voters if i in synced_ids]
    need = quorum_size(len(voters))
    if len(ready) < need:
        missing = [i for i in voters if i not in synced_ids]
        return (
            f"the new config's voters {list(voters)} need {need} up and in sync to form a quorum, "
            f"only {ready or 'none'} are: servers {missing} are missing or behind"
        )
    return None


def keeps_majority(old: DynamicConfig, new: DynamicConfig) -> bool:
    """True when the voters common to both are a majority of each (the single-step safety rule)."""
    common = set(old.voter_ids) & set(new.voter_ids)
    return len(common) >= quorum_size(len(old.voters)) and len(common) >= quorum_size(len(new.voters))


def joiner_participant_problem(
    joiner_id: int, reported: DynamicConfig, committed: DynamicConfig, joiner_ids: tuple[int, ...]
) -> str | None:
    """Why a joiner's own config (its ``conf`` membership) is dangerous, or None.

    A joiner that adopted the committed config reports exactly it. One that reports another
    membership listing joiners as participants was started as (or became) a voter of a config of
    its own: several such joiners can elect a leader among themselves (split brain).
    """
    if reported.same_membership(committed):
        return None
    listed = [s.id for s in reported.voters if s.id in joiner_ids and (committed.get(s.id) is None or not committed.get(s.id).is_voter)]
    if listed:
        return (
            f"joiner {joiner_id} runs with a config that lists {', '.join(map(str, listed))} as "
            f"participant{'s' if len(listed) > 1 else ''} (not the committed config, version "
            f"{committed.version_hex}): joiners must start as observers of the committed config, or they can "
            f"form an ensemble of their own; restart it (with an empty data dir) from "
            f"'kmigrate zookeeper joiner-config {joiner_id}'"
        )
    return None


# --------------------------------------------------------- reconfig requests
@dataclass(frozen=True)
class Reconfig:
    """One incremental reconfig: servers joining (full lines) and ids leaving, guarded by ``from_version``."""

    joining: tuple[Server, ...]
    leaving: tuple[int, ...]
    from_version: int | None = None

    @property
    def joining_arg(self) -> str | None:
        return ",".join(s.line() for s in self.joining) or None

    @property
    def leaving_arg(self) -> str | None:
        return ",".join(str(i) for i in self.leaving) or None

    def zkcli(self, server: str | None = None) -> str:
        """The same reconfig as a zkCli command (``-v`` takes the version in hex, like the config).

        With ``server``, the shell command (``zkCli.sh -server S reconfig ... -add '...'``); without,
        the command as typed at zkCli's prompt (``reconfig ... -add ...``, what a plan shows).
        """
        parts = ["reconfig"] if server is None else [f"zkCli.sh -server {server} reconfig"]
        if self.from_version is not None:
            parts.append(f"-v {self.from_version:x}")
        if self.leaving:
            parts.append(f"-remove {self.leaving_arg}")
        if self.joining:
            parts.append(f"-add {self.joining_arg}" if server is None else f"-add '{self.joining_arg}'")
        return " ".join(parts)

    def describe(self) -> str:
        bits = []
        if self.joining:
            bits.append("add " + ",".join(str(s.id) for s in self.joining))
        if self.leaving:
            bits.append("remove " + ",".join(map(str, self.leaving)))
        return " and ".join(bits) or "no change"


def apply(committed: DynamicConfig, reconfig: Reconfig) -> DynamicConfig:
    """The config a reconfig would produce (version unknown until ZooKeeper commits it)."""
    by_id = {s.id: s for s in committed.servers if s.id not in reconfig.leaving}
    for s in reconfig.joining:
        by_id[s.id] = s
    return DynamicConfig(tuple(by_id.values()), None)


def single_reconfig(committed: DynamicConfig, target: DynamicConfig) -> Reconfig:
    """The one reconfig from ``committed`` to ``target`` (the procedure's ``-remove 1,2,3 -add ...``)."""
    joining = tuple(
        s for s in target.servers if (c := committed.get(s.id)) is None or c.role != s.role or not c.same_member(s)
    )
    leaving = tuple(i for i in committed.ids if target.get(i) is None)
    return Reconfig(joining, leaving, committed.version)


def next_step(committed: DynamicConfig, target: DynamicConfig, leader_id: int | None = None) -> Reconfig | None:
    """The next one-server reconfig of a ``--step-by-step`` run from ``committed``, or None when done.

    Adds come first (the ensemble grows, so it tolerates more while it changes), then removals,
    the current leader last (one leader election instead of several). Observers that are simply
    dropped or servers that change role count as one step each. Every step keeps a majority of
    the config it leaves (see ``keeps_majority``).
    """
    whole = single_reconfig(committed, target)
    if not whole.joining and not whole.leaving:
        return None
    if whole.joining:
        return Reconfig((whole.joining[0],), (), committed.version)
    # observers first (they never count in a quorum), then voters, the leader last
    observers = [i for i in whole.leaving if not committed.get(i).is_voter]  # type: ignore[union-attr]
    first = min(observers) if observers else min(whole.leaving, key=lambda i: (i == leader_id, i))
    return Reconfig((), (first,), committed.version)


def step_by_step(committed: DynamicConfig, target: DynamicConfig, leader_id: int | None = None) -> list[Reconfig]:
    """Every step of a one-server-at-a-time change (as planned now; the runner re-plans from the cluster)."""
    steps: list[Reconfig] = []
    current = committed
    while (step := next_step(current, target, leader_id)) is not None:
        steps.append(step)
        current = apply(current, step)
        if len(steps) > 2 * (len(committed.servers) + len(target.servers)) + 2:
            raise ConfigError("step-by-step plan does not converge")  # defensive: cannot happen
    return steps


@dataclass(frozen=True)
class Outcome:
    """The facts after a change, checked against the target (pure judgement of what adapters read)."""

    committed: DynamicConfig
    leader_id: int | None
    synced_voter_ids: frozenset[int] = field(default_factory=frozenset)


def outcome_problems(outcome: Outcome, target: DynamicConfig, removed: tuple[int, ...]) -> list[Problem]:
    """Post-check failures: not the target, leader not a new voter, voters out of sync, removed servers still in."""
    problems = []
    if not is_reached(outcome.committed, target):
        problems.append(Problem(
            NOT_TARGET,
            f"the committed config (version {outcome.committed.version_hex}) has voters {list(outcome.committed.voter_ids)}, "
            f"not the target's {list(target.voter_ids)}"
        ))
    still = [i for i in removed if outcome.committed.get(i) is not None]
    if still:
        problems.append(Problem(REMOVED_STILL_IN, f"removed servers {still} are still in the committed config"))
    if outcome.leader_id is None or outcome.leader_id not in target.voter_ids:
        problems.append(Problem(NO_LEADER, f"no leader among the new voters {list(target.voter_ids)} (leader: {outcome.leader_id})"))
    behind = [i for i in target.voter_ids if i not in outcome.synced_voter_ids]
    if behind:
        problems.append(Problem(NOT_IN_SYNC, f"voters {behind} are not in sync with the leader"))
    return problems
