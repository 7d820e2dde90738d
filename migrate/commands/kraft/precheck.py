"""``kmigrate kraft precheck``: phase 0 of ZooKeeper to KRaft (KIP-866), each check pass or fail. Changes nothing.

Exit 0 when every check passes; 2 with the first refusal's line (what is wrong and the fix) when one fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from migrate.commands.common import (
    OUTPUT_OPTION, ZK_CLIENT_CONFIG_OPTION, ZK_JAAS_FILE_OPTION, OutputFormat, console, emit_json,
)
from migrate.commands.options import (
    BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, ZK_AUTH_FILE_OPTION, ZK_AUTH_OPTION, ZOOKEEPER_OPTION,
)
from migrate.errors import BadInput
from migrate.files import load_playbook, zk_auth as zk_auth_from, zk_client_config, zk_jaas


def precheck(
    playbook: Path = typer.Option(..., "--playbook", "-p",
                                  help="Playbook with a kraft: section (the controllers); see playbooks/kraft.yaml."),
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    zookeeper: Optional[str] = ZOOKEEPER_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = typer.Option(
        None, "--zk-jaas-file", envvar="KMIGRATE_ZK_JAAS_FILE",
        help="The JAAS file (section Client) the controllers will log in to ZooKeeper with; when the brokers' znodes "
             "belong to a SASL identity, it must be that identity."),
    zk_client_config_file: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Check the cluster can move from ZooKeeper to KRaft: Kafka 3.9 with inter.broker.protocol.version 3.9, fixed
    broker ids, no dead broker in an assignment, free controller ids, no reassignment in flight, the ZooKeeper
    security in the controllers' config, dedicated controllers. Reads only; exit 2 names the first refusal."""
    from migrate.commands.plan import resolve_connection
    from migrate.core.kraft.prechecks import first_refusal
    from migrate.core.zookeeper.auth import parse_auth
    from migrate.runner.kraft.precheck import kraft_precheck

    pb = load_playbook(playbook)
    settings, connect = resolve_connection(pb, bootstrap_server, zookeeper, command_config)
    assert connect is not None  # a playbook always has zookeeper.connect
    auth = parse_auth(zk_auth_from(zk_auth, zk_auth_file), zk_jaas(zk_jaas_file), zk_client_config(zk_client_config_file))
    if output == OutputFormat.json:
        checks = kraft_precheck(pb, settings, connect, auth or None)
    else:
        with console.status("reading the cluster") as status:
            checks = kraft_precheck(pb, settings, connect, auth or None, progress=status.update)
    first = first_refusal(checks)
    if output == OutputFormat.json:
        emit_json({"ok": first is None, "refusal": None if first is None else {"check": first.name, "message": first.message},
                   "checks": [{"check": c.name, "ok": c.ok, "message": c.message} for c in checks]})
    else:
        for c in checks:
            console.print(f"  {'[green]pass[/]' if c.ok else '[bold red]FAIL[/]'} {c.name}: ", end="")
            console.print(c.message, markup=False)
        if first is None:
            console.print("every pre-check passes: the controllers can start (nothing was changed)")
    if first is not None:
        raise BadInput(first.message)
