"""``kmigrate partitions``: move every topic to the new brokers; ``kmigrate status``: where the migration stands.

Options follow Kafka's tools (``--bootstrap-server``, ``--command-config``, ``--topic``-like
regexes, ``--throttle``). The work is done by :mod:`migrate.runner.partitions.run`; this module
builds the request, renders events (rich progress for people, one JSON event per line with
``--output json``) and lets typed errors reach ``cli.py``.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from migrate.commands.common import OUTPUT_OPTION, ZK_CLIENT_CONFIG_OPTION, ZK_JAAS_FILE_OPTION, OutputFormat, console, emit_json, emit_json_line
from migrate.commands.options import (
    BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, PLAYBOOK_OPTION, ZK_AUTH_FILE_OPTION, ZK_AUTH_OPTION, ZOOKEEPER_OPTION,
)
from migrate.commands.settings import DEFAULT_THROTTLE, Inputs, resolve
from migrate.core.ledger import DEFAULT_TOPIC
from migrate.core.partitions.mapping import compile_topic_filter
from migrate.core.partitions.scheduler import DEFAULT_MAX_MOVES_PER_BROKER
from migrate.core.throttle.options import TUNING_ENV, auto_throttle, tuned
from migrate.core.throttle.readings import STALE_AFTER_S
from migrate.files import check_live_report
from migrate.core.units import parse_duration
from migrate.errors import BadInput
from migrate.runner import events as ev

PLAN_OPTION = typer.Option(None, "--plan", help="Plan written by kmigrate plan: its targets, plan id, throttle and caps.")
BOOKKEEPING_OPTION = typer.Option(None, "--bookkeeping-topic", help=f"Topic recording the migration (default {DEFAULT_TOPIC}).")


def zookeeper_of(inputs: Inputs, zookeeper, zk_auth, zk_auth_file, zk_jaas_file,
                 zk_client_config_file=None) -> tuple[str | None, tuple]:
    """The ZooKeeper connect (``--zookeeper``, else the playbook's with its joiners) and login kmigrate
    reads broker rates with where Kafka before 2.8 hides them."""
    from migrate.core.zookeeper.auth import parse_auth
    from migrate.files import zk_auth as read_zk_auth, zk_client_config, zk_jaas

    pb = inputs.playbook
    connect = zookeeper or (pb.zookeeper.reading_connect if pb is not None and pb.zookeeper is not None else None)
    return connect, tuple(parse_auth(read_zk_auth(zk_auth, zk_auth_file), zk_jaas(zk_jaas_file),
                                     zk_client_config(zk_client_config_file)))


def build_request(*, bootstrap_server, command_config, mapping, playbook, plan, throttle, topics, exclude, resume,
                  on_stall, stall_timeout, poll_interval, max_moves_per_broker, max_moves_cluster, dry_run, force,
                  bookkeeping_topic, command="kmigrate partitions", zookeeper=None, zk_auth=None, zk_auth_file=None,
                  zk_jaas_file=None, zk_client_config_file=None, ignore_hidden_broker_rates=False, latency_budget=None,
                  canary_report=None):
    """Options (and playbook / plan) -> :class:`~migrate.runner.partitions.run.PartitionsRequest`. BadInput on any problem."""
    from migrate.runner.partitions.run import PartitionsRequest

    if on_stall not in ("report", "cancel"):
        raise BadInput(f"--on-stall {on_stall!r}: choose report or cancel")
    include_re, exclude_re = compile_topic_filter(topics, exclude)
    inputs = Inputs.load(playbook, plan)
    mig = inputs.playbook.migration if inputs.playbook is not None else None
    auto = auto_throttle(throttle, latency_budget, "auto" if mig is not None and mig.throttle_auto else None,
                         mig.latency_budget if mig is not None else None)
    if auto is not None:
        auto = tuned(auto, os.environ.get(TUNING_ENV))
    if canary_report is not None:
        if auto is None:
            raise BadInput("--canary-report needs --throttle auto (a fixed --throttle does not steer on latency)")
        check_live_report(canary_report, time.time(), STALE_AFTER_S)
        auto = replace(auto, canary_report=str(canary_report))
    client = inputs.client(bootstrap_server, command_config)
    zk, auth = zookeeper_of(inputs, zookeeper, zk_auth, zk_auth_file, zk_jaas_file, zk_client_config_file)
    settings = resolve(inputs, mapping=mapping, throttle=None if auto is not None else throttle,
                       bookkeeping_topic=bookkeeping_topic,
                       max_moves_per_broker=max_moves_per_broker, max_moves_cluster=max_moves_cluster,
                       run=True, force=force)
    return PartitionsRequest(
        client=client,
        mapping=settings.mapping,
        plan_id=settings.plan_id,
        throttle_bytes_per_s=settings.throttle_bytes_per_s if auto is None else auto.settings.start_rate,
        bookkeeping_topic=settings.bookkeeping_topic,
        caps=settings.caps,
        keep=settings.keep,
        plan_targets=settings.plan_targets,
        include=include_re,
        exclude=exclude_re,
        poll_interval_s=parse_duration(poll_interval, "--poll-interval"),
        stall_timeout_s=parse_duration(stall_timeout, "--stall-timeout"),
        on_stall=on_stall,
        dry_run=dry_run,
        force=force,
        resume=resume,
        command=command,
        zookeeper=zk,
        zk_auth=auth,
        ignore_hidden_rates=ignore_hidden_broker_rates,
        auto=auto,
    )


_NOT_REPEATED = {"--resume", "--cancel", "--dry-run", "--verbose", "-v"}


def rerun_command(argv: list[str]) -> str:
    """The operator's ``kmigrate partitions`` command line, to give again with ``--resume`` or
    ``--cancel`` (without the flags that choose the mode).

    >>> rerun_command(["partitions", "--playbook", "my migration.yaml", "--resume", "-O", "json"])
    "kmigrate partitions --playbook 'my migration.yaml' -O json"
    >>> rerun_command(["partitions", "--zk-auth", "kafka:secret"])
    'kmigrate partitions --zk-auth kafka:PASSWORD'
    """
    args = list(argv)
    if args and args[0] == "partitions":
        args = args[1:]
    for i, a in enumerate(args):  # never echo a password: the operator types it again
        if a == "--zk-auth" and i + 1 < len(args):
            args[i + 1] = args[i + 1].split(":", 1)[0] + ":PASSWORD"
        elif a.startswith("--zk-auth="):
            args[i] = a.split(":", 1)[0] + ":PASSWORD"
    return shlex.join(["kmigrate", "partitions", *(a for a in args if a not in _NOT_REPEATED)])


# ============================================================================ rendering


def _bytes(n: float | int | None) -> str:
    from migrate.core.units import format_bytes

    return format_bytes(int(n or 0))


def _throttle_words(e: ev.Start) -> str:
    """The Start line's throttle: the fixed rate, or the auto throttle's budget and bounds."""
    auto = e.throttle_auto
    if not isinstance(auto, dict):
        return f"throttle {_bytes(e.throttle_bytes_per_s)}/s per broker"
    from migrate.core.throttle.options import whose_canary

    whose = whose_canary(auto.get("canary_report"))
    return (f"throttle auto per broker: {whose} p99 may rise {auto['latency_budget_ms']:g} ms above its p99 at rest; "
            f"from {_bytes(auto['start_rate_bytes_per_s'])}/s, between {_bytes(auto['min_rate_bytes_per_s'])}/s and "
            f"{_bytes(auto['max_rate_bytes_per_s'])}/s")


def _json_line(event: ev.Event) -> None:
    """One JSON object per line: the event's fields, its kind under ``event`` and the time under ``ts``."""
    emit_json_line(event.as_dict())


_SAID_IN_YELLOW = (ev.Stall, ev.IsrShort, ev.Held, ev.LeadersNotPreferred, ev.PartitionCancelled, ev.TopicGone,
                   ev.StallCancelled, ev.WaitingForeign, ev.ForeignPlan, ev.Discovered, ev.LeftAlone, ev.Aborted)
"""Events whose message is the line (``kind: message``), in yellow."""


class TextRenderer:
    """Events -> lines and rich progress bars (bytes copied per topic and overall, rate, ETA)."""

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose  # one line per throttle config too (else one line per kind of event)
        self.progress: Progress | None = None
        self.overall: TaskID | None = None
        self.tasks: dict[str, TaskID] = {}
        self.auto_lines: tuple[str, list[int]] | None = None  # one step's like decisions, shown as one line
        self.auto_rates: dict[int, int] = {}  # the auto throttle's rate in force per broker, on the overall bar
        self.auto_p99: float | None = None

    def _print(self, text: str, style: str | None = None) -> None:
        target = self.progress.console if self.progress is not None else console
        target.print(text, style=style, markup=False, highlight=False)

    def _bars(self) -> Progress:
        if self.progress is None:
            self.progress = Progress(
                TextColumn("{task.description:<32}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                TimeRemainingColumn(), console=console, transient=False, refresh_per_second=4,
            )
            self.progress.start()
            self.overall = self.progress.add_task(self._overall_words(), total=None)
        return self.progress

    def close(self) -> None:
        self._flush_auto()
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def _overall_words(self) -> str:
        """The overall bar's name; with the auto throttle, the rates in force and the last p99 it saw."""
        if not self.auto_rates:
            return "all topics"
        low, high = _bytes(min(self.auto_rates.values())), _bytes(max(self.auto_rates.values()))
        if low == high:
            rates = f"{low}/s"
        elif low.split()[-1] == high.split()[-1]:  # one unit: "2.5-10 MB/s"
            rates = f"{low.split()[0]}-{high}/s"
        else:
            rates = f"{low}/s-{high}/s"
        return f"all topics, auto {rates}" + ("" if self.auto_p99 is None else f", p99 {self.auto_p99:g} ms")

    def _auto(self, e: ev.ThrottleAuto) -> None:
        """The auto throttle's decisions of one step that say the same for several brokers: one line; the
        rate in force on the overall bar."""
        self.auto_rates[e.broker] = e.new_rate_bytes_per_s
        if e.p99_ms is not None:
            self.auto_p99 = e.p99_ms
        if self.progress is not None and self.overall is not None:
            self.progress.update(self.overall, description=self._overall_words())
        rest = e.message.replace(f"auto throttle: broker {e.broker} ", "", 1)
        if self.auto_lines is not None and self.auto_lines[0] == rest:
            self.auto_lines[1].append(e.broker)
            return
        self._flush_auto()
        self.auto_lines = (rest, [e.broker])

    def _flush_auto(self) -> None:
        if self.auto_lines is None:
            return
        rest, brokers = self.auto_lines
        self.auto_lines = None
        who = f"broker {brokers[0]}" if len(brokers) == 1 else f"brokers {', '.join(map(str, brokers))}:"
        self._print(f"auto throttle: {who} {rest}")

    def _show_progress(self, e: ev.Progress) -> None:
        if not e.total_bytes and not e.in_flight:
            return
        bars = self._bars()
        bars.update(self.overall, total=max(e.total_bytes, 1), completed=e.copied_bytes)
        for topic, row in e.topics.items():
            if row["phase"] in ("moving", "stalled") and topic not in self.tasks:
                self.tasks[topic] = bars.add_task(topic[:32], total=max(row["total_bytes"], 1))
            if topic in self.tasks:
                bars.update(self.tasks[topic], total=max(row["total_bytes"], 1), completed=row["copied_bytes"])
                if row["phase"] not in ("moving", "stalled", "pending"):
                    bars.remove_task(self.tasks.pop(topic))

    def __call__(self, e: ev.Event) -> None:
        if isinstance(e, ev.ThrottleAuto):
            self._auto(e)
            return
        self._flush_auto()
        if isinstance(e, ev.Progress):
            self._show_progress(e)
        elif isinstance(e, ev.Start):
            self._print(
                f"plan {e.plan_id}: {e.topics_selected} topic(s) selected, {e.topics_recorded} already recorded, "
                f"{e.topics_to_move} to move ({e.partitions_to_move} partition(s), {_bytes(e.bytes_to_copy)} to copy); "
                + _throttle_words(e) + f"; at most {e.max_moves_per_broker} move(s) per broker"
                + (f", {e.max_moves_cluster} in the cluster" if e.max_moves_cluster else "")
            )
        elif isinstance(e, ev.WouldMove):
            self._print(f"would move {e.topic}:")
            for p in e.partitions:
                self._print(f"  {e.topic}-{p['partition']}: {p['current']} -> {p['target']} ({_bytes(p['bytes'])})")
        elif isinstance(e, ev.WouldRecord):
            self._print(f"would record {e.topic} (already on its new brokers)")
        elif isinstance(e, ev.TopicDone):
            if e.already_on_target:
                self._print(f"recorded {e.topic} (already on its new brokers)")
            else:
                self._print(f"moved {e.topic}: {e.partitions_moved} partition(s), {_bytes(e.bytes)} in {e.seconds} s")
        elif isinstance(e, ev.Aborted):
            if e.error not in ("SIGINT", "SIGTERM"):  # a signal: the exit message says the same
                self._print(f"stopped early: {e.message}", style="yellow")
        elif isinstance(e, ev.LeftAlone):
            self._print(f"left alone: {e.message}", style="yellow")
        elif isinstance(e, ev.ForeignPlan):
            self._print(f"note: {e.message}", style="yellow")
        elif isinstance(e, _SAID_IN_YELLOW):
            self._print(f"{e.kind}: {e.message}", style="yellow")
        elif isinstance(e, ev.Cancelled):
            self._print(e.message)
        elif isinstance(e, ev.WarningEvent):
            self._print(f"warning: {e.message}", style="yellow")
        elif isinstance(e, ev.BookkeepingCreated):
            self._print(f"created the bookkeeping topic {e.topic} on brokers {e.replicas}")
        elif isinstance(e, ev.ThrottleBaseline):
            self._print(e.message)
        elif isinstance(e, ev.ThrottleSet):
            self._print(f"throttle {_bytes(e.rate_bytes_per_s)}/s set on brokers {e.brokers}")
        elif isinstance(e, ev.ThrottleAdopted):
            if self.verbose:
                self._print(f"throttle {e.config} of {_where(e)} set by an earlier run: kept for this run")
        elif isinstance(e, ev.ThrottleCleared):
            if e.action != "absent" and self.verbose:
                self._print(f"throttle {e.config} of {_where(e)}: {e.action}")
        elif isinstance(e, (ev.ThrottlesAdopted, ev.ThrottlesRemoved)):
            self._print(e.message)
        elif isinstance(e, ev.RunStarted):
            if self.verbose:
                self._print(f"run {e.run_id} on {e.host}, pid {e.pid}")
        elif isinstance(e, ev.Adopted):
            self._print(f"adopted {len(e.partitions)} reassignment(s) already in flight")
        elif isinstance(e, ev.Resume):
            self._print(f"resuming: {e.records} bookkeeping record(s), {e.topics_recorded} topic(s) already recorded")
        elif isinstance(e, (ev.RunDone, ev.CancelDone, ev.CancelDryRun)):
            self.close()
            self._print(_done_line(e))

    # events not shown as text: partition-done, foreign-finished, stall-over, submitted, topic-cancelled,
    # stopped (the exit message says it)


def _where(e: ev.ThrottleAdopted | ev.ThrottleCleared) -> str:
    return f"broker {e.broker}" if e.scope == "broker" else f"topic {e.topic}"


def _done_line(e: ev.RunDone | ev.CancelDone | ev.CancelDryRun) -> str:
    if isinstance(e, ev.CancelDryRun):
        return f"dry run: would cancel {len(e.would_cancel)} reassignment(s)"
    if isinstance(e, ev.CancelDone):
        return (f"cancelled {e.cancelled} reassignment(s) kmigrate started (reverted, no longer in flight); "
                f"{e.left_alone} left alone; kmigrate's throttles no move in flight needs are removed")
    if e.dry_run:
        return (f"dry run: {len(e.topics_to_move)} topic(s), {e.partitions_to_move} partition(s) "
                "would move; nothing was changed")
    return (f"done in {e.seconds} s: {e.topics_recorded_now} topic(s) recorded now, "
            f"{e.topics_recorded_total} in total; {e.partitions_moved} partition(s) moved "
            f"({_bytes(e.bytes_copied)}); kmigrate's throttles removed")


# ============================================================================ commands


def partitions(
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    mapping: Optional[str] = typer.Option(None, "--mapping", help="Old:new broker ids, e.g. 1:4,2:5,3:6."),
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    plan: Optional[Path] = PLAN_OPTION,
    throttle: Optional[str] = typer.Option(None, "--throttle", help=f"Replication throttle per broker, leader and follower side (default: plan, playbook, else {DEFAULT_THROTTLE}); at least 1MB/s. auto: steered per broker by an acks=all canary's p99 (needs --latency-budget)."),
    latency_budget: Optional[str] = typer.Option(None, "--latency-budget", help="With --throttle auto: how far the canary's acks=all p99 may rise above its p99 at rest before the first move (e.g. 50ms, 0.2s)."),
    canary_report: Optional[Path] = typer.Option(None, "--canary-report", help="With --throttle auto: steer on the canary you already run (`kmigrate canary --report FILE`, rewritten every second while it runs) instead of starting one; its last 15 s before the first move are the p99 at rest."),
    topics: Optional[str] = typer.Option(None, "--topics", help="Only topics matching this regular expression (in full)."),
    exclude: Optional[str] = typer.Option(None, "--exclude", help="Leave out topics matching this regular expression (in full)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a migration (a plain rerun does the same: adopts moves in flight, clears stale throttles)."),
    cancel: bool = typer.Option(False, "--cancel", help="Cancel every reassignment kmigrate started, by any run (they revert; --topics/--exclude narrow it); a running partitions stops (exit 3); once they are reverted, remove kmigrate's throttles."),
    on_stall: str = typer.Option("report", "--on-stall", help="report: say which partition and broker make no progress; cancel: also cancel those partitions."),
    stall_timeout: str = typer.Option("120s", "--stall-timeout", help="No byte progress for this long is a stall (e.g. 90s, 5m)."),
    poll_interval: str = typer.Option("500ms", "--poll-interval", help="How often to look at the reassignments (e.g. 1s, 500ms)."),
    max_moves_per_broker: Optional[int] = typer.Option(None, "--max-moves-per-broker", help=f"Partition moves at once per broker (default {DEFAULT_MAX_MOVES_PER_BROKER})."),
    max_moves_cluster: Optional[int] = typer.Option(None, "--max-moves-cluster", help="Partition moves at once in the cluster (default: no cap but the per-broker one)."),
    bookkeeping_topic: Optional[str] = BOOKKEEPING_OPTION,
    dry_run: bool = typer.Option(False, "--dry-run", help="Print what would be reassigned; change nothing."),
    force: bool = typer.Option(False, "--force", help="Move even with under-replicated/offline partitions or a dead target broker."),
    zookeeper: Optional[str] = ZOOKEEPER_OPTION,
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config_file: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    ignore_hidden_broker_rates: bool = typer.Option(False, "--ignore-hidden-broker-rates", help="Brokers before Kafka 2.8 and no ZooKeeper connect: go on anyway; a throttle rate someone else set there is then removed with kmigrate's."),
    output: OutputFormat = OUTPUT_OPTION,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Text output: one line per throttle config adopted or removed (--output json always has them)."),
) -> None:
    """Move every topic to the new brokers through a bookkeeping topic, throttled, resumable from any crash.

    Exit codes: 0 done, 1 a step failed, 2 bad input or another run is moving (nothing changed),
    3 stopped by kmigrate partitions --cancel, 130 SIGINT, 143 SIGTERM (moves in flight keep their throttles)."""
    render = _json_line if output == OutputFormat.json else TextRenderer(verbose)
    if cancel:
        from migrate.runner.partitions.cancel import cancel_partitions

        include_re, exclude_re = compile_topic_filter(topics, exclude)
        inputs = Inputs.load(playbook, plan)
        client = inputs.client(bootstrap_server, command_config)
        book = resolve(inputs, bookkeeping_topic=bookkeeping_topic).bookkeeping_topic
        zk, auth = zookeeper_of(inputs, zookeeper, zk_auth, zk_auth_file, zk_jaas_file, zk_client_config_file)
        try:
            cancel_partitions(client, book, render, dry_run=dry_run, include=include_re, exclude=exclude_re,
                              zookeeper=zk, zk_auth=auth, ignore_hidden_rates=ignore_hidden_broker_rates)
        finally:
            if isinstance(render, TextRenderer):
                render.close()
        return
    from migrate.runner.partitions.run import run_partitions

    request = build_request(
        bootstrap_server=bootstrap_server, command_config=command_config, mapping=mapping, playbook=playbook, plan=plan,
        throttle=throttle, topics=topics, exclude=exclude, resume=resume, on_stall=on_stall, stall_timeout=stall_timeout,
        poll_interval=poll_interval, max_moves_per_broker=max_moves_per_broker, max_moves_cluster=max_moves_cluster,
        dry_run=dry_run, force=force, bookkeeping_topic=bookkeeping_topic, command=rerun_command(sys.argv[1:]),
        zookeeper=zookeeper, zk_auth=zk_auth, zk_auth_file=zk_auth_file, zk_jaas_file=zk_jaas_file,
        zk_client_config_file=zk_client_config_file, ignore_hidden_broker_rates=ignore_hidden_broker_rates,
        latency_budget=latency_budget, canary_report=canary_report,
    )
    try:
        run_partitions(request, render)
    finally:
        if isinstance(render, TextRenderer):
            render.close()


def status(
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    plan: Optional[Path] = PLAN_OPTION,
    mapping: Optional[str] = typer.Option(None, "--mapping", help="Old:new broker ids (default: the plan recorded last)."),
    bookkeeping_topic: Optional[str] = BOOKKEEPING_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Where the migration stands, read from the cluster: topics recorded, moves in flight, throttles, replicas left on old brokers."""
    from migrate.runner.partitions.status import migration_status

    inputs = Inputs.load(playbook, plan)
    client = inputs.client(bootstrap_server, command_config)
    settings = resolve(inputs, mapping=mapping, bookkeeping_topic=bookkeeping_topic)
    st = migration_status(client, settings.bookkeeping_topic, plan_id=settings.plan_id, mapping=settings.mapping)
    if output == OutputFormat.json:
        emit_json(st)
        return
    console.print(f"migration: [bold]{st['state']}[/bold]  (plan {st['plan_id'] or '-'}, bookkeeping topic {st['bookkeeping_topic']}"
                  f"{'' if st['bookkeeping_exists'] else ', not created yet'})")
    table = Table(show_header=False, box=None)
    table.add_row("mapping", ", ".join(f"{k}->{v}" for k, v in st["mapping"].items()) or "-")
    if len(st["migration_plan_ids"]) > 1:
        table.add_row("same migration", "plans " + ", ".join(st["migration_plan_ids"]) + " (same broker mapping)")
    table.add_row("topics recorded", f"{st['topics_recorded']} of {st['topics_total']}")
    table.add_row("partitions on old brokers", f"{st['partitions_on_old_brokers']} (in {len(st['topics_on_old_brokers'])} topic(s))")
    table.add_row("reassignments in flight", f"{st['reassignments_in_flight']} ({len(st['reassignments_kmigrate'])} by kmigrate)")
    table.add_row("leaders not preferred", str(st["leaders_not_preferred"]))
    ours = [t for t in st["throttles"] if t["kmigrate"]]
    needed = [t for t in ours if t["needed"]]
    table.add_row("throttle configs", f"{len(st['throttles'])} ({len(ours)} set by kmigrate"
                  + (f", {len(needed)} needed by its moves in flight: kept until they end" if needed else "") + ")")
    for b, d in st.get("auto_throttle", {}).items():
        p99 = "no p99" if d["p99_ms"] is None else f"p99 {d['p99_ms']:.0f} ms"
        said = "p99" in d["reason"]  # the reason names the p99 and the limit already
        table.add_row(f"auto throttle, broker {b}", f"last recorded: {_bytes(d['rate_bytes_per_s'])}/s, {d['moves']} "
                      f"move(s) at once: {d['reason']}" + ("" if said else f" ({p99}, limit {d['limit_ms'] or 0:.0f} ms)"))
    runs = st["runs"]
    for r in runs["alive"]:
        table.add_row("running", f"kmigrate partitions on {r['host']}, pid {r['pid']}, since {r['started']} "
                                 "(kmigrate partitions --cancel stops it)")
    if not runs["alive"] and runs["latest"]:
        r = runs["latest"]
        how = "ended" if r["state"] == "ended" else "stopped without a word (killed?)"
        table.add_row("last run", f"{r['host']}, pid {r['pid']}, started {r['started']}, {how} at {r['time']}")
    if runs["latest_cancel"]:
        c = runs["latest_cancel"]
        table.add_row("last --cancel", f"{c['host']}, pid {c['pid']}, at {c['time']}")
    if st["foreign_plans"]:
        table.add_row("other plans recorded", ", ".join(f"{k} ({v} topics)" for k, v in st["foreign_plans"].items()))
    if st["duplicates"]:
        table.add_row("recorded twice", ", ".join(st["duplicates"]))
    console.print(table)
    for w in st["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    if st["topics_remaining"]:
        shown = st["topics_remaining"][:10]
        more = len(st["topics_remaining"]) - len(shown)
        console.print("not recorded yet: " + ", ".join(shown) + (f" and {more} more" if more > 0 else ""), markup=False)


__all__ = ["partitions", "status", "build_request", "TextRenderer"]
