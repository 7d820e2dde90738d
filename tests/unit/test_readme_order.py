"""README.md's real-cluster block follows the runbook ``kmigrate plan`` prints (core/planner.build_runbook):
the same steps, in the same order, with the same numbers and the same kmigrate commands, and the health
gate the rolling-restart steps name after each restart."""

from __future__ import annotations

import re

from pathlib import Path

from migrate.core.plan.planner import RUNBOOK_COMMANDS, build_plan, build_runbook

from tests.unit.conftest import playbook, snapshot

README = Path(__file__).resolve().parents[2] / "README.md"

PLAYBOOK, BOOTSTRAP = "my-migration.yaml", "broker1:9092"


def readme_block() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- runbook:start -->", 1)[1].split("<!-- runbook:end -->", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("```")]


def runbook():
    plan = build_plan(snapshot(), playbook())
    return build_runbook(plan.zookeeper, plan.mapping, plan.new_brokers, {}, has_moves=True,
                         playbook_file=PLAYBOOK, bootstrap=BOOTSTRAP)


def command_of(line: str) -> str:
    return line.split("  #", 1)[0].strip()


def step_lines(lines: list[str]) -> list[tuple[int, str]]:
    """(step number, line) of every README line that names a runbook step: ``# N. operator: ...``
    comments and commands whose comment starts with ``# N.``."""
    out = []
    for ln in lines:
        m = re.match(r"# (\d+)\. operator: ", ln) or re.search(r"  # (\d+)\. ", ln)
        if m:
            out.append((int(m.group(1)), ln))
    return out


def test_the_readme_names_every_runbook_step_in_order_with_its_number():
    steps = runbook()
    named = step_lines(readme_block())
    assert [n for n, _ in named] == [s.number for s in steps] == list(range(1, 12))
    for step, (_, line) in zip(steps, named):
        if step.actor == "kmigrate":
            assert command_of(line) == step.command, f"step {step.number}"
        else:
            head = step.command.split(" with ")[0].split(",")[0]
            assert line.startswith(f"# {step.number}. operator: {head}"), f"step {step.number}: {line!r} vs {head!r}"


def test_each_rolling_restart_is_followed_by_the_health_gate_its_step_names():
    lines = readme_block()
    gate = RUNBOOK_COMMANDS["health"].format(bootstrap=BOOTSTRAP)
    restarts = [s for s in runbook() if s.command.startswith("rolling restart")]
    assert len(restarts) == 2
    for step in restarts:
        assert f"`{gate}`" in step.description
        at = next(i for i, ln in enumerate(lines) if ln.startswith(f"# {step.number}. operator: rolling restart"))
        assert lines[at + 1] == gate
    new_brokers = next(s for s in runbook() if s.command.startswith("start the new broker"))
    at = next(i for i, ln in enumerate(lines) if ln.startswith(f"# {new_brokers.number}. operator: start the new"))
    assert f"`{command_of(lines[at + 1])}`" in new_brokers.description


def test_the_joiner_config_command_and_the_dry_run_come_where_the_runbook_needs_them():
    lines = [command_of(ln) for ln in readme_block()]
    joiner = RUNBOOK_COMMANDS["joiner_config"].format(playbook=PLAYBOOK).replace("ID", "4")
    assert lines.index(joiner) == lines.index(next(ln for ln in lines if ln.startswith("# 2. operator"))) + 1
    dry = f"kmigrate zookeeper --playbook {PLAYBOOK} --dry-run"
    first_restart = next(i for i, ln in enumerate(lines) if ln.startswith("# 3. operator"))
    reconfig = next(i for i, ln in enumerate(lines) if ln.startswith(f"kmigrate zookeeper --playbook {PLAYBOOK} --add"))
    assert first_restart < lines.index(dry) < reconfig  # the dry run checks the first rolling restart happened


def test_the_first_screen_keeps_its_two_set_up_commands():
    head = README.read_text(encoding="utf-8").split("## ", 1)[0]
    commands = [ln for ln in head.splitlines() if ln.startswith("pip install")]
    assert len(commands) == 2 and commands[0].endswith("kmigrate demo                 # run the main job on a local sandbox cluster")
    assert commands[1].endswith("# run the tests")


def test_readme_lists_the_acls_each_command_checks():
    """The README's ACL table is the table the commands check (core/acl_table.py), word for word,
    one heading level down (it sits under "Secured clusters")."""
    from migrate.core.acl_table import readme_section

    assert "#" + readme_section().strip() in README.read_text(encoding="utf-8")
