"""The command line's start: a run imports only the command it runs; help and a mistyped name still list every command."""

from __future__ import annotations

import subprocess
import sys

COMMANDS = ("sandbox", "inspect", "plan", "topics", "canary", "demo", "partitions", "status", "health", "zookeeper", "verify")


def python(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_command_imports_only_its_own_module():
    out = python(
        "import sys\n"
        "from migrate.cli import main\n"
        "try:\n"
        "    main(['verify', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('migrate.commands.')))\n"
    )
    assert out.strip().splitlines()[-1] == "['migrate.commands.common', 'migrate.commands.verify']"


def test_help_lists_every_command():
    r = subprocess.run([sys.executable, "-m", "migrate", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    listed = [line.split()[1] for line in r.stdout.splitlines() if line.startswith("│ ") and len(line.split()) > 1]
    assert sorted(c for c in listed if c in COMMANDS) == sorted(COMMANDS)


def test_a_mistyped_command_is_bad_input():
    r = subprocess.run([sys.executable, "-m", "migrate", "verfiy", "snapshot"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "No such command 'verfiy'" in r.stderr


def test_output_format_given_a_file_name_points_to_out():
    """`-O json.json` is a format flag given a file name: exit 2 with a hint to --out/-o, nothing written."""
    proc = subprocess.run([sys.executable, "-m", "migrate", "verify", "snapshot", "-O", "json.json",
                           "--bootstrap-server", "127.0.0.1:9", "--out", "unused.json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "looks like a file name" in proc.stderr and "--out/-o FILE" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "migrate", "plan", "-O", "yaml"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "give text or json" in proc.stderr


def test_ctrl_c_in_any_command_says_so_and_exits_130():
    """typer turns a KeyboardInterrupt into a silent Exit(130): the operator still gets one line."""
    r = subprocess.run([sys.executable, "-c",
                        "import sys\n"
                        "def interrupted(*a, **k):\n"
                        "    raise KeyboardInterrupt\n"
                        "import migrate.runner.health as rh\n"
                        "rh.wait_healthy = interrupted\n"
                        "rh.require_healthy = interrupted\n"
                        "rh.cluster_reader = interrupted\n"
                        "from migrate.cli import main\n"
                        "main(['health', '--bootstrap-server', '127.0.0.1:1'])\n"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("kmigrate: interrupted (SIGINT)"), r.stderr
