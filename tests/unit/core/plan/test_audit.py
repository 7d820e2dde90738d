"""Every audit rule, triggered by a snapshot or playbook built to break it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from migrate.core.plan.audit import (
    audit_durability,
    audit_mapping,
    audit_size,
    audit_zookeeper,
    blocking_findings,
    tolerance,
)
from migrate.core.model import Broker, ClusterSnapshot
from migrate.errors import BadInput
from migrate.core.zookeeper.config import Server
from migrate.core.plan.document import BrokerTotal, Finding
from migrate.core.plan.planner import build_plan, plan_zookeeper


def codes(findings):
    return {(f.severity, f.code) for f in findings}


def only(findings, code):
    found = [f for f in findings if f.code == code]
    assert found, f"no {code} in {[f.code for f in findings]}"
    for f in found:
        assert "\n" not in f.message and f.message
        assert f.severity in ("error", "warning", "info")
    return found


def test_healthy_procedure_cluster_has_no_error_or_warning(kb):
    plan = build_plan(kb.snapshot(broker_connect=None), kb.playbook())
    assert [f.code for f in plan.findings if f.severity != "info" and f.code != "zookeeper.broker_connect"] == []
    assert not plan.errors()


# --------------------------------------------------------------------------- durability


@pytest.mark.parametrize("cfg, rf, code, severity", [
    ({}, 2, "durability.replication_factor", "warning"),
    ({"min.insync.replicas": "1"}, 3, "durability.min_insync_low", "warning"),
    ({"min.insync.replicas": "3"}, 3, "durability.min_insync_equals_rf", "warning"),
    ({"min.insync.replicas": "4"}, 3, "durability.min_insync_above_rf", "error"),
    ({"unclean.leader.election.enable": "true"}, 3, "durability.unclean_election", "warning"),
])
def test_durability_settings(kb, cfg, rf, code, severity):
    snap = kb.snapshot({"t": [(1, 2, 3)[:rf]]}, configs={"t": cfg})
    (f,) = only(audit_durability(snap), code)
    assert f.severity == severity and f.subject == "topic t"
    if code == "durability.min_insync_above_rf":
        assert f.forceable and f.blocks == "partitions"


def test_under_replicated_and_offline_partitions_block_everything(kb):
    snap = kb.snapshot({"t": [(1, 2, 3), (2, 3, 1), (3, 1, 2)]}, isr={("t", 1): (2, 3)}, leaders={("t", 2): -1})
    findings = audit_durability(snap)
    (under,) = only(findings, "durability.under_replicated")
    (offline,) = only(findings, "durability.offline")
    for f in (under, offline):
        assert f.severity == "error" and not f.forceable and f.blocks == "all"
        assert f.blocking("zookeeper", force=True) and f.blocking("partitions", force=True)
    assert "(1)" in under.message and "(2)" in offline.message
    snap2 = kb.snapshot({"t": [(1, 2, 3)]}, leaders={("t", 0): None})
    only(audit_durability(snap2), "durability.offline")


def test_ongoing_reassignments_warn(kb):
    snap = replace(kb.snapshot(), ongoing_reassignments={("orders", 0): ((4,), (1,))})
    (f,) = only(audit_durability(snap), "reassignment.ongoing")
    assert f.severity == "warning" and "orders-0" in f.message


# --------------------------------------------------------------------------- mapping


def test_unmapped_old_broker_is_an_error(kb):
    racks = {**kb.PROCEDURE_RACKS, 7: "AD-1/FD-3"}
    snap = kb.snapshot({"t": [(1, 2, 7)]}, racks=racks)
    (f,) = only(audit_mapping(snap, kb.playbook()), "mapping.unmapped_broker")
    assert f.severity == "error" and f.subject == "broker 7" and not f.forceable
    assert "brokers.keep" in f.message


def test_new_id_equal_to_old_id(kb):
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("mapping: {1: 4, 2: 5, 3: 6}", "mapping: {1: 2, 2: 5, 3: 6}"))
    (f,) = only(audit_mapping(kb.snapshot(), pb), "mapping.target_is_old")
    assert f.severity == "error" and f.subject == "broker 2"


def test_two_old_ids_to_one_new_id(kb):
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("mapping: {1: 4, 2: 5, 3: 6}", "mapping: {1: 4, 2: 4, 3: 6}"))
    (f,) = only(audit_mapping(kb.snapshot(), pb), "mapping.shared_target")
    assert f.severity == "error" and f.forceable and "1, 2" in f.message
    (g,) = only(audit_mapping(kb.snapshot(), pb, allow_merge=True), "mapping.shared_target")
    assert g.severity == "warning"


def test_new_broker_not_registered_or_dead(kb):
    snap = kb.snapshot(alive=[1, 2, 3, 4])
    findings = only(audit_mapping(snap, kb.playbook()), "mapping.new_broker_missing")
    assert {f.subject for f in findings} == {"broker 5", "broker 6"}
    assert all(f.severity == "error" and f.blocks == "partitions" for f in findings)
    assert not findings[0].blocking("zookeeper")
    dead = replace(kb.snapshot(), brokers=tuple(replace(b, alive=(b.id != 6)) for b in kb.snapshot().brokers))
    (f,) = only(audit_mapping(dead, kb.playbook()), "mapping.new_broker_missing")
    assert "registered but not alive" in f.message


def test_new_broker_rack_unknown_or_mismatched(kb):
    racks = dict(kb.PROCEDURE_RACKS)
    racks[6] = None
    pb_text = kb.PROCEDURE_PLAYBOOK.replace("    6: {availability_domain: AD-3, fault_domain: FD-2}\n", "")
    (f,) = only(audit_mapping(kb.snapshot(racks=racks), kb.playbook(pb_text)), "mapping.rack_unknown")
    assert f.severity == "warning" and f.subject == "broker 6"
    racks[6] = "AD-2/FD-1"
    (g,) = only(audit_mapping(kb.snapshot(racks=racks), kb.playbook()), "mapping.rack_mismatch")
    assert "'AD-2/FD-1'" in g.message and "'AD-3/FD-2'" in g.message


def test_not_enough_brokers_after_the_move(kb):
    racks = {1: "AD-1/FD-1", 2: "AD-2/FD-1", 3: "AD-3/FD-1", 4: "AD-1/FD-2"}
    snap = kb.snapshot({"t": [(1, 2, 3)]}, racks=racks)
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("mapping: {1: 4, 2: 5, 3: 6}", "mapping: {1: 4, 2: 4, 3: 4}")
                     .replace("    5: {availability_domain: AD-2, fault_domain: FD-2}\n", "")
                     .replace("    6: {availability_domain: AD-3, fault_domain: FD-2}\n", ""))
    (f,) = only(audit_mapping(snap, pb, allow_merge=True), "mapping.not_enough_brokers")
    assert f.severity == "error" and f.subject == "topic t"


def test_mapped_broker_that_does_not_exist(kb):
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("mapping: {1: 4, 2: 5, 3: 6}", "mapping: {1: 4, 2: 5, 3: 6, 9: 10}"))
    (f,) = only(audit_mapping(kb.snapshot(), pb), "mapping.unknown_old_broker")
    assert f.severity == "warning"


# --------------------------------------------------------------------------- zookeeper


def zk_findings(kb, snap=None, pb=None):
    snap = snap or kb.snapshot()
    pb = pb or kb.playbook()
    return audit_zookeeper(snap, pb, plan_zookeeper(snap, pb))


def test_zookeeper_version_too_old_or_unknown(kb):
    (f,) = [f for f in zk_findings(kb, kb.snapshot(zookeeper=kb.zk(version="3.4.14"))) if f.subject == "zookeeper server 1"]
    assert (f.severity, f.code, f.blocks) == ("error", "zookeeper.version", "zookeeper")
    ens = replace(kb.zk(), server_versions={1: "3.8.6"})
    found = only(zk_findings(kb, kb.snapshot(zookeeper=ens)), "zookeeper.version_unknown")
    assert {f.subject for f in found} == {"zookeeper server 2", "zookeeper server 3"}


def test_zookeeper_reconfig_disabled_or_unknown(kb):
    (f,) = only(zk_findings(kb, kb.snapshot(zookeeper=kb.zk(reconfig=False))), "zookeeper.reconfig_disabled")
    assert f.severity == "error" and not f.forceable
    (g,) = only(zk_findings(kb, kb.snapshot(zookeeper=kb.zk(reconfig=None))), "zookeeper.reconfig_unknown")
    assert g.severity == "warning"


def test_zookeeper_joiner_ids_must_be_greater(kb):
    snap = kb.snapshot(zookeeper=kb.zk([1, 2, 8]))
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("remove: [1, 2, 3]", "remove: [1, 2, 8]"))
    (f,) = only(zk_findings(kb, snap, pb), "zookeeper.joiner_id_order")
    assert f.severity == "error" and "4, 5, 6" in f.message and "8" in f.message


def test_zookeeper_joiner_already_participant(kb):
    snap = kb.snapshot(zookeeper=kb.zk([1, 2, 3, 4]))
    (f,) = only(zk_findings(kb, snap), "zookeeper.joiner_is_participant")
    assert f.severity == "error" and "4" in f.message
    # a joiner already started as an observer is fine (a resumed run)
    snap2 = kb.snapshot(zookeeper=kb.zk([1, 2, 3, 4], observers=[4]))
    assert not [f for f in zk_findings(kb, snap2) if f.code in ("zookeeper.joiner_is_participant", "zookeeper.joiner_id_order")]


def test_zookeeper_remove_unknown(kb):
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("remove: [1, 2, 3]", "remove: [1, 2, 3, 9]"))
    (f,) = only(zk_findings(kb, pb=pb), "zookeeper.remove_unknown")
    assert f.severity == "warning" and "9" in f.message


@pytest.mark.parametrize("add, remove, severity, forceable, text", [
    ("[]", "[1, 2, 3]", "error", False, "no voting member"),
    ("[{id: 4, host: h4}]", "[1, 2, 3]", "error", True, "1 voter tolerates 0 failures"),
    ("[{id: 4, host: h4}, {id: 5, host: h5}]", "[1, 2, 3]", "warning", False, "2 voters tolerate 0 failures"),
    ("[{id: 4, host: h4}]", "[]", "warning", False, "4 voters tolerate 1 failure"),
])
def test_zookeeper_voter_count(kb, add, remove, severity, forceable, text):
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace(
        "add: [{id: 4, host: 127.0.0.4}, {id: 5, host: 127.0.0.5}, {id: 6, host: 127.0.0.6}]", f"add: {add}"
    ).replace("remove: [1, 2, 3]", f"remove: {remove}"))
    (f,) = only(zk_findings(kb, pb=pb), "zookeeper.voters")
    assert (f.severity, f.forceable) == (severity, forceable)
    assert text in f.message
    if severity == "error" and forceable:
        assert not f.blocking("zookeeper", force=True) and f.blocking("zookeeper")
    if "2 voters" in text:
        assert "3 voters tolerate 1 failure" in f.message


def test_zookeeper_unreachable_server(kb):
    ens = replace(kb.zk(), server_modes={1: "leader", 2: "follower", 3: "unreachable"})
    (f,) = only(zk_findings(kb, kb.snapshot(zookeeper=ens)), "zookeeper.unreachable")
    assert f.severity == "warning" and "3" in f.message


def test_brokers_without_new_servers_in_their_connect_string(kb):
    snap = kb.snapshot()
    during = "127.0.0.1:2181,127.0.0.2:2181,127.0.0.3:2181,127.0.0.4:2181"
    brokers = tuple(replace(b, zookeeper_connect=during) if b.id in (1, 3) else b for b in snap.brokers)
    brokers = tuple(replace(b, zookeeper_connect=None) if b.id == 6 else b for b in brokers)
    (f,) = only(zk_findings(kb, replace(snap, brokers=brokers)), "zookeeper.broker_connect")
    assert f.severity == "warning"
    assert "broker(s) 2, 4, 5, 6 (unknown)" in f.message
    assert "127.0.0.6:2181" in f.message  # the connect string to use
    fixed = tuple(replace(b, zookeeper_connect=during) for b in snap.brokers)
    assert not [g for g in zk_findings(kb, replace(snap, brokers=fixed)) if g.code == "zookeeper.broker_connect"]


# --------------------------------------------------------------------------- size and helpers


def test_size_figures_and_unknown_sizes():
    totals = [BrokerTotal(4, "new", 3_000_000_000, 0, 0, 10, 3), BrokerTotal(1, "old", 0, 6_000_000_000, 10, 0, 0)]
    findings = audit_size(totals, 6_000_000_000, 120, 50_000_000, unknown_sizes=2, partitions_moved=10)
    (est,) = only(findings, "size.estimate")
    assert est.severity == "info"
    assert "6 GB to copy" in est.message and "broker 4 (3 GB in)" in est.message and "broker 1 (6 GB out)" in est.message
    assert "about 2m at 50 MB/s" in est.message
    (unk,) = only(findings, "size.unknown")
    assert unk.severity == "warning" and "2 moved partition(s)" in unk.message
    assert audit_size([], 0, 0, 50_000_000, partitions_moved=0) == []


def test_plan_estimate_uses_the_busiest_broker(kb):
    plan = build_plan(kb.snapshot({"t": [(1, 2, 3)]}, size=100_000_000), kb.playbook())
    assert plan.total_bytes == 300_000_000
    # each new broker receives 100 MB, but the leader (broker 1) serves 3 x 100 MB at 50 MB/s
    assert plan.estimated_seconds == 6
    assert {b.broker: b.bytes_out for b in plan.broker_totals if b.bytes_out} == {1: 300_000_000}
    only(plan.findings, "size.estimate")


def test_blocking_and_helpers():
    errs = [
        Finding("error", "a", "s", "m", forceable=True, blocks="zookeeper"),
        Finding("error", "b", "s", "m", forceable=False, blocks="partitions"),
        Finding("warning", "c", "s", "m"),
    ]
    assert [f.code for f in blocking_findings(errs)] == ["a", "b"]
    assert [f.code for f in blocking_findings(errs, force=True)] == ["b"]
    assert [f.code for f in blocking_findings(errs, step="zookeeper")] == ["a"]
    assert tolerance(3) == "3 voters tolerate 1 failure" and tolerance(5) == "5 voters tolerate 2 failures"


def test_every_rule_code_is_documented():
    import migrate.core.plan.audit as audit_module

    doc = audit_module.__doc__
    for code in [
        "durability.replication_factor", "durability.min_insync_low", "durability.min_insync_equals_rf",
        "durability.min_insync_above_rf", "durability.unclean_election", "durability.under_replicated",
        "durability.offline", "reassignment.ongoing", "mapping.unmapped_broker", "mapping.target_is_old",
        "mapping.shared_target", "mapping.new_broker_missing", "mapping.rack_unknown", "mapping.rack_mismatch",
        "mapping.not_enough_brokers", "mapping.unknown_old_broker", "zookeeper.version", "zookeeper.version_unknown",
        "zookeeper.reconfig_disabled", "zookeeper.reconfig_unknown", "zookeeper.joiner_id_order",
        "zookeeper.joiner_is_participant", "zookeeper.remove_unknown", "zookeeper.voters", "zookeeper.unreachable",
        "zookeeper.broker_connect", "size.estimate", "size.unknown",
    ]:
        assert code in doc


def test_snapshot_helpers_are_consistent(kb):
    snap = kb.snapshot()
    assert isinstance(snap, ClusterSnapshot)
    assert isinstance(snap.broker(1), Broker) and snap.broker(99) is None
    assert snap.zookeeper.participants == (1, 2, 3)
    assert isinstance(snap.zookeeper.servers[0], Server)


def test_an_auto_throttle_plan_estimates_at_the_start_rate_and_says_how_the_rate_moves(kb):
    snap = kb.snapshot({"t": [(1, 2, 3)]}, size=100_000_000)
    auto = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("migration: {throttle: 50MB/s}",
                                                    "migration: {throttle: auto, latency_budget: 40ms}"))
    plan = build_plan(snap, auto)
    # broker 1 serves 3 x 100 MB: 6 s at the fixed 50 MB/s, 30 s at the auto throttle's 10 MB/s start
    assert build_plan(snap, kb.playbook()).estimated_seconds == 6 and plan.estimated_seconds == 30
    assert plan.throttle_bytes_per_s == 10_000_000
    (f,) = only(plan.findings, "throttle.auto")
    assert f.severity == "info" and "starts at 10 MB/s" in f.message and "40 ms above its p99 at rest" in f.message
    assert not [g for g in build_plan(snap, kb.playbook()).findings if g.code == "throttle.auto"]
    with pytest.raises(BadInput, match="latency_budget"):
        build_plan(snap, kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("migration: {throttle: 50MB/s}",
                                                                  "migration: {throttle: auto}")))
