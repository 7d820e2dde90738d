"""``kmigrate partitions`` text output (commands/partitions.py): one line per kind of event, the
details with ``--verbose``; the command line given back for ``--resume`` / ``--cancel``."""

from migrate.commands.common import console
from migrate.commands.partitions import TextRenderer, rerun_command
from migrate.runner import events as ev
from migrate.runner.partitions.throttles import ThrottleTally


def _adopted_and_cleared(render) -> None:
    tally = ThrottleTally(render)
    for t in ("a", "b", "c"):
        for cfg in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas"):
            tally(ev.ThrottleAdopted(scope="topic", topic=t, config=cfg, entries=2))
    tally(ev.ThrottleAdopted(scope="broker", broker=4, config="leader.replication.throttled.rate"))
    tally(ev.ThrottleCleared(scope="broker", broker=5, config="leader.replication.throttled.rate", action="removed"))
    tally(ev.ThrottleCleared(scope="topic", topic="d", config="leader.replication.throttled.replicas",
                             action="absent", entries=0))
    tally.close()


def _text(verbose: bool) -> list[str]:
    render = TextRenderer(verbose)
    with console.capture() as cap:
        _adopted_and_cleared(render)
        render.close()
    return [ln for ln in cap.get().splitlines() if ln.strip()]


def test_throttles_adopted_and_removed_are_one_line_each():
    lines = _text(verbose=False)
    assert lines == [
        "7 throttle config(s) adopted (set by an earlier run, kept for this one): 3 topic(s), 12 replica entries; "
        "the rates of broker(s) 4",
        "1 throttle config(s) removed: the rates of broker(s) 5",
    ]


def test_verbose_adds_a_line_per_config():
    lines = _text(verbose=True)
    assert len([ln for ln in lines if "set by an earlier run: kept for this run" in ln]) == 7
    assert "throttle leader.replication.throttled.rate of broker 5: removed" in lines
    assert lines[-2].startswith("7 throttle config(s) adopted") and lines[-1].startswith("1 throttle config(s) removed")


def test_json_keeps_every_event():
    seen: list[dict] = []
    _adopted_and_cleared(lambda e: seen.append(e.as_dict()))
    kinds = [e["event"] for e in seen]
    assert kinds.count("throttle-adopted") == 7 and kinds.count("throttle-cleared") == 2
    assert kinds[-2:] == ["throttles-adopted", "throttles-removed"]
    assert seen[-2]["topics"] == ["a", "b", "c"] and seen[-2]["brokers"] == [4]


def test_the_command_to_give_again_drops_the_mode_flags_and_quotes():
    assert rerun_command(["partitions", "--playbook", "my migration.yaml", "--resume", "-O", "json"]) == (
        "kmigrate partitions --playbook 'my migration.yaml' -O json")
    assert rerun_command(["partitions", "--mapping", "1:4", "--dry-run", "--verbose"]) == (
        "kmigrate partitions --mapping 1:4")


def test_a_signal_is_said_once_by_the_exit_message():
    render = TextRenderer()
    aborted = dict(in_flight=2, throttle_problems=[], message="2 of kmigrate's reassignment(s) still moving")
    with console.capture() as cap:
        render(ev.Aborted(error="SIGINT", **aborted))
        render(ev.Aborted(error="the controller refused", **aborted))
    assert cap.get().splitlines() == ["stopped early: 2 of kmigrate's reassignment(s) still moving"]


