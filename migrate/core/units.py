"""Units and addresses, each parsed and formatted in one place: durations, rates and sizes,
``host:port`` and ZooKeeper connect strings. Pure; errors are :class:`BadInput` naming the option.
"""

from __future__ import annotations

import re
from typing import Iterable

from migrate.errors import BadInput

MIN_THROTTLE_BYTES_PER_S = 1_000_000
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*$")


# ------------------------------------------------------------------ durations
def parse_duration(text: str | float | int, option: str) -> float:
    """``"30s"``, ``"5m"``, ``"500ms"``, ``"1h"`` or a bare number of seconds -> seconds (> 0)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _DURATION.match(str(text))
        if not m:
            raise BadInput(f"{option} {text!r} is not a duration: write e.g. 30s, 5m or 500ms")
        value = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    if value <= 0:
        raise BadInput(f"{option} {text!r} must be more than zero")
    return value


def format_duration(seconds: int) -> str:
    """``7384`` -> ``"2h 3m"``; ``59`` -> ``"59s"``."""
    if seconds < 60:
        return f"{seconds}s"
    minutes, _ = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m"


# ------------------------------------------------------------------ rates and sizes
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)(i?)([Bb]?)\s*(?:/\s*s(?:ec)?)?\s*$")
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_rate(text: str | int) -> int:
    """Parse a replication throttle into bytes per second.

    >>> parse_rate("50MB/s"), parse_rate("10MiB/s"), parse_rate(1000000)
    (50000000, 10485760, 1000000)

    Units: B, KB, MB, GB, TB (powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024), with or
    without ``/s``; a bare number is bytes per second. A lower-case ``b`` means bits and is
    refused. Below 1 MB/s (1,000,000 bytes/s) a migration would take forever: refused too.
    Raises :class:`BadInput`.
    """
    if isinstance(text, bool):
        raise BadInput(f"throttle {text!r} is not a rate: write e.g. 50MB/s")
    if isinstance(text, int):
        value = text
        shown = str(text)
    else:
        shown = str(text)
        m = _SIZE_RE.match(shown)
        if not m:
            raise BadInput(f"throttle {shown!r} is not a rate: write e.g. 50MB/s, 10MiB/s or 1000000 (bytes/s)")
        number, prefix, binary, unit = m.groups()
        if unit == "b":
            raise BadInput(f"throttle {shown!r}: a lower-case b means bits; write bytes, e.g. 50MB/s")
        if binary and not prefix:
            raise BadInput(f"throttle {shown!r} is not a rate: write e.g. 50MB/s, 10MiB/s or 1000000 (bytes/s)")
        base = 1024 if binary else 1000
        value = int(float(number) * base ** _POWERS[prefix.lower()])
    if value < MIN_THROTTLE_BYTES_PER_S:
        raise BadInput(
            f"throttle {shown} is {value} bytes/s, below the 1 MB/s minimum: raise it (e.g. 50MB/s)"
        )
    return value


def format_rate(bytes_per_s: int) -> str:
    """``50000000`` -> ``"50 MB/s"`` (decimal units, for messages)."""
    return f"{format_bytes(bytes_per_s)}/s"


def format_bytes(n: int) -> str:
    """``1500000`` -> ``"1.5 MB"`` (decimal units, for messages)."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(value) < 1000 or unit == "PB":
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.1f} {unit}".replace(".0 ", " ")
        value /= 1000
    return f"{n} B"  # pragma: no cover


# ------------------------------------------------------------------ addresses
def parse_connect(connect: str, what: str = "zookeeper connect string") -> tuple[tuple[tuple[str, int], ...], str]:
    """Parse a ZooKeeper connect string into ((host, port), ...) and a chroot ('' if none).

    >>> parse_connect("h1:2181,h2:2182/kafka")
    ((('h1', 2181), ('h2', 2182)), '/kafka')

    A host without a port gets 2181. Raises :class:`BadInput` on an empty or malformed string.
    """
    text = (connect or "").strip()
    if not text:
        raise BadInput(f"{what} is empty: give host:port[,host:port...][/chroot]")
    chroot = ""
    slash = text.find("/")
    if slash >= 0:
        text, chroot = text[:slash], text[slash:].rstrip("/")
    hosts: list[tuple[str, int]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise BadInput(f"{what} {connect!r} has an empty host entry: remove the extra comma")
        host, port = split_host_port(item, 2181, what, connect)
        hosts.append((host, port))
    return tuple(hosts), chroot


def split_host_port(item: str, default_port: int | None = None, what: str = "address", whole: str | None = None) -> tuple[str, int]:
    """``host:port``, ``[v6]:port`` or a bare host (``default_port``) -> (host without brackets, port).

    >>> split_host_port("[::1]:2181"), split_host_port("zk1", 2181)
    (('::1', 2181), ('zk1', 2181))
    """
    whole = item if whole is None else whole
    if item.startswith("["):  # [ipv6]:port
        end = item.find("]")
        if end < 0:
            raise BadInput(f"{what} {whole!r}: unclosed '[' in {item!r}")
        host, rest = item[1:end], item[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else ""
    elif item.count(":") == 1:
        host, port_text = item.split(":")
    elif ":" in item:  # bare IPv6 without port
        host, port_text = item, ""
    else:
        host, port_text = item, ""
    if not host:
        raise BadInput(f"{what} {whole!r}: missing host in {item!r}")
    if not port_text:
        if default_port is None:
            raise BadInput(f"{what} {whole!r}: {item!r} has no port: write host:port")
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BadInput(f"{what} {whole!r}: port {port_text!r} of {item!r} is not a port number (1-65535)")
    return host, int(port_text)


def format_connect(addresses: Iterable[str], chroot: str = "") -> str:
    """Join ``host:port`` addresses and a chroot into a connect string."""
    return ",".join(addresses) + (chroot or "")
