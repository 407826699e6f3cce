"""Per-op GPU time as a horizontal bar chart: a PNG (matplotlib) or a self-contained HTML file."""
import html
import os
import textwrap

# Bars beyond this many are summed into one "other ops" bar, so the chart stays readable.
MAX_BARS = 20
_COLOR = "#3b6ea5"


def bars(per_op, max_bars: int = MAX_BARS):
    """[(label, us, dispatches)] largest first, the tail folded into 'other ops'."""
    rows = sorted(per_op.items(), key=lambda kv: -kv[1][0])
    out = [(op, us, n) for op, (us, n) in rows[:max_bars]]
    rest = rows[max_bars:]
    if rest:
        out.append((f"{len(rest)} other ops", sum(us for _, (us, _) in rest), sum(n for _, (_, n) in rest)))
    return out


def short(op: str) -> str:
    """aten.linear.default -> linear; et_vk.linear_q4gsw.default -> et_vk.linear_q4gsw."""
    parts = op.split(".")
    if len(parts) >= 3 and parts[-1] in ("default", "Tensor", "Scalar", "int", "dim", "self"):
        parts = parts[:-1]
    return ".".join(parts[1:]) if parts[0] == "aten" and len(parts) > 1 else ".".join(parts)


def _pct(part: float, total: float) -> str:
    share = 100 * part / (total or 1.0)
    return "<1%" if 0 < share < 1 else f"{share:.0f}%"


def _time(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} µs"


def write_chart(path: str, per_op, title: str, subtitle: str) -> None:
    ext = os.path.splitext(path)[1].lower()
    rows = bars(per_op)
    if ext == ".png":
        _write_png(path, rows, title, subtitle)
    elif ext in (".html", ".htm"):
        _write_html(path, rows, title, subtitle)
    else:
        from vkdelegate.cli.common import CliError

        raise CliError(f"--chart {path}: the file must end in .png or .html")


def _write_png(path, rows, title, subtitle):
    try:
        import matplotlib
    except ImportError as e:
        from vkdelegate.cli.common import CliError

        raise CliError("--chart .png needs matplotlib (pip install matplotlib, or vkdelegate[chart]; "
                       "scripts/setup.sh installs it), or write .html") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    total = sum(us for _, us, _ in rows) or 1.0
    labels = [short(op) for op, _, _ in rows]
    values = [us for _, us, _ in rows]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.32 * len(rows)), dpi=100)
    y = list(range(len(rows)))[::-1]
    in_ms = max(values, default=0) >= 10000
    scale = 1000.0 if in_ms else 1.0
    ax.set_xlabel(f"GPU time per run ({'ms' if in_ms else 'µs'})")
    for yi, (op, us, n) in zip(y, rows):
        ax.text(us / scale, yi, f" {_time(us)} · {_pct(us, total)} · {n}×", va="center", fontsize=8, color="#333")
    ax.barh(y, [v / scale for v in values], color=_COLOR, height=0.7)
    ax.set_yticks(y, labels, fontsize=9)
    ax.set_xlim(0, max(values) / scale * 1.35 if values else 1)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"{title}\n{textwrap.fill(subtitle, 100)}", fontsize=9, loc="left")
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


def _write_html(path, rows, title, subtitle):
    total = sum(us for _, us, _ in rows) or 1.0
    top = max((us for _, us, _ in rows), default=1.0) or 1.0
    label_w, bar_w, row_h = 230, 520, 24
    height = row_h * len(rows) + 10
    parts = []
    for i, (op, us, n) in enumerate(rows):
        y = i * row_h + 5
        w = max(1.0, bar_w * us / top)
        parts.append(
            f'<g><title>{html.escape(op)}: {us:.1f} µs, {n} dispatch(es)</title>'
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{html.escape(short(op))}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{_COLOR}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 16}" class="v">{_time(us)} · {_pct(us, total)} · {n}×</text></g>')
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#222}} h1{{font-size:18px;margin:0}}
p{{color:#555;margin:4px 0 12px}} svg text{{font-size:12px;fill:#222}} svg text.v{{fill:#444;font-size:11px}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
<p>{html.escape(subtitle)}</p>
<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 170}" height="{height}" role="img"
 aria-label="GPU time per op">
{chr(10).join(parts)}
</svg>
</body></html>
"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc)