def test_status_text_says_which_throttles_the_moves_in_flight_need_and_who_runs(monkeypatch):
    import migrate.runner.partitions.status as status_runner
    from migrate.commands.common import OutputFormat
    from migrate.commands.partitions import status

    st = {
        "state": "in progress", "bookkeeping_topic": "__kmigrate_migration", "bookkeeping_exists": True,
        "plan_id": "48f84bddacfd5eae", "migration_plan_ids": ["48f84bddacfd5eae", "mapping-1.4"], "mapping": {"1": 4},
        "plans": [], "topics_total": 6, "topics_recorded": 4, "topics_remaining": ["a", "b"],
        "partitions_on_old_brokers": 2, "topics_on_old_brokers": ["a", "b"], "reassignments_in_flight": 2,
        "reassignments_kmigrate": ["a-0", "b-0"], "leaders_not_preferred": 0,
        "throttles": [{"scope": "broker", "broker": 4, "config": "c", "value": "1", "kmigrate": True, "needed": True},
                      {"scope": "topic", "topic": "a", "config": "c", "entries": 1, "kmigrate": True, "needed": True},
                      {"scope": "topic", "topic": "z", "config": "c", "entries": 1, "kmigrate": False, "needed": False}],
        "foreign_plans": {}, "duplicates": [], "warnings": [],
        "runs": {"alive": [{"run_id": "r", "host": "ops1", "pid": 42, "started": "2026-01-01T00:00:00+00:00",
                            "state": "alive", "time": "t"}], "latest": None, "latest_cancel": None},
        "auto_throttle": {
            "4": {"rate_bytes_per_s": 2_500_000, "moves": 1, "p99_ms": 115.0, "limit_ms": 88.0,
                  "reason": "p99 115 ms over budget 88 ms: x0.5"},
            "5": {"rate_bytes_per_s": 10_000_000, "moves": 2, "p99_ms": 12.0, "limit_ms": 88.0,
                  "reason": "resumed at 10 MB/s, the last rate recorded"}},
    }
    monkeypatch.setattr(status_runner, "migration_status", lambda *a, **k: st)
    with console.capture() as cap:
        status(bootstrap_server="b:9092", command_config=None, playbook=None, plan=None, mapping=None,
               bookkeeping_topic=None, output=OutputFormat.text)
    text = " ".join(cap.get().split())  # the table wraps at the console's width
    assert "3 (2 set by kmigrate, 2 needed by its moves in flight: kept until they end)" in text
    assert "kmigrate partitions on ops1, pid 42" in text and "--cancel stops it" in text
    assert "plans 48f84bddacfd5eae, mapping-1.4 (same broker mapping)" in text
    # the p99 against its limit once per row: in the reason, or after it
    assert "auto throttle, broker 4 last recorded: 2.5 MB/s, 1 move(s) at once: p99 115 ms over budget 88 ms: x0.5" in text
    assert "at once: resumed at 10 MB/s, the last rate recorded (p99 12 ms, limit 88 ms)" in text


def test_auto_throttle_baseline_and_decisions_are_one_line_each():
    render = TextRenderer(False)
    with console.capture() as cap:
        render(ev.ThrottleBaseline(topic="c", samples=700, p99_ms=12.0, budget_ms=50.0, limit_ms=62.0, resumed=0,
                                   message="auto throttle: the canary's p99 at rest is 12 ms"))
        render(ev.ThrottleAuto(broker=4, old_rate_bytes_per_s=10_000_000, new_rate_bytes_per_s=20_000_000, moves=2,
                               reason="slow-start", mode="slow-start", p99_ms=20.0, limit_ms=62.0,
                               message="auto throttle: broker 4 10 MB/s -> 20 MB/s, 2 move(s) at once: slow-start"))
        render.close()
    assert [ln for ln in cap.get().splitlines() if ln.strip()] == [
        "auto throttle: the canary's p99 at rest is 12 ms",
        "auto throttle: broker 4 10 MB/s -> 20 MB/s, 2 move(s) at once: slow-start"]


def _start(**auto) -> ev.Start:
    return ev.Start(plan_id="p1", mapping={"1": 4}, throttle_bytes_per_s=10_000_000, bookkeeping_topic="__kmigrate",
                    topics_selected=2, topics_recorded=0, topics_to_move=2, topics_to_record=2, partitions_to_move=4,
                    bytes_to_copy=2_000_000, dry_run=False, max_moves_per_broker=5, max_moves_cluster=None, **auto)


def _lines(e: ev.Event) -> list[str]:
    render = TextRenderer(False)
    with console.capture() as cap:
        render(e)
        render.close()
    return [ln for ln in cap.get().splitlines() if ln.strip()]


