"""How the ``kmigrate mirror`` commands show their results as text (``--output json`` prints each
result's ``to_dict()``). Whichever engine copies, the same functions show its results: what differs
between engines is in the results themselves (their lines, their status rows and parts)."""

from __future__ import annotations

from typing import Mapping

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from migrate.commands.common import OutputFormat, console, emit_json, err_console


def warnings(lines) -> None:
    for w in lines:
        err_console.print(f"warning: {w}", style="yellow", markup=False)


def differences(differences: Mapping[str, Mapping[str, tuple]], out=console) -> None:
    """One red line per topic whose configs differ on the target: ``name=target value (source value)``."""
    for topic, diffs in differences.items():
        out.print(f"config differs on the target for {topic}: "
                  + ", ".join(f"{k}={t} (source {s})" for k, (s, t) in diffs.items()), style="red", markup=False)


def plan(p) -> None:
    console.print(f"source {p.source.bootstrap} (cluster {p.source.cluster_id}, {p.source.brokers} brokers) -> "
                  f"target {p.target.bootstrap} (cluster {p.target.cluster_id}, {p.target.brokers} brokers)", markup=False)
    table = Table(title=f"{len(p.topics)} topics to mirror", title_justify="left")
    for col in ("topic", "partitions", "rf source", "rf target", "action", "configs set on the target"):
        table.add_column(col, overflow="fold")
    for t in p.topics:
        rf_target = str(t.create_replication_factor) if t.to_create else str(t.target.replication_factor)
        part = str(t.source.partitions) if t.to_create else f"{t.source.partitions} ({t.target.partitions} on target)"
        configs = ", ".join(f"{k}={v}" for k, v in t.create_configs.items()) if t.to_create else (
            "differs: " + ", ".join(f"{k}={tv} (source {sv})" for k, (sv, tv) in t.config_differences.items())
            if t.config_differences else "same")
        table.add_row(t.name, part, str(t.source.replication_factor), rf_target,
                      "create" if t.to_create else "exists", configs or "-")
    console.print(table)
    never = [(t.name, k, s, v) for t in p.topics for k, (s, v) in t.never_synced.items()]
    if never:
        console.print("Configs MirrorMaker 2 never copies (kmigrate sets them when it creates a topic):", markup=False)
        for name, k, s, v in never:
            there = "to be set at creation" if next(t for t in p.topics if t.name == name).to_create else f"{v} on the target"
            console.print(f"  {name}: {k} = {s} on the source, {there}", markup=False)
    if p.topics_skipped:
        console.print(f"Internal topics not mirrored: {', '.join(p.topics_skipped)}", markup=False)
    console.print(f"Consumer groups ({len(p.groups)}): {', '.join(p.groups) or 'none'}", markup=False)
    if p.groups_excluded:
        console.print(f"Groups MirrorMaker 2 leaves out: {', '.join(p.groups_excluded)}", markup=False)
    if p.acls_not_copied is None:
        console.print("ACLs: the source cluster has no authorizer (no ACLs to copy)", markup=False)
    else:
        console.print(f"ACLs MirrorMaker will not copy ({len(p.acls_not_copied)}): create them on the target", markup=False)
        for n in p.acls_not_copied:
            a = n.acl
            console.print(f"  {a.permission} {a.principal} {a.operation} on {a.resource_type} {a.pattern_type} "
                          f"{a.name!r} from {a.host}: {n.reason}", markup=False)
    warnings(p.warnings)


def created(result, dry_run: bool) -> None:
    warnings(result.warnings)
    verb = "would create" if dry_run else "created"
    made = result.would_create if dry_run else result.created
    console.print(f"{verb} {len(made)} topic(s){': ' + ', '.join(made) if made else ''}", markup=False)
    if result.existing:
        console.print(f"already on the target: {len(result.existing)} topic(s): {', '.join(result.existing)}", markup=False)
    differences(result.differences)


def started(result, output: OutputFormat) -> None:
    """What ``mirror start`` did: the topics it created first, then its engine's line."""
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    if result.topics is not None:
        created(result.topics, dry_run=False)
    for line in result.lines():
        console.print(line, markup=False)


def stopped(result, output: OutputFormat) -> None:
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    for line in result.lines():
        console.print(line, markup=False)


