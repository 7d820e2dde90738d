"""The typer options the ``kmigrate mirror`` commands share, and the values they become: both clusters
as the runner takes them (:func:`request`, :func:`side`) and the state directory (:func:`state_dir`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

SOURCE = typer.Option(..., "--source-bootstrap", help="Bootstrap servers of the cluster to copy from, host:port[,...].")
TARGET = typer.Option(..., "--target-bootstrap", help="Bootstrap servers of the new cluster, host:port[,...].")
SOURCE_CC = typer.Option(None, "--source-command-config", help="Client properties (SASL/SSL) for the source, as for Kafka's tools.")
TARGET_CC = typer.Option(None, "--target-command-config", help="Client properties (SASL/SSL) for the target.")
TOPICS = typer.Option(None, "--topics", help="Regular expression of the topics to mirror (whole name). Default: every non-internal topic.")
GROUPS = typer.Option(None, "--groups", help="Regular expression of the consumer groups whose offsets are translated. Default: all.")
ENGINE = typer.Option("mirrormaker2", "--engine", help="mirrormaker2 (default) or mirrormaker1 (Kafka's legacy "
                     "kafka.tools.MirrorMaker, deprecated; kmigrate translates the consumer offsets).")
# the commands that follow a started mirror: its clusters unless given
SOURCE_AS_STARTED = typer.Option(None, "--source-bootstrap", help="Default: as given to mirror start.")
TARGET_AS_STARTED = typer.Option(None, "--target-bootstrap", help="Default: as given to mirror start.")
STATE_DIR = typer.Option(None, "--state-dir", help="Where MirrorMaker's mm2.properties, pid and log live "
                         "(default: $XDG_STATE_HOME/kmigrate/mirror or ~/.local/state/kmigrate/mirror).")


def path(p: Optional[Path]) -> Optional[str]:
    return None if p is None else str(p.expanduser().resolve())


def side(bootstrap: Optional[str], command_config: Optional[Path], role: str):
    """One cluster as given (``None`` when its bootstrap is not: then as ``mirror start`` recorded it)."""
    from migrate.runner.mirror.clusters import Side

    return None if bootstrap is None else Side(bootstrap, path(command_config), role)


def request(source_bootstrap, target_bootstrap, source_command_config, target_command_config, topics, groups):
    from migrate.runner.mirror.clusters import Request

    return Request(side(source_bootstrap, source_command_config, "source"),
                   side(target_bootstrap, target_command_config, "target"), topics, groups)


def state_dir(given: Optional[Path]) -> Path:
    from migrate.runner.mirror.engines import default_state_dir

    return (given or default_state_dir()).expanduser().resolve()
