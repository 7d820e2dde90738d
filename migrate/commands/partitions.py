"""``kmigrate partitions``: move every topic to the new brokers; ``kmigrate status``: where the migration stands.

Options follow Kafka's tools (``--bootstrap-server``, ``--command-config``, ``--topic``-like
regexes, ``--throttle``). The work is done by :mod:`migrate.runner.partitions`; this module
builds the request, renders events (rich progress for people, one JSON event per line with
``--output json``) and lets typed errors reach ``cli.py``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from migrate.files import client_settings
from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json
from migrate.errors import BadInput
from migrate.core.mapping import compile_topic_filter, mapping_plan_id, parse_mapping
from migrate.core.scheduler import DEFAULT_MAX_MOVES_PER_BROKER, Caps
from migrate.core.units import parse_duration

DEFAULT_BOOKKEEPING_TOPIC = "__kmigrate_migration"
DEFAULT_THROTTLE = "50MB/s"

BOOTSTRAP_OPTION = typer.Option(None, "--bootstrap-server", help="Kafka brokers to connect to, host:port[,host:port...].")
COMMAND_CONFIG_OPTION = typer.Option(None, "--command-config", help="Kafka client properties file (SASL/SSL), as for Kafka's tools.")
PLAYBOOK_OPTION = typer.Option(None, "--playbook", help="Migration playbook (YAML): mapping, throttle, Kafka connection.")
PLAN_OPTION = typer.Option(None, "--plan", help="Plan written by kmigrate plan: its targets, plan id, throttle and caps.")
BOOKKEEPING_OPTION = typer.Option(None, "--bookkeeping-topic", help=f"Topic recording the migration (default {DEFAULT_BOOKKEEPING_TOPIC}).")


def _throttle(text: str) -> int:
    from migrate.core.units import parse_rate

    try:
        return parse_rate(text)
    except BadInput as exc:
        raise BadInput(f"--throttle: {exc.message}") from None


def _load_inputs(playbook: Optional[Path], plan: Optional[Path]):
    pb = pl = None
    if playbook is not None:
        from migrate.files import load_playbook

        pb = load_playbook(playbook)
    if plan is not None:
        from migrate.core.plan import plan_from_json

        try:
            text = Path(plan).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BadInput(f"--plan {plan}: no such file (write one with kmigrate plan)") from None
        except OSError as exc:
            raise BadInput(f"--plan {plan}: cannot read it ({exc})") from None
        pl = plan_from_json(text, str(plan))
    return pb, pl


def _client(bootstrap_server: Optional[str], command_config: Optional[Path], pb) -> Any:
    extra: dict[str, str] = {}
    if pb is not None:
        bootstrap_server = bootstrap_server or pb.kafka.bootstrap_servers
        extra = {k: str(v) for k, v in pb.kafka.client_settings().items() if k != "bootstrap.servers"}
    return client_settings(bootstrap_server, command_config, extra)


def build_request(*, bootstrap_server, command_config, mapping, playbook, plan, throttle, topics, exclude, resume,
                  on_stall, stall_timeout, poll_interval, max_moves_per_broker, max_moves_cluster, dry_run, force,
                  bookkeeping_topic):
    """Options (and playbook / plan) -> :class:`~migrate.runner.partitions.PartitionsRequest`. BadInput on any problem."""
    from migrate.runner.partitions import PartitionsRequest

    if on_stall not in ("report", "cancel"):
        raise BadInput(f"--on-stall {on_stall!r}: choose report or cancel")
    include_re, exclude_re = compile_topic_filter(topics, exclude)
    pb, pl = _load_inputs(playbook, plan)
    client = _client(bootstrap_server, command_config, pb)
    mig = pb.migration if pb is not None else None
    if mapping is not None:
        the_mapping = parse_mapping(mapping)
        if pl is not None and dict(pl.mapping) != the_mapping:
            raise BadInput(f"--mapping {mapping!r} differs from the plan's mapping {dict(pl.mapping)}: drop one of them")
    elif pl is not None:
        the_mapping = dict(pl.mapping)
    elif pb is not None and pb.brokers.mapping:
        the_mapping = dict(pb.brokers.mapping)
    else:
        raise BadInput("no broker mapping: give --mapping OLD:NEW,... (e.g. 1:4,2:5,3:6), --playbook or --plan")
    if not the_mapping:
        raise BadInput("the broker mapping is empty: give --mapping OLD:NEW,... (e.g. 1:4,2:5,3:6)")
    if pl is not None:
        blocking = pl.errors(force=force, step="partitions")
        if blocking:
            raise BadInput(f"plan {pl.plan_id}: {blocking[0].message}" + (f" (and {len(blocking) - 1} more error(s))" if len(blocking) > 1 else ""))
    if throttle is not None:
        rate = _throttle(throttle)
    elif pl is not None:
        rate = pl.throttle_bytes_per_s
    elif mig is not None:
        rate = mig.throttle_bytes_per_s
    else:
        rate = _throttle(DEFAULT_THROTTLE)
    book = bookkeeping_topic or (pl.bookkeeping_topic if pl else None) or (mig.bookkeeping_topic if mig else None) or DEFAULT_BOOKKEEPING_TOPIC
    per_broker = max_moves_per_broker or (pl.max_partition_moves_per_broker if pl else None) or (
        mig.max_partition_moves_per_broker if mig else None) or DEFAULT_MAX_MOVES_PER_BROKER
    cluster = max_moves_cluster or (pl.max_partition_moves_cluster if pl else None) or (mig.max_partition_moves_cluster if mig else None)
    caps = Caps(per_broker=per_broker, cluster=cluster)
    return PartitionsRequest(
        client=client,
        mapping=the_mapping,
        plan_id=pl.plan_id if pl is not None else mapping_plan_id(the_mapping),
        throttle_bytes_per_s=rate,
        bookkeeping_topic=book,
        caps=caps,
        keep=tuple(pb.brokers.keep) if pb is not None else (),
        plan_targets={(m.topic, m.partition): tuple(m.target) for m in pl.moves} if pl is not None else {},
        include=include_re,
        exclude=exclude_re,
        poll_interval_s=parse_duration(poll_interval, "--poll-interval"),
        stall_timeout_s=parse_duration(stall_timeout, "--stall-timeout"),
        on_stall=on_stall,
        dry_run=dry_run,
        force=force,
        resume=resume,
    )


# ============================================================================ rendering


def _bytes(n: float | int | None) -> str:
    from migrate.core.units import format_bytes

    return format_bytes(int(n or 0))


def _json_line(event: dict[str, Any]) -> None:
    event = {**event, "ts": round(time.time(), 3)}
    sys.stdout.write(json.dumps(event, sort_keys=True, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()


class TextRenderer:
    """Events -> lines and rich progress bars (bytes copied per topic and overall, rate, ETA)."""

    def __init__(self) -> None:
        self.progress: Progress | None = None
        self.overall: TaskID | None = None
        self.tasks: dict[str, TaskID] = {}

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
            self.overall = self.progress.add_task("all topics", total=None)
        return self.progress

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def __call__(self, e: dict[str, Any]) -> None:
        kind = e.get("event")
        if kind == "progress":
            if not e.get("total_bytes") and not e.get("in_flight"):
                return
            bars = self._bars()
            bars.update(self.overall, total=max(e["total_bytes"], 1), completed=e["copied_bytes"])
            for topic, row in e.get("topics", {}).items():
                if row["phase"] in ("moving", "stalled") and topic not in self.tasks:
                    self.tasks[topic] = bars.add_task(topic[:32], total=max(row["total_bytes"], 1))
                if topic in self.tasks:
                    bars.update(self.tasks[topic], total=max(row["total_bytes"], 1), completed=row["copied_bytes"])
                    if row["phase"] not in ("moving", "stalled", "pending"):
                        bars.remove_task(self.tasks.pop(topic))
            return
        if kind == "start":
            self._print(
                f"plan {e['plan_id']}: {e['topics_selected']} topic(s) selected, {e['topics_recorded']} already recorded, "
                f"{e['topics_to_move']} to move ({e['partitions_to_move']} partition(s), {_bytes(e['bytes_to_copy'])} to copy); "
                f"throttle {_bytes(e['throttle_bytes_per_s'])}/s per broker; at most {e['max_moves_per_broker']} move(s) per broker"
                + (f", {e['max_moves_cluster']} in the cluster" if e.get("max_moves_cluster") else "")
            )
        elif kind == "would-move":
            self._print(f"would move {e['topic']}:")
            for p in e["partitions"]:
                self._print(f"  {e['topic']}-{p['partition']}: {p['current']} -> {p['target']} ({_bytes(p['bytes'])})")
        elif kind == "would-record":
            self._print(f"would record {e['topic']} (already on its new brokers)")
        elif kind == "topic-done":
            if e.get("already_on_target"):
                self._print(f"recorded {e['topic']} (already on its new brokers)")
            else:
                self._print(f"moved {e['topic']}: {e['partitions_moved']} partition(s), {_bytes(e['bytes'])} in {e['seconds']} s")
        elif kind in ("stall", "isr-short", "held", "leaders-not-preferred", "partition-cancelled", "topic-gone",
                      "stall-cancelled", "waiting-foreign", "foreign-plan", "discovered", "left-alone", "cancelled", "aborted"):
            self._print(f"{kind}: {e.get('message', e)}", style="yellow" if kind != "cancelled" else None)
        elif kind == "warning":
            self._print(f"warning: {e['message']}", style="yellow")
        elif kind == "bookkeeping-created":
            self._print(f"created the bookkeeping topic {e['topic']} on brokers {e['replicas']}")
        elif kind == "throttle-set":
            self._print(f"throttle {_bytes(e['rate_bytes_per_s'])}/s set on brokers {e['brokers']}")
        elif kind == "throttle-adopted":
            where = f"broker {e['broker']}" if e["scope"] == "broker" else f"topic {e['topic']}"
            self._print(f"throttle {e['config']} of {where} set by an earlier run: kept for this run")
        elif kind == "throttle-cleared":
            if e.get("action") not in ("absent",):
                where = f"broker {e['broker']}" if e["scope"] == "broker" else f"topic {e['topic']}"
                self._print(f"throttle {e['config']} of {where}: {e['action']}")
        elif kind == "adopted":
            self._print(f"adopted {len(e['partitions'])} reassignment(s) already in flight")
        elif kind == "resume":
            self._print(f"resuming: {e['records']} bookkeeping record(s), {e['topics_recorded']} topic(s) already recorded")
        elif kind == "done":
            self.close()
            if e.get("dry_run"):
                if "would_cancel" in e:
                    self._print(f"dry run: would cancel {len(e['would_cancel'])} reassignment(s)")
                else:
                    self._print(f"dry run: {len(e.get('topics_to_move', []))} topic(s), {e.get('partitions_to_move', 0)} partition(s) "
                                "would move; nothing was changed")
            elif "cancelled" in e:
                self._print(f"cancelled {e['cancelled']} reassignment(s); {e['left_alone']} not started by kmigrate left alone; "
                            "kmigrate's throttles removed")
            else:
                self._print(f"done in {e['seconds']} s: {e['topics_recorded_now']} topic(s) recorded now, "
                            f"{e['topics_recorded_total']} in total; {e['partitions_moved']} partition(s) moved "
                            f"({_bytes(e['bytes_copied'])}); kmigrate's throttles removed")


# ============================================================================ commands


def partitions(
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    mapping: Optional[str] = typer.Option(None, "--mapping", help="Old:new broker ids, e.g. 1:4,2:5,3:6."),
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    plan: Optional[Path] = PLAN_OPTION,
    throttle: Optional[str] = typer.Option(None, "--throttle", help=f"Replication throttle per broker, leader and follower side (default: plan, playbook, else {DEFAULT_THROTTLE}); at least 1MB/s."),
    topics: Optional[str] = typer.Option(None, "--topics", help="Only topics matching this regular expression (in full)."),
    exclude: Optional[str] = typer.Option(None, "--exclude", help="Leave out topics matching this regular expression (in full)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a migration (a plain rerun does the same: adopts moves in flight, clears stale throttles)."),
    cancel: bool = typer.Option(False, "--cancel", help="Cancel every reassignment kmigrate started (they revert; --topics/--exclude narrow it) and remove its throttles."),
    on_stall: str = typer.Option("report", "--on-stall", help="report: say which partition and broker make no progress; cancel: also cancel those partitions."),
    stall_timeout: str = typer.Option("120s", "--stall-timeout", help="No byte progress for this long is a stall (e.g. 90s, 5m)."),
    poll_interval: str = typer.Option("500ms", "--poll-interval", help="How often to look at the reassignments (e.g. 1s, 500ms)."),
    max_moves_per_broker: Optional[int] = typer.Option(None, "--max-moves-per-broker", help=f"Partition moves at once per broker (default {DEFAULT_MAX_MOVES_PER_BROKER})."),
    max_moves_cluster: Optional[int] = typer.Option(None, "--max-moves-cluster", help="Partition moves at once in the cluster (default: no cap but the per-broker one)."),
    bookkeeping_topic: Optional[str] = BOOKKEEPING_OPTION,
    dry_run: bool = typer.Option(False, "--dry-run", help="Print what would be reassigned; change nothing."),
    force: bool = typer.Option(False, "--force", help="Move even with under-replicated/offline partitions or a dead target broker."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Move every topic to the new brokers through a bookkeeping topic, throttled, resumable from any crash."""
    render = _json_line if output == OutputFormat.json else TextRenderer()
    if cancel:
        from migrate.runner.cancel import cancel_partitions

        include_re, exclude_re = compile_topic_filter(topics, exclude)
        pb, _pl = _load_inputs(playbook, plan)
        client = _client(bootstrap_server, command_config, pb)
        book = bookkeeping_topic or (_pl.bookkeeping_topic if _pl else None) or (
            pb.migration.bookkeeping_topic if pb else None) or DEFAULT_BOOKKEEPING_TOPIC
        try:
            cancel_partitions(client, book, render, dry_run=dry_run, include=include_re, exclude=exclude_re)
        finally:
            if isinstance(render, TextRenderer):
                render.close()
        return
    from migrate.runner.partitions import run_partitions

    request = build_request(
        bootstrap_server=bootstrap_server, command_config=command_config, mapping=mapping, playbook=playbook, plan=plan,
        throttle=throttle, topics=topics, exclude=exclude, resume=resume, on_stall=on_stall, stall_timeout=stall_timeout,
        poll_interval=poll_interval, max_moves_per_broker=max_moves_per_broker, max_moves_cluster=max_moves_cluster,
        dry_run=dry_run, force=force, bookkeeping_topic=bookkeeping_topic,
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
    from migrate.runner.status import migration_status

    pb, pl = _load_inputs(playbook, plan)
    client = _client(bootstrap_server, command_config, pb)
    the_mapping = parse_mapping(mapping) if mapping else (dict(pl.mapping) if pl else (dict(pb.brokers.mapping) if pb and pb.brokers.mapping else None))
    plan_id = pl.plan_id if pl else (mapping_plan_id(the_mapping) if the_mapping else None)
    book = bookkeeping_topic or (pl.bookkeeping_topic if pl else None) or (pb.migration.bookkeeping_topic if pb else None) or DEFAULT_BOOKKEEPING_TOPIC
    st = migration_status(client, book, plan_id=plan_id, mapping=the_mapping)
    if output == OutputFormat.json:
        emit_json(st)
        return
    console.print(f"migration: [bold]{st['state']}[/bold]  (plan {st['plan_id'] or '-'}, bookkeeping topic {st['bookkeeping_topic']}"
                  f"{'' if st['bookkeeping_exists'] else ', not created yet'})")
    table = Table(show_header=False, box=None)
    table.add_row("mapping", ", ".join(f"{k}->{v}" for k, v in st["mapping"].items()) or "-")
    table.add_row("topics recorded", f"{st['topics_recorded']} of {st['topics_total']}")
    table.add_row("partitions on old brokers", f"{st['partitions_on_old_brokers']} (in {len(st['topics_on_old_brokers'])} topic(s))")
    table.add_row("reassignments in flight", f"{st['reassignments_in_flight']} ({len(st['reassignments_kmigrate'])} by kmigrate)")
    table.add_row("leaders not preferred", str(st["leaders_not_preferred"]))
    ours = [t for t in st["throttles"] if t["kmigrate"]]
    table.add_row("throttle configs", f"{len(st['throttles'])} ({len(ours)} set by kmigrate)")
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