def status(s, output: OutputFormat) -> None:
    """``mirror status``: the processes, what the engine keeps besides (a Connect-based engine's tasks,
    bookkeeping, heartbeats and config differences), its warnings, the lag per partition, the groups."""
    if output == OutputFormat.json:
        emit_json(s.to_dict())
        return
    for p in s.processes:
        which = f" instance {p['index']}" if "index" in p else ""
        console.print(f"{s.label}{which}: {'running (pid ' + str(p['pid']) + ')' if p['running'] else 'not running'}; "
                      f"log {p['log']}", markup=False)
    c = s.connect
    if c is not None:
        if c.tasks:
            console.print("tasks: " + ", ".join(f"{k} {v}" for k, v in sorted(c.tasks.items())), markup=False)
        if c.history:
            h = c.history
            console.print(f"bookkeeping: {h['stage']}"
                          + (f"; gates passed: {', '.join(h['gates'])}" if h["gates"] else "")
                          + (f"; offsets set for {', '.join(sorted(h['offsets_set']))}" if h["offsets_set"] else ""),
                          markup=False)
        if c.heartbeat_age_s is not None:
            console.print(f"newest heartbeat on the target: {c.heartbeat_age_s:.0f} s ago", markup=False)
        differences(c.config_differences)
    warnings(s.notes)
    whose = "" if s.group_copy is None else f"consumer group {s.group_copy.group} on the source: "
    table = Table(title=f"{whose}lag {s.total_lag} records", title_justify="left")
    for col in s.columns:
        table.add_column(col, overflow="fold")
    for p in s.partitions:
        table.add_row(*p.cells(), style=None if p.lag == 0 else "yellow")
    console.print(table)
    if c is not None and c.groups:
        groups = Table(title="consumer groups", title_justify="left")
        for col in ("group", "topic", "partition", "committed on source", "translated", "committed on target",
                    "duplicates if switched now"):
            groups.add_column(col, overflow="fold")
        for g in c.groups:
            groups.add_row(g.group, g.topic, str(g.partition), str(g.source_committed),
                           "-" if g.translated is None else str(g.translated),
                           "-" if g.target_committed is None else str(g.target_committed),
                           "- (copy not finished)" if g.duplicates is None else
                           str(g.duplicates) if g.duplicates >= 0 else f"{g.duplicates} (would skip records!)")
        console.print(groups)


def waiting(wait, live: bool, output: OutputFormat):
    """Run ``wait(on_status)`` showing the lag as it goes: a bar on a terminal when ``live``, else a line per look."""
    if live and output == OutputFormat.text and console.is_terminal:
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("lag {task.fields[lag]} records"),
                      TimeElapsedColumn(), console=console, transient=True) as bar:
            task = bar.add_task("copying", total=None, lag="?")

            def show(s) -> None:  # the bar's total is the most records seen left to copy
                total = max(bar.tasks[0].total or 0, s.total_lag) or 1
                bar.update(task, total=total, completed=total - s.total_lag, lag=s.total_lag)

            return wait(show)
    lines = err_console if output == OutputFormat.json else console
    return wait(lambda s: lines.print(
        f"lag {s.total_lag} records in {sum(1 for p in s.partitions if p.lag)} partition(s)", markup=False))


def cutover(result) -> None:
    for g in result.gates:
        mark = {"checked": "passed", "bookkeeping": "passed (from the bookkeeping)", "skipped": "skipped"}[g.how]
        console.print(f"[{mark}] {g.name}: {g.detail} ({g.seconds:.1f} s)", markup=False)
    table = Table(title="offsets on the target", title_justify="left")
    for col in ("group", "topic", "partition", "source committed", "target offset", "how", "duplicates"):
        table.add_column(col, overflow="fold")
    for t in result.translations:
        table.add_row(t.group, t.topic, str(t.partition), str(t.source_committed), str(t.offset), t.how,
                      "-" if t.duplicates is None else str(t.duplicates))
    console.print(table)
    for g in result.groups:
        console.print(g.line(), markup=False)
    v = result.verify
    if v and v.get("how") != "skipped":
        console.print(f"records verified: {v['proven_before']} proven before the switch (mirror verify), "
                      f"{v['at_switch']} at the switch ({_HOW_VERIFIED[v['how']]})", markup=False)
    for w in result.writes:
        if w["note"]:
            console.print(f"{w['group']} {w['topic']}-{w['partition']}: {w['note']}", markup=False)
    if result.dry_run:
        console.print("dry run: nothing written; clients must not switch yet", markup=False)
        return
    console.print(f"clients may switch (gates passed in {result.seconds:.1f} s):", markup=False)
    for line in result.clients:
        console.print(f"  {line}", markup=False)
    console.print("then stop MirrorMaker: kmigrate mirror stop", markup=False)


_HOW_VERIFIED = {"tail": "the tail, without Spark", "spark": "Spark, everything", "bookkeeping": "from the bookkeeping"}


def proofs(result) -> None:
    table = Table(title="proven on both clusters", title_justify="left")
    for col in ("topic", "partition", "proven", "now", "not proven yet", "problem"):
        table.add_column(col, overflow="fold")
    for p in result.partitions:
        table.add_row(p.topic, str(p.partition), str(p.proven), str(p.proved_now), str(p.unproven),
                      p.problem or (f"proof dropped: {p.dropped}" if p.dropped else ""))
    console.print(table)
    if result.compacted:
        console.print(f"compacted topics, compared whole at the cut-over: {', '.join(result.compacted)}", markup=False)
    state = "equal so far" if result.ok else "DIFFERENT: clients must not switch"
    console.print(f"{result.proven} records proven equal in {len(result.partitions)} partitions ({state}); "
                  f"the cut-over verifies only the records after them", markup=False)
