"""Issue 5, must show: kmigrate killed with SIGKILL at named points, then ``--resume``; ``--cancel`` in the middle.

Each scenario moves its own topics (``--topics``) on one shared cluster. After every resume the
end state is the same: no replica on an old broker, each topic recorded exactly once, no
throttle left, nothing in flight, leaders on the preferred replicas.
"""

from __future__ import annotations

import json
import signal
import time

import pytest
from confluent_kafka import Producer

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.core.ledger import make_record
from migrate.files import client_settings
from migrate.waiting import poll
from cluster_waits import settled, wait_for
from partitions_support import (
    MAPPING,
    NEW,
    OLD,
    PLAN_ID,
    create_topic,
    drain,
    events,
    in_flight,
    kmigrate,
    kmigrate_background,
    leaders_not_preferred,
    ledger,
    old_assignment,
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


def _make_topics(cluster, prefix: str, big_bytes: int = 0) -> list[str]:
    specs = [(f"{prefix}-a", 3, 2), (f"{prefix}-b", 2, 1), (f"{prefix}-c", 1, 3)]
    names = []
    for i, (name, parts, rf) in enumerate(specs):
        create_topic(cluster, name, old_assignment(parts, rf, shift=i),
                     {"min.insync.replicas": "2"} if rf == 3 else {})
        produce(cluster, name, 3000)
        names.append(name)
    if big_bytes:
        name = f"{prefix}-big"
        create_topic(cluster, name, [[1]])
        produce(cluster, name, big_bytes // 1000, size=1000)
        names.append(name)
    return names


def _assert_end_state(cluster, names: list[str]) -> None:
    # read again while the brokers learn the last moves' metadata and the throttles' removal
    assert settled(lambda: replicas_on(cluster, OLD, names), []) == []
    counts = ledger(cluster).moved_counts(PLAN_ID)
    assert {n: counts.get(n) for n in names} == {n: 1 for n in names}
    assert settled(lambda: throttles_left(cluster), []) == []
    assert in_flight(cluster) == {}
    wait_until(lambda: leaders_not_preferred(cluster, names) == [], 20, "preferred leaders")
    wait_until(lambda: under_replicated(cluster) == [], 30, "every replica in sync")


def _run(cluster, prefix: str, *extra: str, crash: str | None = None, throttle: str = "20MB/s"):
    env = {"KMIGRATE_CRASH_AT": crash} if crash else None
    return kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                    "--topics", f"{prefix}-.*", "--throttle", throttle, "-O", "json", *extra, env=env)


def test_crash_after_setting_throttles_then_resume(cluster):
    names = _make_topics(cluster, "kt")
    # a record of another plan claims a topic is done: reported, not trusted
    bs = cluster.bootstrap_servers()
    book = BookkeepingTopic(client_settings(bs), "__kmigrate_migration")
    from confluent_kafka.admin import AdminClient

    book.ensure(AdminClient({"bootstrap.servers": bs}), NEW)
    book.append([make_record("another-plan", "topic-moved", names[0], time.time(), topic=names[0], target={})])
    book.close()

    r = _run(cluster, "kt", crash="after-throttle")
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert any(e["event"] == "foreign-plan" and e["plan_id"] == "another-plan" for e in events(r.stdout))
    left = throttles_left(cluster)
    assert any(x.startswith("broker") for x in left) and any(x.startswith("topic kt-") for x in left), left
    assert in_flight(cluster) == {}
    assert replicas_on(cluster, NEW, names) == []  # nothing submitted

    r = _run(cluster, "kt", "--resume")
    assert r.returncode == 0, r.stderr
    evs = events(r.stdout)
    assert any(e["event"] == "throttle-cleared" and e.get("action") == "removed" for e in evs)
    assert {e["topic"] for e in evs if e["event"] == "topic-done"} == set(names)
    _assert_end_state(cluster, names)


def test_crash_after_submit_then_resume_adopts(cluster):
    names = _make_topics(cluster, "ks", big_bytes=12_000_000)
    # at 1 MB/s the big partition is a large move (more than 3 s of copying): it goes in the first batch
    r = _run(cluster, "ks", crash="after-submit", throttle="1MB/s")
    assert r.returncode == -signal.SIGKILL, r.stderr
    submitted = [e for e in events(r.stdout) if e["event"] == "submitted"]
    assert any(p["topic"] == "ks-big" for p in submitted[0]["partitions"])
    assert ("ks-big", 0) in {(tp.topic, tp.partition) for tp in in_flight(cluster)}, "the killed run left it in flight"
    r = _run(cluster, "ks", "--resume", throttle="1MB/s")
    assert r.returncode == 0, r.stderr
    evs = events(r.stdout)
    assert any(e["event"] == "adopted" for e in evs)
    assert not any(e["event"] == "waiting-foreign" for e in evs)
    _assert_end_state(cluster, names)


def test_crash_after_complete_before_record_then_resume(cluster):
    names = _make_topics(cluster, "kc")
    r = _run(cluster, "kc", crash="after-complete-before-record")
    assert r.returncode == -signal.SIGKILL, r.stderr
    # read again while the brokers learn the finished move's metadata
    moved_not_recorded = poll(lambda: [n for n in names if not replicas_on(cluster, OLD, [n])
                                       and n not in ledger(cluster).moved_counts(PLAN_ID)], timeout_s=20)
    assert moved_not_recorded, "the crash point is after a topic finished and before it was recorded"
    r = _run(cluster, "kc", "--resume")
    assert r.returncode == 0, r.stderr
    _assert_end_state(cluster, names)
    # crash twice more at later points of one run, resume each time: still converges
    more = _make_topics(cluster, "kk")
    for crash in ("after-submit:2", "after-complete-before-record:2"):
        r = _run(cluster, "kk", crash=crash)
        assert r.returncode in (-signal.SIGKILL, 0), r.stderr
    r = _run(cluster, "kk", "--resume")
    assert r.returncode == 0, r.stderr
    _assert_end_state(cluster, more)


def test_records_not_written_by_kmigrate_are_refused(cluster):
    name = "kf-untouched"
    create_topic(cluster, name, old_assignment(2, 2))
    foreign = "__kmigrate_foreign"
    create_topic(cluster, foreign, [[4, 5]])
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers()})
    p.produce(foreign, key=b"x", value=b"not kmigrate's")
    p.flush(30)
    r = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                 "--topics", "kf-.*", "--bookkeeping-topic", foreign)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "did not write" in lines[0] and foreign in lines[0]
    assert replicas_on(cluster, NEW, [name]) == []
    assert throttles_left(cluster) == []


