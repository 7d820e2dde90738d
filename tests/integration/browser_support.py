"""Open an HTML page in a real headless browser (Debian's chromium, as ``.ci/run`` installs it) and read what it drew."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"


def rendered_dom(page: Path, timeout_s: float = 120) -> str:
    """The DOM of ``page`` once its scripts ran (a fresh profile, no network, no GPU), as chromium serialises it."""
    binary = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    assert binary, "no chromium: install it (apt-get install chromium; .ci/run does)"
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        proc = subprocess.run(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout_s)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def drawn(dom: str) -> tuple[int, list[str]]:
    """What plotly drew in the page's SVG: the number of scatter traces, and the texts of its annotations (chart
    titles, phase names). Read from the rendered SVG elements only, never from the script that holds the data."""
    svg = "".join(re.findall(r"<svg[^>]*class=\"main-svg\".*?</svg>", dom, flags=re.S))
    traces = len(re.findall(r"<g class=\"trace scatter", svg))
    texts = [re.sub(r"<[^>]+>", "", t) for t in re.findall(r"class=\"annotation-text\"[^>]*>(.*?)</text>", svg, flags=re.S)]
    return traces, texts


def broken_copy(page: Path, to: Path) -> Path:
    """``page`` with its plotly.js library cut in half (a page whose chart script is broken)."""
    text = page.read_text()
    start = text.index("<script>/**")
    end = text.index("</script>", start)
    to.write_text(text[:start] + text[start:(start + end) // 2] + text[end:])
    return to
