"""``kmigrate zookeeper``: swap ZooKeeper voters by dynamic reconfiguration, and ``joiner-config``.

    kmigrate zookeeper --zookeeper zk1:2181 --add '4=zk4:2888:3888;2181,5=zk5:2888:3888;2181' \\
        --remove 1,2,3 --bootstrap-server kafka1:9092
    kmigrate zookeeper joiner-config 4 --zookeeper zk1:2181 --add '4=zk4:2888:3888;2181,5=zk5:2888:3888;2181'
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console, parse_id_list
from migrate.errors import BadInput
from migrate.core.zookeeper import ConfigError, Server, parse_server_spec

app = typer.Typer(
    help="Swap the ZooKeeper voters with dynamic reconfiguration: joiners follow as observers, one guarded "
    "reconfig makes them voters and removes the old ones (or --step-by-step, one server at a time).",
)

ZOOKEEPER_OPTION = typer.Option(
    None, "--zookeeper", help="Connect string of the ensemble, host:port\\[,host:port...]\\[/chroot] (the chroot of Kafka's znodes)."
)
ADD_OPTION = typer.Option(
    None, "--add",
    help="Servers that become voters: ids the playbook describes, or inline specs in ZooKeeper's syntax "
    "4=host:quorumPort:electionPort;\\[clientHost:]clientPort (comma separated or repeated).",
)
PLAYBOOK_OPTION = typer.Option(None, "--playbook", help="Playbook YAML giving zookeeper.connect/add/remove and kafka settings.")
ZK_AUTH_OPTION = typer.Option(None, "--zk-auth", help="user:password for ZooKeeper digest auth (a super user may reconfig).")


def _playbook(path: Optional[Path]):
    if path is None:
        return None
    from migrate.files import load_playbook

    return load_playbook(path)


def _to_server(z) -> Server:
    """A playbook/model ZkServer as a zkconfig Server (IPv6 hosts get their brackets back)."""

    def bracket(h: Optional[str]) -> Optional[str]:
        return f"[{h}]" if h and ":" in h and not h.startswith("[") else h

    # the playbook's convention: no client_host means the client port binds the server's host
    return Server(z.id, bracket(z.host), z.quorum_port, z.election_port, "participant", z.client_port,
                  bracket(z.client_host or z.host))


def parse_add(values: Optional[List[str]]) -> tuple[Server | int, ...]:
    """``--add`` values: ids (``4,5``, ``4-6``) and inline specs (``4=host:2888:3888;2181``), comma separated."""
    out: list[Server | int] = []
    for value in values or []:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" in item:
                try:
                    out.append(parse_server_spec(item))
                except ConfigError as exc:
                    raise BadInput(f"--add: {exc}") from None
            else:
                out.extend(parse_id_list(item, "--add"))
    return tuple(out)


def parse_remove(values: Optional[List[str]]) -> tuple[int, ...]:
    out: list[int] = []
    for value in values or []:
        out.extend(parse_id_list(value, "--remove"))
    return tuple(out)


@app.callback(invoke_without_command=True)
def zookeeper(
    ctx: typer.Context,
    zookeeper_connect: Optional[str] = ZOOKEEPER_OPTION,
    add: Optional[List[str]] = ADD_OPTION,
    remove: Optional[List[str]] = typer.Option(None, "--remove", help="Ids of the servers that leave, e.g. 1,2,3."),
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    step_by_step: bool = typer.Option(
        False, "--step-by-step", help="Add and remove one server per reconfig, keeping a majority of the previous config at every step."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Run the checks and print the zkCli.sh reconfig that would run; change nothing."),
    force: bool = typer.Option(False, "--force", help="Go on although a broker would point only at removed servers (says what breaks)."),
    bootstrap_server: Optional[str] = typer.Option(
        None, "--bootstrap-server", help="Kafka brokers, to check each broker's zookeeper.connect (needed when brokers are registered)."
    ),
    command_config: Optional[Path] = typer.Option(None, "--command-config", help="Kafka client properties (SASL/SSL), as for Kafka's tools."),
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    joiner_timeout: float = typer.Option(120.0, "--joiner-timeout", help="Seconds to wait for every joiner to follow the leader and catch up."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Make the joiners voters and remove the old voters, then check the new ensemble and print what must follow."""
    if ctx.invoked_subcommand is not None:
        return
    from migrate.runner.zookeeper import ZooKeeperRequest, run_zookeeper_change

    book = _playbook(playbook)
    connect = zookeeper_connect or (book.zookeeper.connect if book else None)
    if not connect:
        raise BadInput("no ZooKeeper to talk to: give --zookeeper host:port[,host:port...] (or --playbook)")
    adds = parse_add(add) if add else tuple(s.id for s in book.zookeeper.add) if book else ()
    removes = parse_remove(remove) if remove else (book.zookeeper.remove if book else ())
    if not adds and not removes:
        raise BadInput("nothing to do: give --add (joiners that become voters) and/or --remove (ids that leave), or --playbook")
    if joiner_timeout <= 0:
        raise BadInput(f"--joiner-timeout {joiner_timeout}: give a number of seconds above 0")
    request = ZooKeeperRequest(
        connect=connect,
        add=adds,
        remove=removes,
        known=tuple(_to_server(s) for s in book.zookeeper.add) if book else (),
        step_by_step=step_by_step,
        dry_run=dry_run,
        force=force,
        bootstrap_servers=bootstrap_server or (book.kafka.bootstrap_servers if book else None),
        command_config=str(command_config) if command_config else (book.kafka.command_config if book else None),
        kafka_client={k: str(v) for k, v in (book.kafka.client.items() if book else [])},
        zk_auth=zk_auth,
        joiner_timeout_s=joiner_timeout,
    )
    status_console = console if output == OutputFormat.text else err_console
    with status_console.status("kmigrate zookeeper: starting") as status:
        result = run_zookeeper_change(request, progress=lambda msg: status.update(msg))
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    _render(result)


