"""Issue 31: a demo run in a temporary folder keeps its report and its page there, and nothing else."""

from __future__ import annotations

from migrate.commands.demo_run import remove_all_but


def test_the_temporary_folder_keeps_the_report_files_only(tmp_path):
    work = tmp_path / "kmigrate-demo-x"
    (work / "sandbox" / "kafka-1").mkdir(parents=True)
    for name in ("plan.json", "demo-report.json", "demo-report.html"):
        (work / name).write_text("{}")
    remove_all_but(work, (work / "demo-report.json", work / "demo-report.html"))
    assert sorted(p.name for p in work.iterdir()) == ["demo-report.html", "demo-report.json"]


def test_without_report_files_in_it_the_folder_goes(tmp_path):
    work = tmp_path / "kmigrate-demo-y"
    (work / "sandbox").mkdir(parents=True)
    (work / "plan.json").write_text("{}")
    remove_all_but(work, (tmp_path / "elsewhere.json",))
    assert not work.exists()
