"""``kmigrate zookeeper``: swap ZooKeeper voters by dynamic reconfiguration, and ``joiner-config``.

    kmigrate zookeeper --zookeeper zk1:2181 --add '4=zk4:2888:3888;2181,5=zk5:2888:3888;2181' \\
        --remove 1,2,3 --bootstrap-server kafka1:9092
    kmigrate zookeeper joiner-config 4 --zookeeper zk1:2181 --add '4=zk4:2888:3888;2181,5=zk5:2888:3888;2181'
    kmigrate zookeeper --plan plan.json --bootstrap-server kafka1:9092

With ``--plan``, the change is the one the plan recorded (its connect string, joiners and removals);
``--zookeeper``, ``--add`` or ``--remove`` given as well must agree with it.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import List, Optional

import typer

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console, parse_id_list
from migrate.errors import BadInput
from migrate.files import zk_auth as read_zk_auth, zk_client_config, zk_jaas
from migrate.commands.common import ZK_CLIENT_CONFIG_OPTION, ZK_JAAS_FILE_OPTION
from migrate.core.zookeeper.config import ConfigError, Server, address_key, parse_server_spec, split_connect

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
ZK_AUTH_OPTION = typer.Option(None, "--zk-auth", envvar="KMIGRATE_ZK_AUTH",
                              help="user:password for ZooKeeper digest auth (a super user may reconfig); "
                                   "$KMIGRATE_ZK_AUTH keeps it off the command line.")
ZK_AUTH_FILE_OPTION = typer.Option(None, "--zk-auth-file", envvar="KMIGRATE_ZK_AUTH_FILE",
                                   help="File with one line user:password for ZooKeeper digest auth (instead of "
                                        "--zk-auth: the secret stays off the command line).")
PLAN_OPTION = typer.Option(
    None, "--plan", help="Plan written by kmigrate plan: perform the ZooKeeper change it recorded (connect string, joiners, removals)."
)


def _playbook(path: Optional[Path]):
    if path is None:
        return None
    from migrate.files import load_playbook

    book = load_playbook(path)
    if book.zookeeper is None:
        raise BadInput(f"playbook {path} has no zookeeper: section: kmigrate zookeeper changes a ZooKeeper ensemble; "
                       "add zookeeper: {connect: ...} (the brokers' zookeeper.connect) or give --zookeeper")
    return book


def _plan(path: Optional[Path]):
    if path is None:
        return None
    from migrate.files import load_plan

    return load_plan(path)


def change_from_plan(plan, connect: Optional[str], adds: tuple[Server | int, ...],
                     removes: tuple[int, ...]) -> tuple[str, tuple[Server, ...], tuple[int, ...]]:
    """The ZooKeeper change a plan recorded: (connect string, joiners, ids to remove).

    ``connect``, ``adds`` and ``removes`` are what the operator gave explicitly alongside ``--plan``
    (None/empty: not given); one that contradicts the plan is refused with one line (BadInput).
    A ``--zookeeper`` agrees when it has the plan's chroot and names only servers of the plan
    (the current servers or the joiners: after the change, only the new ones may be up).
    """
    zk = plan.zookeeper
    where = f"plan {plan.plan_id}"
    if zk is None:
        raise BadInput(f"{where} has no ZooKeeper change (its playbook adds and removes no server): "
                       "give --add/--remove, or re-run kmigrate plan with zookeeper.add/remove in the playbook")
    joiners = tuple(j.described() for j in zk.joiners)
    if connect:
        known = {address_key(a) for text in (zk.connect_before, zk.connect_during, zk.connect_after)
                 for a in split_connect(text)[0].split(",")}
        known |= {address_key(s.client_address) for s in zk.current + joiners if s.client_address}
        hosts, chroot = split_connect(connect)
        foreign = [h for h in hosts.split(",") if address_key(h) not in known]
        if chroot != split_connect(zk.connect_before)[1] or foreign:
            raise BadInput(f"--zookeeper {connect} contradicts {where} (its ensemble is {zk.connect_before}): "
                           "drop --zookeeper or re-run kmigrate plan")
    if adds:
        by_id = {j.id: j for j in joiners}
        ids = [a.id if isinstance(a, Server) else a for a in adds]
        differ = [a for a in adds if isinstance(a, Server) and (a.id not in by_id or not a.same_member(by_id[a.id]))]
        if sorted(ids) != sorted(by_id) or differ:
            shown = ",".join(map(str, sorted(by_id))) or "none"
            raise BadInput(f"--add {','.join(map(str, ids))} contradicts {where} (its joiners are {shown}): "
                           "drop --add or re-run kmigrate plan")
    if removes and sorted(set(removes)) != sorted(zk.remove):
        shown = ",".join(map(str, zk.remove)) or "none"
        raise BadInput(f"--remove {','.join(map(str, removes))} contradicts {where} (it removes {shown}): "
                       "drop --remove or re-run kmigrate plan")
    return zk.connect_before, joiners, tuple(zk.remove)


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
    plan: Optional[Path] = PLAN_OPTION,
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
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config_file: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    joiner_timeout: float = typer.Option(120.0, "--joiner-timeout", help="Seconds to wait for every joiner to follow the leader and catch up."),
    post_timeout: float = typer.Option(90.0, "--post-timeout", help="Seconds to wait after the reconfig for a leader among the new voters, and again for writes to commit."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Make the joiners voters and remove the old voters, then check the new ensemble and print what must follow."""
    if ctx.invoked_subcommand is not None:
        return
    from migrate.runner.zookeeper.change import run_zookeeper_change
    from migrate.runner.zookeeper.request import ZooKeeperRequest

    book = _playbook(playbook)
    pl = _plan(plan)
    known = tuple(s.described() for s in book.zookeeper.add) if book else ()
    if pl is not None:  # flag > plan > playbook: the plan's change, explicit flags only if they agree
        blocking = pl.errors(force=force, step="zookeeper")
        if blocking:
            raise BadInput(f"plan {pl.plan_id}: {blocking[0].message}"
                           + (f" (and {len(blocking) - 1} more error(s))" if len(blocking) > 1 else ""))
        connect, adds, removes = change_from_plan(pl, zookeeper_connect, parse_add(add), parse_remove(remove))
        connect = zookeeper_connect or connect
        known = adds
    else:
        connect = zookeeper_connect or (book.zookeeper.connect if book else None)
        adds = parse_add(add) if add else tuple(s.id for s in book.zookeeper.add) if book else ()
        removes = parse_remove(remove) if remove else (book.zookeeper.remove if book else ())
    if not connect:
        raise BadInput("no ZooKeeper to talk to: give --zookeeper host:port[,host:port...] (or --playbook)")
    if not adds and not removes:
        raise BadInput("nothing to do: give --add (joiners that become voters) and/or --remove (ids that leave), or --playbook")
    if joiner_timeout <= 0:
        raise BadInput(f"--joiner-timeout {joiner_timeout}: give a number of seconds above 0")
    if post_timeout <= 0:
        raise BadInput(f"--post-timeout {post_timeout}: give a number of seconds above 0")
    request = ZooKeeperRequest(
        connect=connect,
        add=adds,
        remove=removes,
        known=known,
        step_by_step=step_by_step,
        dry_run=dry_run,
        force=force,
        bootstrap_servers=bootstrap_server or (book.kafka.bootstrap_servers if book else None),
        command_config=str(command_config) if command_config else (book.kafka.command_config if book else None),
        kafka_client={k: str(v) for k, v in (book.kafka.client.items() if book else [])},
        zk_auth=read_zk_auth(zk_auth, zk_auth_file),
        zk_sasl=zk_jaas(zk_jaas_file),
        zk_tls=zk_client_config(zk_client_config_file),
        joiner_timeout_s=joiner_timeout,
        post_timeout_s=post_timeout,
    )
    status_console = console if output == OutputFormat.text else err_console
    with status_console.status("kmigrate zookeeper: starting") as status:
        result = run_zookeeper_change(request, progress=lambda msg: status.update(msg))
    if result.status == "dry-run":
        result.next_steps = [_apply_command(ctx, result.warnings) if step.startswith("run the same command") else step
                             for step in result.next_steps]
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    _render(result)