def _render(result) -> None:
    before = ",".join(map(str, result.voters_before))
    after = ",".join(map(str, result.voters_after))
    if result.status == "dry-run":
        console.print(f"[bold]dry run[/bold]: voters {before} -> {after} (committed version {result.version_before}); nothing changed")
        console.print("the reconfig that would run:" if len(result.planned) == 1 else "the reconfigs that would run, in order:")
        for cmd in result.planned:
            console.print(f"  {cmd}", markup=False, soft_wrap=True)
        if len(result.planned) > 1:
            console.print("  (each step after the first is guarded by the version the previous one commits)")
        for jid, state in result.joiners.items():
            console.print(f"  joiner {jid}: {state}", markup=False)
    elif result.status == "already-committed":
        console.print(f"[green]already done[/green]: the target config (voters {after}) is committed, version {result.version_after}; nothing sent")
    else:
        console.print(f"[green]reconfigured[/green]: voters {before} -> {after} (version {result.version_before} -> {result.version_after})")
        for step in result.steps:
            how = {"received": "answer received", "lost-confirmed": "answer lost, confirmed from /zookeeper/config",
                   "already-committed": "found committed"}.get(step.answer, step.answer)
            console.print(f"  {step.description}: {how} ({step.seconds:.1f} s)", markup=False)
        if result.write_stall_ms is not None:
            console.print(f"  write stall: {result.write_stall_ms:.0f} ms (longest time a write could not be committed)")
        c = result.checks
        console.print(
            f"  checks: leader {c.get('leader')} among the new voters, voters in sync {c.get('voters_in_sync')}, "
            f"removed servers out of the config, sentinel znode unchanged", markup=False
        )
    for w in result.warnings:
        console.print(f"[yellow]warning[/yellow]: {w}", soft_wrap=True)
    console.print(f"new connect string: {result.connect_string}", markup=False)
    if result.next_steps:
        console.print("next:")
        for i, step in enumerate(result.next_steps, 1):
            console.print(f"  {i}. {step}", markup=False, soft_wrap=True)


@app.command("joiner-config")
def joiner_config(
    joiner: int = typer.Argument(..., help="Id of the joiner whose config to print."),
    zookeeper_connect: Optional[str] = ZOOKEEPER_OPTION,
    add: Optional[List[str]] = typer.Option(
        None, "--add", help="Every joiner of this change (ids from the playbook, or inline specs); default: the joiner alone."
    ),
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Print the dynamic config file a joiner must start with: the committed config plus every joiner as an observer."""
    from migrate.runner.zookeeper import render_joiner_config

    book = _playbook(playbook)
    connect = zookeeper_connect or (book.zookeeper.connect if book else None)
    if not connect:
        raise BadInput("no ZooKeeper to read the committed config from: give --zookeeper host:port (or --playbook)")
    adds = parse_add(add) if add else (tuple(s.id for s in book.zookeeper.add) if book else ())
    known = tuple(_to_server(s) for s in book.zookeeper.add) if book else ()
    config, committed, warnings = render_joiner_config(connect, joiner, adds, known, zk_auth)
    for w in warnings:
        err_console.print(f"warning: {w}", markup=False)
    if output == OutputFormat.json:
        emit_json({"joiner": joiner, "committed_version": committed.version_hex, "lines": config.lines(),
                   "text": config.render(with_version=False)})
        return
    # plain lines, so that the output can be redirected into the joiner's dynamic config file
    sys.stdout.write(config.render(with_version=False))
