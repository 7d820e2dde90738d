"""The client impact as one self-contained HTML page: a table of the phases and plotly charts over time.

Charts, one above the other on a shared time axis (seconds after the canary's start): produce latency
p50/p99/max, throughput (acknowledgements per second), the produce stall in progress, and, when kmigrate
recorded one, the replication throttle per broker. Each phase is a shaded band with its name. plotly.js is
inlined in the page (no network needed to open it).
"""

from __future__ import annotations

import html
from pathlib import Path

from migrate.core.report.impact import Impact
from migrate.core.report.phases import WHOLE_RUN
from migrate.files import write_whole

BAND_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d")


def figure(impact: Impact):
    """The plotly figure of ``impact`` (rows: latency, throughput, stall, throttle when known)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = impact.timeline.rows()
    width = impact.timeline.width_s
    at = [r[0] + width / 2 for r in rows]  # each bucket drawn at its middle
    titles = ["produce latency (ms)", "throughput (acknowledged records/s)", "produce stall in progress (s)"]
    if impact.throttle:
        titles.append("replication throttle per broker (MB/s)")
    fig = make_subplots(rows=len(titles), cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.06)
    for col, name, colour in ((3, "p50", "#54a24b"), (4, "p99", "#f58518"), (5, "max", "#e45756")):
        fig.add_trace(go.Scatter(x=at, y=[r[col] for r in rows], name=f"latency {name}", mode="lines",
                                 line={"color": colour}, connectgaps=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=at, y=[r[1] / width for r in rows], name="acks/s", mode="lines",
                             line={"color": "#4c78a8"}), row=2, col=1)
    fig.add_trace(go.Scatter(x=at, y=[r[6] for r in rows], name="stall (s)", mode="lines", fill="tozeroy",
                             line={"color": "#b279a2"}), row=3, col=1)
    end = impact.timeline.duration_s
    for broker, steps in impact.throttle.items():
        xs = [t for t, _ in steps] + [end]
        ys = [None if r is None else r / 1e6 for _, r in steps]
        fig.add_trace(go.Scatter(x=xs, y=ys + ys[-1:], name=f"throttle broker {broker}", mode="lines",
                                 line={"shape": "hv"}), row=4, col=1)
    for i, p in enumerate(x for x in impact.phases if x.mark.name != WHOLE_RUN):
        fig.add_vrect(x0=p.mark.start_s, x1=p.mark.end_s, row="all", col=1, fillcolor=BAND_COLOURS[i % len(BAND_COLOURS)],
                      opacity=0.12, layer="below", line_width=0)
        # the name once, at the top of the first chart, slanted so that neighbouring short phases stay legible
        fig.add_annotation(x=p.mark.start_s, y=1.0, xref="x", yref="paper", text=p.mark.name,
                           showarrow=False, textangle=-30, xanchor="left", yanchor="bottom", font={"size": 10})
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_xaxes(title_text="seconds after the canary started", row=len(titles), col=1)
    fig.update_layout(height=260 * len(titles) + 160, margin={"t": 160}, hovermode="x unified",
                      template="plotly_white", legend={"orientation": "h", "y": -0.08})
    return fig


def _cell(v) -> str:
    return "" if v is None else html.escape(str(v))


def page(impact: Impact) -> str:
    """The whole page: title, notes, the phase table, the charts (plotly.js inlined)."""
    head = ("phase", "from s", "to s", "seconds", "acks", "failed", "p50 ms", "p99 ms", "max ms", "longest stall s")
    rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in (
            p.mark.name, round(p.mark.start_s, 1), round(p.mark.end_s, 1), round(p.mark.end_s - p.mark.start_s, 1),
            p.figures.acks, p.figures.failed, p.figures.p50_ms, p.figures.p99_ms, p.figures.max_ms, p.figures.stall_s))
        + "</tr>" for p in impact.phases)
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in impact.notes)
    started = f" (started {html.escape(impact.started_at)})" if impact.started_at else ""
    chart = figure(impact).to_html(full_html=False, include_plotlyjs=True, div_id="kmigrate-impact")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(impact.title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}} td:first-child{{text-align:left}} .note{{color:#a33}}</style>
</head><body>
<h1>{html.escape(impact.title)}{started}</h1>
{notes}
<table><thead><tr>{''.join(f'<th>{h}</th>' for h in head)}</tr></thead><tbody>{rows}</tbody></table>
<p>Latency: send to acknowledgement (acks=all), per {impact.timeline.width_s:g} s bucket (percentiles within 2 %).
Stall: the longest wait of a partition's records with none acknowledged, while it goes on.</p>
{chart}
</body></html>
"""


def write_page(impact: Impact, path: Path, option: str = "--report") -> None:
    """The page written to ``path`` whole or not at all."""
    write_whole(path, page(impact), "the client impact page", option)
