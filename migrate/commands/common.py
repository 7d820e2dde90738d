"""Options and rendering shared by every command."""

from __future__ import annotations

import enum
import json
import sys
from typing import Any

import typer
from rich.console import Console

from migrate.errors import BadInput


class OutputFormat(str, enum.Enum):
    text = "text"
    json = "json"


def _output_format(value: Any) -> OutputFormat:
    """``--output``/``-O`` takes a format, never a file name: ``-O json.json`` gets a hint to ``--out``."""
    if isinstance(value, OutputFormat):
        return value
    text = str(value).strip().lower()
    try:
        return OutputFormat(text)
    except ValueError:
        pass
    if "." in text or "/" in text:
        raise typer.BadParameter(f"{value!r} looks like a file name: --output/-O takes the format (text or json); "
                                 "write a file with --out/-o FILE")
    raise typer.BadParameter(f"{value!r}: give text or json")


OUTPUT_OPTION = typer.Option(OutputFormat.text.value, "--output", "-O", parser=_output_format, metavar="[text|json]",
                             help="Output format: text for people, json for automation (a file is --out/-o).")

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def emit_json(data: Any) -> None:
    """Write ``data`` as one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()


def emit_json_line(fields: dict) -> None:
    """One JSON object on one line of stdout (the event streams of ``partitions`` and ``controllers``): the fields and
    the time under ``ts``."""
    import time

    line = {**fields, "ts": round(time.time(), 3)}
    sys.stdout.write(json.dumps(line, sort_keys=True, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()


def parse_id_list(text: str | None, option: str) -> tuple[int, ...]:
    """Parse ``1,2,3`` (also ``1-3``) into a tuple of ints; BadInput naming the option otherwise."""
    if text is None or not text.strip():
        return ()
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                lo, hi = part.split("-", 1)
                ids.extend(range(int(lo), int(hi) + 1))
            else:
                ids.append(int(part))
        except ValueError:
            raise BadInput(f"{option} {text!r}: expected ids separated by commas, like 1,2,3 or 4-6") from None
    return tuple(ids)

ZK_JAAS_FILE_OPTION = typer.Option(
    None, "--zk-jaas-file", envvar="KMIGRATE_ZK_JAAS_FILE",
    help="JAAS file whose Client section (DigestLoginModule username/password) logs in to ZooKeeper with SASL "
         "DIGEST-MD5, as Kafka's tools take with -Djava.security.auth.login.config (also read from $KAFKA_OPTS). "
         "Combine with --zk-auth-file for the super user a reconfig needs.")
ZK_CLIENT_CONFIG_OPTION = typer.Option(
    None, "--zk-client-config", envvar="KMIGRATE_ZK_CLIENT_CONFIG",
    help="TLS to ZooKeeper's secureClientPort, as Kafka's --zk-tls-config-file: zookeeper.ssl.client.enable=true, "
         "zookeeper.ssl.truststore.* and zookeeper.ssl.keystore.* (JKS, PKCS12 or PEM, opened in memory), "
         "zookeeper.ssl.endpoint.identification.algorithm. Give --zookeeper the secure ports.")
