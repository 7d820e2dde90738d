"""Issue 30: ``kmigrate controllers`` SIGKILLed at seeded random moments during the voter changes, run again: it
converges, never two voter changes in flight, never a quorum without a majority.

One module-scoped Kafka 4.4.0 sandbox (``sandbox up --kraft``): voters 3000-3002, spare controllers 3005 and 3006
(observers), broker 101, rolled once to name the old and the new controllers. The move is ``--add 3005,3006 --remove
<the leader>,<a follower>``; the test starts it, SIGKILLs it (:class:`Kill`), restarts it at once or after a random
pause, four to six times, then lets a last run finish. Most kills land at most 0.3 s after the run announces its first
add, stop or removal (while that change is in flight, or just after it), the others up to 3 s after the run's start
(its start, its first reads, the catch-up gate): a run then gets at most one pair's add and removal, or one stop, done
before its kill, so the move takes at least four runs and at least three kills land in it. Everything random comes
from one ``random.Random(seed)``: the follower removed, the stop order (``--kafka-version 4.4.0``: remove, then stop;
without it: stop, then remove), the number of kills, their moments and the pauses. The seed is
``$KMIGRATE_KILL_SEED`` when set, else drawn from the clock; every failure message names it, so
``KMIGRATE_KILL_SEED=<seed>`` replays the same draws (the machine's timings still vary).

While the runs go on, a watcher thread (:class:`QuorumWatcher`) polls DescribeQuorum through kmigrate's adapter
every 100-200 ms, and each voter's controller listener (ApiVersions). The test asserts from its samples: a running
majority of every voter set seen, a leader found again within :data:`LEADER_BOUND_S`; and, for "never two changes in
flight", that the voter sets change one voter at a time. DescribeQuorum is a sample: an add and the removal after it
can both commit between two polls. So the voter-set history is also read exactly, from the ``VotersRecord`` control
records of the metadata log of the old controller that stays (``__cluster_metadata-0``): each record differs from the
one before by exactly one voter, the quorum never has more than one voter beyond the three (an add is followed by its
removal before the next add), and the watcher's sets appear in that history in the same order (a jump of two voters
seen by the watcher is one whose middle set the log has).

Outcome: the voters are 3005, 3006 and the old follower kept; the removed controllers are stopped (``--stop-command``
stops the sandbox node); the canary loses no record; a last run finds nothing to do.
"""

from __future__ import annotations

import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrate.adapters.kafka import voters as kv
from migrate.core.controllers.quorum import quorum_from_answer
from migrate.runner.canary import Canary

from test_controllers import _events as events
from test_controllers import KAFKA, address, kmigrate, kraft_sandbox, roll_brokers, stop_command

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