DRY_RUN_SKIPPED = "--force)"  # how the runner ends a warning about a check that --force let pass


def _apply_command(ctx: typer.Context, warnings: list[str]) -> str:
    """The next step of a dry run: the exact command that applies it, as the operator typed it without
    ``--dry-run``, and without ``--force`` unless a check passed only because of it (then it says which)."""
    forced = [w for w in warnings if w.rstrip().endswith(DRY_RUN_SKIPPED)]
    words = ["kmigrate", "zookeeper"]
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name)
        value = ctx.params.get(param.name)
        if param.name == "dry_run" or getattr(source, "name", "") != "COMMANDLINE" or value in (None, False, [], ()):
            continue
        if param.name == "force" and not forced:
            continue
        flag = param.opts[0] if param.opts[0].startswith("--") else param.opts[-1]
        if value is True:
            words.append(flag)
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            shown = getattr(item, "value", item)
            if param.name == "zk_auth":  # never echo a password: the operator types it again
                shown = str(shown).split(":", 1)[0] + ":PASSWORD"
            words += [flag, shlex.quote(str(shown))]
    command = " ".join(words)
    if "--force" in words:
        return f"apply it with: {command} (--force is still needed: {'; '.join(forced)})"
    given = ctx.params.get("force") and getattr(ctx.get_parameter_source("force"), "name", "") == "COMMANDLINE"
    return f"apply it with: {command}" + (" (--force left out: no check needed it)" if given else "")


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
            console.print(f"  write stall: {result.write_stall_ms:.0f} ms (longest time a write could not be committed, "
                          "on a server that stays)")
        if result.leaving_write_stall_ms is not None:
            console.print(f"  a client of a leaving server waited {result.leaving_write_stall_ms:.0f} ms (until that "
                          "server dropped it and it wrote through another)")
        c = result.checks
        console.print(
            f"  checks: leader {c.get('leader')} among the new voters, voters in sync {c.get('voters_in_sync')}, "
            f"removed servers out of the config, sentinel znode unchanged", markup=False
        )
    for w in result.warnings:
        console.print(f"[yellow]warning[/yellow]: {w}", soft_wrap=True)
    brokers = (result.broker_zookeeper_connect or "").split("/", 1)[0]
    if brokers and brokers != result.connect_string:  # over TLS: kmigrate dials the secureClientPort, the brokers not
        console.print(f"new connect string: {result.connect_string} (the secureClientPort; the brokers' "
                      f"zookeeper.connect: {result.broker_zookeeper_connect})", markup=False, soft_wrap=True)
    else:
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
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config_file: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Print the dynamic config file a joiner must start with: the committed config plus every joiner as an observer."""
    from migrate.runner.zookeeper.change import render_joiner_config

    book = _playbook(playbook)
    connect = zookeeper_connect or (book.zookeeper.connect if book else None)
    if not connect:
        raise BadInput("no ZooKeeper to read the committed config from: give --zookeeper host:port (or --playbook)")
    adds = parse_add(add) if add else (tuple(s.id for s in book.zookeeper.add) if book else ())
    known = tuple(s.described() for s in book.zookeeper.add) if book else ()
    config, committed, warnings = render_joiner_config(connect, joiner, adds, known, read_zk_auth(zk_auth, zk_auth_file),
                                                       zk_jaas(zk_jaas_file), zk_client_config(zk_client_config_file))
    for w in warnings:
        err_console.print(f"warning: {w}", markup=False)
    if output == OutputFormat.json:
        emit_json({"joiner": joiner, "committed_version": committed.version_hex, "lines": config.lines(),
                   "text": config.render(with_version=False)})
        return
    # plain lines, so that the output can be redirected into the joiner's dynamic config file
    sys.stdout.write(config.render(with_version=False))