def test_the_start_line_names_the_fixed_throttle_or_the_auto_throttles_budget_and_bounds():
    head = "plan p1: 2 topic(s) selected, 0 already recorded, 2 to move (4 partition(s), 2 MB to copy); "
    assert _lines(_start()) == [head + "throttle 10 MB/s per broker; at most 5 move(s) per broker"]
    auto = _lines(_start(throttle_auto={"latency_budget_ms": 50.0, "start_rate_bytes_per_s": 10_000_000,
                                        "min_rate_bytes_per_s": 1_000_000, "max_rate_bytes_per_s": 1_000_000_000}))
    assert auto == [head + "throttle auto per broker: the canary's p99 may rise 50 ms above its p99 at rest; "
                           "from 10 MB/s, between 1 MB/s and 1 GB/s; at most 5 move(s) per broker"]
    assert ev.Start.as_dict(_start()).get("throttle_auto", "absent") == "absent"


def _auto(broker: int, old: int, new: int, reason: str) -> ev.ThrottleAuto:
    return ev.ThrottleAuto(broker=broker, old_rate_bytes_per_s=old, new_rate_bytes_per_s=new, moves=1, reason=reason,
                           mode="avoidance", p99_ms=14.0, limit_ms=84.0,
                           message=f"auto throttle: broker {broker} {old // 1_000_000} MB/s -> {new // 1_000_000} MB/s, "
                                   f"1 move(s) at once: {reason}")


def test_one_steps_like_decisions_are_one_line_naming_the_brokers_unlike_ones_a_line_each():
    render = TextRenderer(False)
    with console.capture() as cap:
        for b in (1, 2, 3):
            render(_auto(b, 5_000_000, 10_000_000, "within budget: +5 MB/s"))
        render(_auto(4, 5_000_000, 2_000_000, "stall on broker 4's partitions: x0.5"))
        render(ev.WarningEvent(message="something else"))
        render(_auto(5, 10_000_000, 15_000_000, "within budget: +5 MB/s"))
        render.close()
    assert [ln for ln in cap.get().splitlines() if ln.strip()] == [
        "auto throttle: brokers 1, 2, 3: 5 MB/s -> 10 MB/s, 1 move(s) at once: within budget: +5 MB/s",
        "auto throttle: broker 4 5 MB/s -> 2 MB/s, 1 move(s) at once: stall on broker 4's partitions: x0.5",
        "warning: something else",
        "auto throttle: broker 5 10 MB/s -> 15 MB/s, 1 move(s) at once: within budget: +5 MB/s",
    ]


def test_the_overall_bar_shows_the_auto_rates_in_force_and_the_last_p99():
    render = TextRenderer(False)
    with console.capture():
        render(ev.Progress(copied_bytes=10, total_bytes=1000, rate_bytes_per_s=0, eta_s=None, in_flight=1, topics_left=1,
                           topics_recorded=0, topics={}))
        assert render.progress is not None and render.overall is not None
        bar = lambda: render.progress.tasks[0].description  # noqa: E731
        assert bar() == "all topics"
        render(_auto(1, 5_000_000, 10_000_000, "within budget: +5 MB/s"))
        assert bar() == "all topics, auto 10 MB/s, p99 14 ms"
        render(_auto(2, 5_000_000, 2_000_000, "stall on broker 2's partitions: x0.5"))
        assert bar() == "all topics, auto 2-10 MB/s, p99 14 ms"
        render.close()


def test_the_start_line_names_the_operators_canary_report():
    line = _lines(_start(throttle_auto={"latency_budget_ms": 50.0, "start_rate_bytes_per_s": 10_000_000,
                                        "min_rate_bytes_per_s": 1_000_000, "max_rate_bytes_per_s": 1_000_000_000,
                                        "canary_report": "/srv/canary.json"}))
    assert "throttle auto per broker: your canary's (/srv/canary.json) p99 may rise 50 ms" in line[0]