OLD = (3000, 3001, 3002)
NEW = (3005, 3006)
BROKER = 101
SEED_ENV = "KMIGRATE_KILL_SEED"
LEADER_BOUND_S = 20.0
"""Longest time DescribeQuorum may find no leader (an election after the leader's removal takes a few seconds)."""
KILLS = (4, 6)
"""Runs SIGKILLed before the last one (fewer when the move ends first: at least 3 must land)."""
CHANGE_ANCHORED = 0.7
"""The share of kills timed from the run's first add, stop or removal (the rest from its start)."""
CHANGE_KILL_S = (0.0, 0.3)
"""A kill timed from a change lands this long after the run announces it: during the change or just after (an add
or a removal commits in about 0.1 s, a stop through the sandbox takes about a second)."""
START_KILL_S = (0.3, 3.0)
"""A kill timed from the start: in the start (about 0.7 s of Python), the first reads or the catch-up gate (three
polls a second apart), at most into the first change."""
PAUSE_S = (0.5, 3.0)
"""After half of the kills (drawn) the next run starts after such a pause, after the others at once."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kraft_sandbox(tmp_path_factory.mktemp("controllers-kill"), OLD, NEW, (BROKER,)) as sandbox:
        yield sandbox


# ------------------------------------------------------------------ the watcher
@dataclass(frozen=True)
class Sample:
    at_s: float  # time.monotonic()
    voters: tuple[int, ...] | None  # None: no controller answered DescribeQuorum as the leader
    leader: int | None = None
    running: tuple[int, ...] = ()  # the voters whose controller listener answered ApiVersions


class QuorumWatcher(threading.Thread):
    """DescribeQuorum every 100-200 ms, and ApiVersions at each voter; a sample counts only when DescribeQuorum
    shows the same voter set after the ApiVersions (a change between the two would mix two voter sets)."""

    def __init__(self, addresses: dict[int, str]):
        super().__init__(daemon=True, name="quorum-watcher")
        self.addresses = addresses
        self.samples: list[Sample] = []
        self.errors: list[str] = []
        self._done = threading.Event()
        self._leader: str | None = None

    def _describe(self) -> tuple[int | None, tuple[int, ...]] | None:
        ordered = sorted(self.addresses.values(), key=lambda a: a != self._leader)  # the last leader first
        found = kv.find_leader(ordered, timeout_s=1.0)
        if found is None:
            return None
        self._leader = found[0]
        q = quorum_from_answer(found[1])
        return q.leader_id, q.voter_ids

    def sample(self) -> Sample:
        for _ in range(5):
            at = time.monotonic()
            first = self._describe()
            if first is None:
                return Sample(at, None)
            leader, voter_ids = first
            running = tuple(i for i in voter_ids
                            if kv.controller_features(self.addresses[i], timeout_s=1.0) is not None)
            again = self._describe()
            if again is not None and again[1] == voter_ids:
                return Sample(at, voter_ids, leader, running)
        return Sample(at, None)  # the voters changed under five samples in a row: count it as a moment without one

    def run(self) -> None:
        while not self._done.is_set():
            began = time.monotonic()
            try:
                self.samples.append(self.sample())
            except Exception as exc:  # noqa: BLE001 (reported by the test, never silently lost)
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self._done.wait(max(0.0, random.uniform(0.1, 0.2) - (time.monotonic() - began)))

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=30)


# ------------------------------------------------------------------ the voter-set history in the metadata log
def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _skip_tagged_fields(buf: bytes, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def voter_ids_of_record(value: bytes) -> tuple[int, ...]:
    """The voter ids of a ``VotersRecord`` (Kafka's ``VotersRecord.json``, version 0, flexible: compact arrays and
    strings, tagged fields), the value of a KRaft control record of type 6 (``KRAFT_VOTERS``)."""
    pos = 2  # int16 Version
    count, pos = _uvarint(value, pos)
    ids = []
    for _ in range(count - 1):
        (voter_id,) = struct.unpack_from(">i", value, pos)
        pos += 4 + 16  # VoterId, VoterDirectoryId
        endpoints, pos = _uvarint(value, pos)
        for _ in range(endpoints - 1):
            for _string in range(2):  # Name, Host
                size, pos = _uvarint(value, pos)
                pos += size - 1
            pos = _skip_tagged_fields(value, pos + 2)  # Port (uint16)
        pos = _skip_tagged_fields(value, pos + 4)  # KRaftVersionFeature: MinSupportedVersion, MaxSupportedVersion
        pos = _skip_tagged_fields(value, pos)  # the voter's
        ids.append(voter_id)
    return tuple(sorted(ids))


def voter_history(metadata_dir: Path) -> list[tuple[int, ...]]:
    """Every voter set of ``__cluster_metadata`` in the order written: the bootstrap checkpoint's (formatted with
    ``--initial-controllers``), then each ``VotersRecord`` of the log segments (consecutive repeats dropped)."""
    from kafka.record import MemoryRecords

    log_dir = metadata_dir / "__cluster_metadata-0"
    files = sorted(log_dir.glob("00000000000000000000-0000000000.checkpoint")) + sorted(log_dir.glob("*.log"))
    history: list[tuple[int, ...]] = []
    for path in files:
        records = MemoryRecords(path.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            if not batch.is_control_batch:
                continue
            for record in batch:
                _version, kind = struct.unpack(">hh", bytes(record.key)[:4])
                if kind == 6:  # ControlRecordType.KRAFT_VOTERS
                    ids = voter_ids_of_record(bytes(record.value))
                    if not history or history[-1] != ids:
                        history.append(ids)
    return history


def one_voter_apart(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return len(set(a) ^ set(b)) == 1


def is_subsequence(seen: list[tuple[int, ...]], history: list[tuple[int, ...]]) -> bool:
    it = iter(history)
    return all(any(s == h for h in it) for s in seen)


def test_voters_of_record_decodes_kafkas_layout():
    """The parser above, on a VotersRecord written by hand in Kafka's layout (two voters, one endpoint each)."""
    def compact(text: str) -> bytes:
        return bytes([len(text) + 1]) + text.encode()

    def voter(i: int) -> bytes:
        endpoint = compact("CONTROLLER") + compact("127.0.0.1") + struct.pack(">H", 9093) + b"\x00"
        return struct.pack(">i", i) + bytes(16) + b"\x02" + endpoint + struct.pack(">hh", 0, 1) + b"\x00" + b"\x00"

    value = struct.pack(">h", 0) + b"\x03" + voter(3001) + voter(3000) + b"\x00"
    assert voter_ids_of_record(value) == (3000, 3001)
    assert is_subsequence([(1,), (3,)], [(1,), (2,), (3,)]) and not is_subsequence([(3,), (1,)], [(1,), (2,), (3,)])


