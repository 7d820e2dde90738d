"""``kmigrate demo --kraft``'s human summary, without servers: each phase with the canary's figures there, the
kills with their seed, what was not reached said as such, a failed step named."""

from __future__ import annotations

from migrate.commands.demo import show_kraft_report
from migrate.sandbox.demo_kraft import KraftDemoReport, KraftPhase


def test_the_summary_of_a_run_that_failed_half_way(capsys):
    r = KraftDemoReport(kill_seed=7)
    r.phases = [KraftPhase("start the sandbox", 1.0, "up"),
                KraftPhase("kmigrate partitions", 20.0, "moved",
                           canary={"acknowledged": 900, "latency_p99_ms": 812.4, "longest_stall_s": 1.3, "stall_below_s": None}),
                KraftPhase("roll 1", 30.0, "FAILED: gate dual-write",
                           canary={"acknowledged": 5, "latency_p99_ms": None, "longest_stall_s": None, "stall_below_s": 1.3})]
    r.kills = [{"command": "kmigrate partitions", "after_s": 6.84, "killed": True, "exit": -9}]
    r.failed = ["roll 1: gate dual-write"]
    show_kraft_report(r, keep=False)
    out = capsys.readouterr().out
    table = " ".join(out.split())  # the table folds long cells at the terminal's width
    assert "812" in table and "1.30 (longest" in table and "< 1.30" in table
    assert "--seed 7" in out and "SIGKILL: kmigrate partitions after 6.84 s: killed" in out
    assert "verify (after finalize, ZooKeeper stopped; against the snapshot before the plan): not run" in out
    assert "the plan moved" in out and "--no-move" not in out
    assert "KRaft: phase not reached" in out and "ZooKeeper NOT stopped" in out
    assert "FAILED: roll 1: gate dual-write" in out


def test_the_summary_says_the_brokers_stayed_without_the_move(capsys):
    r = KraftDemoReport(kill_seed=29, moved=False)
    r.phases = [KraftPhase("start the sandbox", 1.0, "up")]
    r.verify_after_zookeeper = {"ok": True}
    show_kraft_report(r, keep=False)
    out = capsys.readouterr().out
    assert "kmigrate demo --kraft --no-move" in out
    assert "no move (--no-move): the brokers stayed where they are" in out and "the plan moved" not in out
    assert "against the snapshot before the plan): every partition matches" in out
    assert r.to_dict()["brokers_moved"] is False and r.to_dict()["variant"] == "no move: only ZooKeeper to KRaft"
