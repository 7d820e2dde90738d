"""``kmigrate demo --kraft`` without servers: its playbook is valid and names the controller where the sandbox puts
it, and the before/after comparison of group offsets, topic configs and ACLs finds each kind of difference."""

from __future__ import annotations

import pytest

from migrate.files import load_playbook
from migrate.sandbox.demo_kraft import KraftDemo, compare_state

STATE = {"offsets": {"billing": {"orders/0": 10, "orders/1": 12}},
         "configs": {"customers": {"cleanup.policy": "compact", "min.insync.replicas": "2"}},
         "acls": ["User:kmigrate ALLOW READ TOPIC:LITERAL:* from *"]}


def test_the_demo_playbook_parses_with_its_kraft_controller(tmp_path):
    demo = KraftDemo(tmp_path / "demo", ip_prefix="127.0.77")
    path = tmp_path / "playbook.yaml"
    path.write_text(demo.playbook_text())
    pb = load_playbook(path)
    assert [(c.id, c.host) for c in pb.kraft.controllers] == [(3000, "127.0.77.7")]
    assert pb.zookeeper.connect.endswith("/kafka")
    assert pb.kraft.metadata_log_dir.endswith("controller-3000/metadata")
    assert {o: n for o, n in pb.brokers.mapping.items()} == {1: 4, 2: 5, 3: 6}


def test_the_same_state_has_no_difference():
    assert compare_state(STATE, {**STATE}) == []


def test_each_kind_of_difference_is_named():
    after = {"offsets": {"billing": {"orders/0": 10}},
             "configs": {"customers": {"cleanup.policy": "delete", "min.insync.replicas": "2"}},
             "acls": ["User:kmigrate ALLOW READ TOPIC:LITERAL:* from *", "User:x ALLOW ALL TOPIC:LITERAL:* from *"]}
    assert compare_state(STATE, after) == [
        "group billing orders/1: committed offset 12 before, None after",
        "topic customers cleanup.policy: compact before, delete after",
        "ACL User:x ALLOW ALL TOPIC:LITERAL:* from *: new after",
    ]


def test_a_topic_gone_and_acls_lost_with_the_authorizer():
    after = {"offsets": STATE["offsets"], "configs": {}, "acls": None}
    assert compare_state(STATE, after) == ["topic customers: gone after",
                                           "ACL User:kmigrate ALLOW READ TOPIC:LITERAL:* from *: gone after"]


def test_a_failed_step_ends_the_run_with_a_report_naming_it(tmp_path):
    from migrate.errors import StepFailed

    demo = KraftDemo(tmp_path / "demo")
    demo.start_sandbox = lambda: "started"

    def refused():
        raise StepFailed("records were not acknowledged within 180 s")

    demo.create_topics = refused
    demo.start_canary = lambda: pytest.fail("a phase after the failed one ran")
    report = demo.run()
    assert [p.detail for p in report.phases] == ["started", "FAILED: records were not acknowledged within 180 s"]
    assert report.failed == ["create topics, transactions and consumer groups: records were not acknowledged within 180 s"]
    assert not report.ok and report.to_dict()["ok"] is False
    assert report.to_dict()["kill_seed"] == 29  # the default seed, named so a run can be repeated


def test_the_phases_with_the_move_and_without(tmp_path):
    """With the move: partitions and decommission between the snapshot and the precheck; without: neither, no
    spare brokers, the playbook keeps brokers 1-3 and the rolls go over them. One verify compare in both, after
    ZooKeeper is stopped (the snapshot is taken before the plan)."""
    moving = KraftDemo(tmp_path / "a", ip_prefix="127.0.77")
    names = [n for n, _ in moving.phase_list()]
    snap, pre = names.index("kmigrate verify snapshot"), names.index("kmigrate kraft precheck")
    assert [n.split(" (")[0] for n in names[snap + 1:pre]] == ["kmigrate partitions", "decommission the old brokers"]
    assert [n for n in names if "verify compare" in n] == [names[names.index("stop ZooKeeper") + 1]]
    assert (moving.old, moving.new) == ([1, 2, 3], [4, 5, 6]) and moving.report.moved

    staying = KraftDemo(tmp_path / "b", ip_prefix="127.0.77", move=False)
    kept = [n for n, _ in staying.phase_list()]
    assert kept == names[:snap + 1] + names[pre:]
    assert (staying.old, staying.new, staying.spec.spare_broker_ids) == ([1, 2, 3], [1, 2, 3], ())
    assert staying.bootstrap_new == "127.0.77.1:9092,127.0.77.2:9092,127.0.77.3:9092"
    path = tmp_path / "playbook.yaml"
    path.write_text(staying.playbook_text())
    pb = load_playbook(path)
    assert pb.brokers.mapping == {} and pb.brokers.keep == (1, 2, 3)
    assert [(c.id, c.host) for c in pb.kraft.controllers] == [(3000, "127.0.77.4")]
    assert not staying.report.moved and staying.report.to_dict()["brokers_moved"] is False