# ------------------------------------------------------------------ the move, killed at random
CHANGES = ("add", "stop", "remove")


@dataclass(frozen=True)
class Kill:
    """When to SIGKILL one run: ``after_s`` after its start (``anchor`` None), or ``after_s`` after it announces its
    first step of a kind in :data:`CHANGES` (``anchor`` "change": during that add, stop or removal, or just after);
    then ``pause_s`` before the next run starts (0: at once)."""

    after_s: float
    anchor: str | None
    pause_s: float

    @staticmethod
    def draw(rng: random.Random) -> "Kill":
        anchor = "change" if rng.random() < CHANGE_ANCHORED else None
        after = rng.uniform(*(CHANGE_KILL_S if anchor else START_KILL_S))
        return Kill(round(after, 2), anchor, round(rng.uniform(*PAUSE_S), 2) if rng.random() < 0.5 else 0.0)


@dataclass
class Run:
    kill: Kill | None  # None: the last run, to the end
    returncode: int
    seconds: float
    stdout: str
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL

    def describe(self, n: int) -> str:
        steps = [f"{e['step']} {e['controller']}" for e in events(self.stdout) if e["event"] == "step"]
        when = ("" if self.kill is None else f", kill {self.kill.after_s} s after "
                + ("its first change" if self.kill.anchor else "its start")
                + (f", then a pause of {self.kill.pause_s} s" if self.kill.pause_s else ""))
        return f"run {n}: exit {self.returncode} after {self.seconds:.1f} s{when}, steps {steps}"


def announced_change(text: str) -> bool:
    """Whether a run's output so far (the complete lines) announces an add, a stop or a removal."""
    return any(e["event"] == "step" and e["step"] in CHANGES for e in events(text[:text.rfind("\n") + 1]))


def run_once(args: list[str], kill: Kill | None, out_dir: Path, n: int, timeout_s: float = 300) -> Run:
    """One ``kmigrate controllers`` run, SIGKILLed as ``kill`` says (the process alone: a ``--stop-command`` it started
    goes on, as after ``kill -9``) unless it ended before; its output kept in files."""
    out, err = out_dir / f"run{n}.out", out_dir / f"run{n}.err"
    began = time.monotonic()
    kill_at = None if kill is None or kill.anchor else began + kill.after_s
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen([sys.executable, "-m", "migrate", *args], stdout=o, stderr=e, text=True)
        try:
            while proc.poll() is None:
                now = time.monotonic()
                if kill_at is None and kill is not None and announced_change(out.read_text()):
                    kill_at = now + kill.after_s
                if kill_at is not None and now >= kill_at:
                    proc.send_signal(signal.SIGKILL)
                    break
                if now - began > timeout_s:
                    raise AssertionError(f"run {n} still runs after {timeout_s:g} s")
                time.sleep(0.01)
        finally:
            if proc.poll() is None:
                proc.kill()
            code = proc.wait()
    return Run(kill, code, time.monotonic() - began, out.read_text(), err.read_text())


