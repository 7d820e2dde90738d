"""Issue 16, must show: an interrupted or cancelled ``kmigrate partitions`` never leaves kmigrate's
moves unthrottled, ``--cancel`` reverts every move kmigrate started and stops the run that is
moving, a second run is refused while one is alive, and ``status`` names the same migration
whether it is given the playbook or the plan made from it.

One cluster for the module (3 ZooKeeper, 3 old + 3 new brokers). Moves are made slow on purpose:
one partition per topic with 12 MB, moved at the lowest throttle kmigrate takes (1 MB/s per
broker), so a move lasts long enough to be interrupted and watched. Throttles are read as the
brokers report them (describe_configs on brokers and topics).
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from cluster_waits import settled, wait_for
from partitions_support import (
    MAPPING,
    NEW,
    OLD,
    create_topic,
    drain,
    events,
    in_flight,
    kmigrate,
    kmigrate_background,
    ledger,
    produce,
    replicas_on,
    throttles_left,
    topics,
    under_replicated,
    wait_for_event,
    wait_until,
    write_playbook,
)

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1, 2, 3), broker_ids=OLD, spare_broker_ids=NEW)

RECORDS = 12_000  # of 1000 bytes: 12 MB, about 12 s at 1 MB/s


def _slow_topics(cluster, prefix: str, count: int, records: int = RECORDS) -> list[str]:
    """``count`` one-partition topics, each on its own old broker, ``records`` KB each (12 MB)."""
    names = []
    for i in range(count):
        name = f"{prefix}-{i}"
        create_topic(cluster, name, [[OLD[i % len(OLD)]]])
        produce(cluster, name, records, size=1000)
        names.append(name)
    return names


def _start(cluster, prefix: str, *extra: str):
    proc = kmigrate_background("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                               "--topics", f"{prefix}-.*", "--throttle", "1MB/s", "-O", "json", *extra)
    seen: list[dict] = []
    wait_for_event(proc, lambda e: e["event"] == "submitted", seen=seen)
    return proc, seen


def _moving(cluster, prefix: str) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in in_flight(cluster) if tp.topic.startswith(prefix + "-")}


def _throttled_topics(left: list[str]) -> set[str]:
    return {x.split()[1] for x in left if x.startswith("topic ")}


def _throttled_brokers(left: list[str]) -> set[int]:
    return {int(x.split()[1]) for x in left if x.startswith("broker ")}


def _watch_throttles_while_moving(cluster, prefix: str, until, timeout_s: float = 300) -> int:
    """Until ``until()`` is true: read the throttles, then the moves in flight. A move seen in
    flight at the previous look and at this one was in flight when the throttles were read: its
    topic's lists and the rates of both its brokers must be there. Returns the looks that checked
    at least one move."""
    checked = 0
    before = _moving(cluster, prefix)

    def look() -> bool:
        nonlocal checked, before
        if until():
            return True
        left = throttles_left(cluster)
        now = _moving(cluster, prefix)
        both = before & now
        if both:
            checked += 1
            assert {t for t, _ in both} <= _throttled_topics(left), (both, left)
            assert _throttled_brokers(left), (both, left)
        before = now
        return False

    wait_for(look, what=f"the moves of {prefix}-* to end (the throttles checked at each look)", timeout_s=timeout_s)
    return checked


def _assert_all_moved(cluster, names: list[str]) -> None:
    # read again while the brokers learn the last moves' metadata and the throttles' removal
    assert settled(lambda: replicas_on(cluster, OLD, names), []) == []
    assert settled(lambda: throttles_left(cluster), []) == []
    assert in_flight(cluster) == {}
    wait_until(lambda: under_replicated(cluster) == [], 60, "every replica in sync")


# ------------------------------------------------------------------------------ status: one migration


def test_status_names_the_same_migration_from_the_playbook_and_from_the_plan(cluster, tmp_path):
    """Run with --plan, then status --playbook says done (and the reverse); status alone names it."""
    for i, name in enumerate(("st-a", "st-b")):
        create_topic(cluster, name, [[OLD[(p + i) % 3], OLD[(p + i + 1) % 3]] for p in range(2)])
        produce(cluster, name, 500)
    playbook = write_playbook(cluster, tmp_path / "my-migration.yaml")
    plan_file = tmp_path / "plan.json"
    r = kmigrate("plan", "--playbook", str(playbook), "-o", str(plan_file))
    assert r.returncode in (0, 1), r.stderr  # 1: audit findings; the plan is still written
    plan_id = json.loads(plan_file.read_text())["plan_id"]
    assert not plan_id.startswith("mapping-")

    r = kmigrate("partitions", "--plan", str(plan_file), "--playbook", str(playbook), "--force", "-O", "json")
    assert r.returncode == 0, r.stderr
    assert replicas_on(cluster, OLD) == []

    def status(*args: str) -> dict:
        out = kmigrate("status", *args, "-O", "json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    # (kmigrate's bookkeeping reader may have made the broker create __consumer_offsets: the run moved it too)
    bs = cluster.bootstrap_servers()
    for args in (("--playbook", str(playbook)), ("--plan", str(plan_file), "--bootstrap-server", bs),
                 ("--bootstrap-server", bs)):
        st = status(*args)
        assert st["state"] == "done", (args, st)
        assert st["topics_recorded"] == st["topics_total"] >= 2, (args, st)
        assert st["foreign_plans"] == {}, (args, st)
        assert plan_id in st["migration_plan_ids"], (args, st)
    assert status("--bootstrap-server", bs)["plan_id"] == plan_id

    # the reverse: a topic created since is moved by a run with the playbook alone, which
    # recognises the two recorded by the plan's run (it does not start a second migration)
    create_topic(cluster, "st-c", [[1, 2]])
    produce(cluster, "st-c", 500)
    r = kmigrate("partitions", "--playbook", str(playbook), "--force", "-O", "json")
    assert r.returncode == 0, r.stderr
    evs = events(r.stdout)
    start = [e for e in evs if e["event"] == "start"][0]
    assert start["topics_recorded"] >= 2 and start["topics_to_move"] == 1, start
    assert {e["topic"] for e in evs if e["event"] == "topic-done"} == {"st-c"}
    assert not any(e["event"] == "foreign-plan" for e in evs)
    for args in (("--plan", str(plan_file), "--bootstrap-server", bs), ("--playbook", str(playbook))):
        st = status(*args)
        assert st["state"] == "done" and st["topics_recorded"] == st["topics_total"] >= 3, (args, st)


# ------------------------------------------------------------------------------ signals


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["sigint", "sigterm"])
def test_a_signal_keeps_the_throttles_of_moves_in_flight_and_resume_finishes(cluster, signum, code):
    prefix = f"sig{int(signum)}"
    # 18 MB a move (18 s at 1 MB/s): the moves must outlast the exit, the drain and a status command under load
    # (12 MB finished before the status command in a full run)
    names = _slow_topics(cluster, prefix, 2, records=18_000)
    proc, seen = _start(cluster, prefix)
    wait_for(lambda: _moving(cluster, prefix), what=f"a move of {prefix}-* in flight on the cluster", timeout_s=60,
             interval_s=0.2)
    proc.send_signal(signum)
    assert drain(proc, timeout_s=180, seen=seen) == code, proc.stderr_text[-2000:]
    aborted = [e for e in seen if e["event"] == "aborted"]
    assert aborted and aborted[-1]["in_flight"] >= 1, seen[-5:]
    assert set(aborted[-1]["throttled_topics"]) <= set(names) and aborted[-1]["throttled_topics"]
    assert aborted[-1]["resume_command"].endswith("--resume") and "--topics" in aborted[-1]["resume_command"]
    err = proc.stderr_text
    assert "continue throttled" in err and "--resume" in err and "--cancel" in err, err
    assert not any(e["event"] == "throttle-cleared" and e.get("topic") in aborted[-1]["throttled_topics"] for e in seen)

    # the moves go on after the exit, throttled: the brokers report the configs while they run
    assert _moving(cluster, prefix), "the moves continue after the run ended"
    st = json.loads(kmigrate("status", "--bootstrap-server", cluster.bootstrap_servers(), "-O", "json").stdout)
    assert st["reassignments_kmigrate"], st
    needed = [t for t in st["throttles"] if t["kmigrate"] and t["needed"]]
    assert {t["topic"] for t in needed if t["scope"] == "topic"} == set(aborted[-1]["throttled_topics"]), st
    assert any(t["scope"] == "broker" for t in needed), st
    checked = _watch_throttles_while_moving(cluster, prefix, until=lambda: not _moving(cluster, prefix))
    assert checked >= 1
    # the moves ended; their throttles are still recorded: --resume finishes and removes them
    assert throttles_left(cluster)
    # (text output: one line per kind of throttle event; --verbose adds one per config)
    verbose = ("--verbose",) if signum == signal.SIGTERM else ()
    r = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                 "--topics", f"{prefix}-.*", "--throttle", "1MB/s", "--resume", *verbose)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len([ln for ln in lines if "throttle config(s) adopted" in ln]) == 1, r.stdout
    assert len([ln for ln in lines if "throttle config(s) removed" in ln]) == 1, r.stdout
    per_config = [ln for ln in lines if "kept for this run" in ln]
    assert (len(per_config) >= 2) if verbose else (per_config == []), r.stdout
    _assert_all_moved(cluster, names)


# ------------------------------------------------------------------------------ --cancel


def test_cancel_reverts_every_kmigrate_move_and_stops_the_running_run(cluster):
    names = _slow_topics(cluster, "cx", 3)
    before = {n: [tuple(p.replicas) for p in topics(cluster)[n].partitions.values()] for n in names}
    proc, seen = _start(cluster, "cx")
    wait_until(lambda: len(_moving(cluster, "cx")) == 3, 60, "three moves in flight")
    cancel = kmigrate_background("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--cancel",
                                 "-O", "json")
    checked = _watch_throttles_while_moving(cluster, "cx", until=lambda: cancel.poll() is not None)
    cancel_events: list[dict] = []
    assert drain(cancel, timeout_s=60, seen=cancel_events) == 0, cancel.stderr_text[-2000:]
    cancelled = [p for e in cancel_events if e["event"] == "cancelled" for p in e["partitions"]]
    assert sorted(cancelled) == sorted(f"{n}-0" for n in names), cancel_events
    assert [e for e in cancel_events if e["event"] == "done"][-1]["cancelled"] == 3

    # the running run stopped cleanly, saying who cancelled it
    assert drain(proc, timeout_s=120, seen=seen) == 3, proc.stderr_text[-2000:]
    stopped = [e for e in seen if e["event"] == "stopped"]
    assert stopped and sorted(stopped[-1]["reverted"]) == sorted(f"{n}-0" for n in names), seen[-5:]
    assert "--cancel" in proc.stderr_text and "nothing left in flight" in proc.stderr_text, proc.stderr_text
    assert checked >= 1, "no look saw a move in flight twice in a row: the moves were too quick to watch"
    # every move reverted, nothing in flight, no throttle left
    assert in_flight(cluster) == {}
    assert settled(lambda: throttles_left(cluster), []) == []
    assert settled(lambda: {n: [tuple(p.replicas) for p in topics(cluster)[n].partitions.values()] for n in names},
                   before) == before
    wait_until(lambda: under_replicated(cluster) == [], 60, "every replica in sync")
    # a --resume starts it again and finishes
    r = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                 "--topics", "cx-.*", "--throttle", "50MB/s", "--resume", "-O", "json")
    assert r.returncode == 0, r.stderr
    _assert_all_moved(cluster, names)


# ------------------------------------------------------------------------------ overlap


def test_a_second_run_is_refused_while_one_is_moving(cluster):
    names = _slow_topics(cluster, "ov", 1)
    proc, seen = _start(cluster, "ov")
    # held (SIGSTOP) while the second run looks: alive and moving, but it cannot finish its 12 MB first (on a
    # busy host the second run's start took longer than the copy); the brokers copy on meanwhile
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        runs_before = set(ledger(cluster).runs())
        r = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                     "--topics", "ov-.*", "--throttle", "1MB/s")
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "another kmigrate partitions run" in lines[0], r.stderr
    assert f"pid {proc.pid}" in lines[0] and "--cancel" in lines[0], lines[0]
    assert set(ledger(cluster).runs()) == runs_before  # the refused run recorded nothing
    assert proc.poll() is None, "the first run goes on"
    assert drain(proc, timeout_s=300, seen=seen) == 0, proc.stderr_text[-2000:]
    # once it ended, a run is accepted again (nothing left to do)
    r = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                 "--topics", "ov-.*", "-O", "json")
    assert r.returncode == 0, r.stderr
    _assert_all_moved(cluster, names)


def test_two_runs_started_at_once_one_moves_the_other_refuses(cluster):
    """Both may pass the first look at the bookkeeping topic: the one whose run record is first goes on.

    The move lasts about 12 s (12 MB at 1 MB/s): at 10 MB/s the first run once ended before the second
    one, started at the same moment on a loaded machine, had read the bookkeeping topic, and the second
    then rightly found nothing to do (both exited 0)."""
    names = _slow_topics(cluster, "tw", 1)
    args = ("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
            "--topics", "tw-.*", "--throttle", "1MB/s", "-O", "json")
    procs = [kmigrate_background(*args), kmigrate_background(*args)]
    codes = sorted(drain(p, timeout_s=300) for p in procs)
    assert codes == [0, 2], [p.stderr_text[-1500:] for p in procs]
    refused = [p for p in procs if p.returncode == 2][0]
    assert "another kmigrate partitions run" in refused.stderr_text, refused.stderr_text
    _assert_all_moved(cluster, names)
    assert ledger(cluster).moved_counts(ledger(cluster).migration(None)).get(names[0]) == 1
