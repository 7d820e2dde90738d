"""core/acl_table.py: the README's table of the ACLs each command needs."""

from __future__ import annotations

from migrate.core.acl_table import readme_section


def test_readme_section_lists_each_command():
    text = readme_section()
    assert text.startswith("## ACLs each command needs")
    for command in ("kmigrate partitions", "kmigrate topics create", "kmigrate canary", "kmigrate verify",
                    "kmigrate mirror create-topics (target)", "kmigrate mirror start (source)",
                    "kmigrate mirror cutover (target)"):
        assert f"| {command}" in text
    assert "| kmigrate partitions | ALTER | cluster |" in text