def test_move_killed_at_random_moments_converges(cluster, tmp_path):
    seed = int(os.environ.get(SEED_ENV) or time.time_ns() // 1000 % 1_000_000_007)
    rng = random.Random(seed)
    replay = f"seed {seed} (replay: {SEED_ENV}={seed})"
    print(f"random kills: {replay}")

    addresses = {i: address(cluster, i) for i in (*OLD, *NEW)}
    leader = kv.read_quorum([addresses[i] for i in OLD])[1].leader_id
    assert leader in OLD, replay
    follower = rng.choice([i for i in OLD if i != leader])
    removed = tuple(sorted((leader, follower)))
    kept = next(i for i in OLD if i not in removed)
    expected = tuple(sorted((kept, *NEW)))
    after_removal = rng.random() < 0.5  # 4.4 given: remove, then stop; release unknown: stop, then remove
    plan = [Kill.draw(rng) for _ in range(rng.randint(*KILLS))]
    print(f"remove {removed} (leader {leader}), {'after' if after_removal else 'before'}-removal stop order, "
          f"kills: {plan}")

    # the broker's controller.quorum.bootstrap.servers names the old and the new controllers (kmigrate checks it)
    roll_brokers(cluster, (*OLD, *NEW), (BROKER,))
    args = ["controllers", "--add", ",".join(map(str, NEW)), "--remove", ",".join(map(str, removed)),
            "--bootstrap-controller", ",".join(addresses[i] for i in OLD), "--bootstrap-server",
            cluster.bootstrap_servers(), "--stop-command", stop_command(cluster), "-O", "json",
            *(("--kafka-version", KAFKA) if after_removal else ())]

    canary = Canary(cluster.client_settings(), topic="controllers-kill-canary", rate_per_s=50).start()
    watcher = QuorumWatcher(addresses)
    runs: list[Run] = []
    try:
        deadline = time.monotonic() + 60
        while canary.report().acknowledged < 100 and time.monotonic() < deadline:
            time.sleep(0.2)
        watcher.start()
        for n, kill in enumerate(plan):
            runs.append(run_once(args, kill, tmp_path, n))
            if not runs[-1].killed:
                break  # it ended before its kill (the move done, or a failure the assertions below show)
            time.sleep(kill.pause_s)
        runs.append(run_once(args, None, tmp_path, len(runs)))
        time.sleep(1.0)  # a last sample or two of the final voter set
    finally:
        watcher.stop()
        report = canary.stop(drain_timeout_s=120)

    story = "; ".join(r.describe(n) for n, r in enumerate(runs))
    print(story)
    where = f"{replay}; {story}"
    for r in runs[:-1]:
        assert r.killed or r.returncode == 0, f"{where}; stderr: {r.stderr[-2000:]}"
    assert sum(r.killed for r in runs) >= 3, f"fewer than 3 runs were killed: {where}"
    final = runs[-1]
    assert final.returncode == 0, f"{where}; stderr: {final.stderr[-3000:]}"
    done = events(final.stdout)[-1]
    assert done["event"] == "done" and tuple(done["voters_after"]) == expected, (where, done)

    # the watcher: a running majority of every voter set, a leader found again within the bound
    samples = watcher.samples
    assert not watcher.errors, (where, watcher.errors[:5])
    assert len(samples) >= 20, (where, len(samples))
    seen: list[tuple[int, ...]] = []
    for s in samples:
        if s.voters is not None:
            assert len(s.running) > len(s.voters) // 2, f"{where}; no running majority: {s}"
            if not seen or seen[-1] != s.voters:
                seen.append(s.voters)
    without, since = 0.0, None
    for s in samples:
        if s.leader is None:
            since = s.at_s if since is None else since
        elif since is not None:
            without, since = max(without, s.at_s - since), None
    assert since is None, f"{where}; no leader at the end of the watch"
    assert without <= LEADER_BOUND_S, f"{where}; {without:.1f} s without a leader"
    assert seen[0] == OLD and seen[-1] == expected, (where, seen)

    # never two changes in flight: the exact history, one voter at a time, at most one voter beyond three
    history = voter_history(Path(cluster.node(f"controller-{kept}").dir) / "metadata")
    jumps = [(a, b) for a, b in zip(seen, seen[1:]) if not one_voter_apart(a, b)]
    print(f"voter sets in the metadata log: {history}; seen by the watcher: {seen} ({len(samples)} samples, "
          f"{len(jumps)} change(s) between two polls, longest without a leader {without:.1f} s)")
    assert history[0] == OLD and history[-1] == expected, (where, history)
    assert all(one_voter_apart(a, b) for a, b in zip(history, history[1:])), (where, history)
    assert all(len(v) in (len(OLD), len(OLD) + 1) for v in history), (where, history)
    assert len(history) == 1 + 2 * len(NEW), (where, history)  # each add and each removal exactly once
    assert is_subsequence(seen, history), (where, seen, history)

    # the removed controllers stopped, the canary lost nothing, a last run changes nothing
    for i in removed:
        assert kv.controller_features(addresses[i], timeout_s=2.0) is None, f"{where}; controller {i} still answers"
    figures = report.to_dict()
    print("canary across the killed runs:",
          {k: figures[k] for k in ("sent", "acknowledged", "lost", "produce_stall_s")})
    assert report.sent > 100 and report.lost == 0 and report.acknowledged == report.sent, (where, figures)
    again = kmigrate(*args)
    assert again.returncode == 0, f"{where}; {again.stderr[-2000:]}"
    last = events(again.stdout)[-1]
    assert last["event"] == "done" and last["already_done"] and not last["steps"], (where, last)
    assert kv.read_quorum([addresses[i] for i in expected])[1].voter_ids == expected, where
