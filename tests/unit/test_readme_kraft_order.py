"""README.md's KRaft block follows the runbook ``kmigrate plan`` prints for ``playbooks/kraft.yaml``
(core/plan/planner.build_plan with core/kraft/runbook): every step, in order, with its number, the same kmigrate
commands, and each command an operator step tells the operator to run, right under that step."""

from __future__ import annotations

import re
from pathlib import Path

from migrate.core.plan.planner import build_plan

from tests.unit.conftest import playbook, snapshot

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK, BOOTSTRAP = "my-kraft.yaml", "broker1:9092,broker4:9092"


def readme_block() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- kraft-runbook:start -->", 1)[1].split("<!-- kraft-runbook:end -->", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("```")]


def runbook():
    text = (REPO / "playbooks" / "kraft.yaml").read_text(encoding="utf-8")
    text = re.sub(r'bootstrap_servers: "[^"]*"', f'bootstrap_servers: "{BOOTSTRAP}"', text)
    return build_plan(snapshot(), playbook(text, PLAYBOOK)).runbook


def command_of(line: str) -> str:
    return line.split("  #", 1)[0].strip()


def numbered(lines: list[str]) -> list[tuple[int, int]]:
    """(step number, line index) of every README line naming a step: ``# N. operator: ...`` or ``command  # N. ...``."""
    out = []
    for i, ln in enumerate(lines):
        m = re.match(r"# (\d+)\. operator: ", ln) or re.search(r"  # (\d+)\.", ln)
        if m:
            out.append((int(m.group(1)), i))
    return out


def test_every_step_in_order_with_its_number_and_command():
    steps, lines = runbook(), readme_block()
    named = numbered(lines)
    assert [n for n, _ in named] == [s.number for s in steps]
    assert any(s.command.startswith("kmigrate kraft precheck") for s in steps)  # the KRaft steps are in it
    for step, (_, at) in zip(steps, named):
        line = lines[at]
        if step.actor == "kmigrate":
            assert command_of(line) == step.command, f"step {step.number}"
        else:
            head = step.command.split(" with ")[0].split(",")[0]
            assert line.startswith(f"# {step.number}. operator: {head}"), f"step {step.number}: {line!r} vs {head!r}"


def test_the_commands_an_operator_step_names_follow_it():
    """The config commands of the controllers' start, roll 1, roll 2 and finalize (and finalize's gate) are the
    README's lines right under the step (the first controller shown; the others say "the same")."""
    steps, lines = runbook(), readme_block()
    at = dict(numbered(lines))
    commands = [command_of(ln) for ln in lines]
    checked = 0
    for step in steps:
        if step.actor != "operator":
            continue
        named = [c for c in re.findall(r"`(kmigrate kraft [^`]+)`", step.description)
                 if "status --playbook" not in c]  # the look after each restart, not a step of its own
        if not named or step.number in (11, 12):  # 3002 and 3003: "the same, for 3002"
            continue
        following = commands[at[step.number] + 1: at[step.number] + 1 + len(named)]
        assert following == named, f"step {step.number}"
        checked += 1
    assert checked == 4  # controller 3001, roll 1, roll 2, finalize


def test_the_rollback_line_names_the_command_the_soak_step_names():
    steps = runbook()
    soak = next(s for s in steps if s.command.startswith("kmigrate verify compare before-kraft"))
    rollback = re.search(r"`(kmigrate kraft rollback [^`]+)`", soak.description).group(1)
    assert rollback in [command_of(ln) for ln in readme_block()]