def test_cancel_in_the_middle(cluster):
    names = _make_topics(cluster, "kx", big_bytes=20_000_000)
    proc = kmigrate_background("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                               "--topics", "kx-.*", "--throttle", "1MB/s", "-O", "json")
    seen: list[dict] = []
    wait_for_event(proc, lambda e: e["event"] == "submitted" and any(p["topic"] == "kx-big" for p in e["partitions"]),
                   seen=seen)
    assert wait_for(lambda: in_flight(cluster), what="kx-big's move in flight on the cluster", timeout_s=30,
                    interval_s=0.2)
    r = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--cancel", "-O", "json")
    assert r.returncode == 0, r.stderr
    done = [e for e in events(r.stdout) if e["event"] == "done"][-1]
    assert done["cancelled"] >= 1
    code = drain(proc, timeout_s=180, seen=seen)
    assert code == 3, proc.stderr_text  # the running migration saw the cancel and stopped
    assert any(e["event"] == "partition-cancelled" for e in seen)
    assert any(e["event"] == "stopped" for e in seen)
    # nothing in flight, no throttle left, the cluster healthy, the big topic back where it was
    assert in_flight(cluster) == {}
    assert settled(lambda: throttles_left(cluster), []) == []
    wait_until(lambda: under_replicated(cluster) == [], 30, "every replica in sync")
    assert settled(lambda: [tuple(p.replicas) for p in topics(cluster)["kx-big"].partitions.values()], [(1,)]) == [(1,)]
    # status says where things stand; a later --resume finishes the job
    st = json.loads(kmigrate("status", "--bootstrap-server", cluster.bootstrap_servers(), "-O", "json").stdout)
    assert st["state"] == "in progress" and st["reassignments_in_flight"] == 0
    r = _run(cluster, "kx", "--resume")
    assert r.returncode == 0, r.stderr
    _assert_end_state(cluster, names)


def test_plan_file_and_playbook_drive_the_move(cluster, tmp_path):
    """``kmigrate plan`` writes the targets; ``kmigrate partitions --plan`` moves exactly there."""
    names = _make_topics(cluster, "kp")
    playbook = write_playbook(cluster, tmp_path / "playbook.yaml",
                              "  throttle: 30MB/s\n  max_partition_moves_per_broker: 4\n")
    plan_file = tmp_path / "plan.json"
    r = kmigrate("plan", "--playbook", str(playbook), "-o", str(plan_file))
    assert r.returncode in (0, 1), r.stderr  # 1: audit findings; the plan is still written
    plan = json.loads(plan_file.read_text())
    targets = {(m["topic"], m["partition"]): m["target"] for m in plan["moves"] if m["topic"].startswith("kp-")}
    assert targets
    r = kmigrate("partitions", "--plan", str(plan_file), "--playbook", str(playbook), "--topics", "kp-.*",
                 "--force", "-O", "json")
    assert r.returncode == 0, r.stderr
    evs = events(r.stdout)
    start = [e for e in evs if e["event"] == "start"][0]
    assert start["plan_id"] == plan["plan_id"]
    assert start["throttle_bytes_per_s"] == 30_000_000 and start["max_moves_per_broker"] == 4
    def placed() -> dict:
        md = topics(cluster)
        return {(t, p): list(md[t].partitions[p].replicas) for t, p in targets}

    now = settled(placed, targets)
    for (t, p), target in targets.items():
        assert now[(t, p)] == target
    counts = ledger(cluster).moved_counts(plan["plan_id"])
    assert {n: counts.get(n) for n in names} == {n: 1 for n in names}
    assert settled(lambda: throttles_left(cluster), []) == []
