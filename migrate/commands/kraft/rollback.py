"""``kmigrate kraft rollback``: back to ZooKeeper mode from any phase before finalize (Kafka's documented rollback).

    kmigrate kraft rollback --playbook playbook.yaml
    kmigrate kraft rollback --zookeeper zk1:2181/kafka --bootstrap-server kafka1:9092 --bootstrap-controller c1:9093

Each run reads where the cluster stands and does the next step or names the operator's and waits: brokers in KRaft
mode back to their roll-1 config; the KRaft controllers stopped; ``/controller`` and ``/migration`` deleted in one
ZooKeeper transaction (``/controller_epoch`` raised above the KRaft epoch first where needed, KAFKA-20488);
every broker back to its ZooKeeper-mode config. Progress on stderr; killed and run again, it goes on.
Refused once finalized (exit 2, nothing changed); exit 1 with where it stands after ``--timeout``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from migrate.commands.common import (
    OUTPUT_OPTION, ZK_CLIENT_CONFIG_OPTION, ZK_JAAS_FILE_OPTION, OutputFormat, console, emit_json, err_console,
    parse_id_list,
)
from migrate.commands.kraft.connect import (
    BOOTSTRAP_CONTROLLER_OPTION, BROKER_LIST_OPTION, CONTROLLER_COMMAND_CONFIG_OPTION, controller_settings,
)
from migrate.errors import BadInput
from migrate.commands.options import (
    BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, PLAYBOOK_OPTION, ZK_AUTH_FILE_OPTION, ZK_AUTH_OPTION, ZOOKEEPER_OPTION,
)


def rollback(
    zookeeper: Optional[str] = ZOOKEEPER_OPTION,
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    bootstrap_controller: Optional[str] = BOOTSTRAP_CONTROLLER_OPTION,
    controller_command_config: Optional[Path] = CONTROLLER_COMMAND_CONFIG_OPTION,
    broker_list: Optional[str] = BROKER_LIST_OPTION,
    timeout: str = typer.Option("30m", "--timeout", help="How long to wait for the operator's steps before exit 1 "
                                                         "with where it stands (run it again to go on)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print where it stands and the steps left; change nothing."),
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Roll a ZooKeeper-to-KRaft migration back to ZooKeeper mode (before finalize): names each operator step, waits for it, deletes /controller and /migration itself."""
    from migrate.commands.plan import resolve_connection
    from migrate.core.units import parse_duration
    from migrate.core.zookeeper.auth import parse_auth
    from migrate.files import load_playbook, zk_auth as read_zk_auth, zk_client_config as read_zk_client_config, zk_jaas
    from migrate.runner.kraft.rollback import rollback as run_rollback

    seconds = parse_duration(timeout, "--timeout")
    pb = load_playbook(playbook) if playbook is not None else None
    if pb is not None and pb.zookeeper is None and not zookeeper:
        raise BadInput(f"{playbook} has no zookeeper: section: give --zookeeper host:port/chroot (the brokers' "
                       "zookeeper.connect)")
    if pb is None and not bootstrap_server:
        raise BadInput("no Kafka brokers given: use --bootstrap-server host:port (the brokers, to read their migration "
                       "flag) or --playbook")
    settings, connect = resolve_connection(pb, bootstrap_server, zookeeper, command_config)
    if not connect:
        raise BadInput("no ZooKeeper given: use --zookeeper host:port/chroot (the brokers' zookeeper.connect) or --playbook")
    auth = parse_auth(read_zk_auth(zk_auth, zk_auth_file), zk_jaas(zk_jaas_file), read_zk_client_config(zk_client_config))
    controllers = tuple(a.strip() for a in (bootstrap_controller or "").split(",") if a.strip())
    if not controllers and pb is not None and pb.kraft is not None:
        controllers = tuple(c.address for c in pb.kraft.controllers)
    hint = f" --playbook {playbook}" if playbook is not None else ""
    # a controller kmigrate cannot talk to still counts as running while its listener accepts connections
    csettings = controller_settings(pb, command_config, controller_command_config, controllers, settings)

    def progress(msg: str) -> None:
        err_console.print(f"kraft rollback: {msg}", markup=False, soft_wrap=True)

    run = run_rollback(connect, auth or None, settings, known=parse_id_list(broker_list, "--broker-list"),
                       controllers=controllers, controller_settings=csettings, timeout_s=seconds, dry_run=dry_run,
                       playbook_hint=hint, progress=progress)
    doc = {"done": run.done, "dry_run": dry_run, "step": run.step, "message": run.message, "actions": run.actions,
           "migration": run.migration, "controller_epoch": run.controller_epoch, "plan": run.plan, "cluster": run.view}
    if output == OutputFormat.json:
        emit_json(doc)
        return
    if dry_run:
        console.print(f"now: {run.message}", markup=False, soft_wrap=True)
        for i, s in enumerate(run.plan, 1):
            console.print(f"{i}. [{s['who']}] {s['what']}", markup=False, soft_wrap=True)
        console.print("(dry run: nothing was changed)", markup=False)
        return
    if run.migration is not None:
        console.print(f"/migration was: {run.migration}", markup=False, soft_wrap=True)
    console.print(run.message, markup=False, soft_wrap=True)
