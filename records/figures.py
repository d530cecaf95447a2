"""The report's figures (matplotlib, Agg), each written as PNG and SVG without timestamps.

Each function returns {file name: the smallest text of the figure, in pixels of the PNG}, measured
from the figure's own text artists, so that the page can be checked to show no text below a size
a person reads (tests/test_pages_in_browser.py)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

# Same data, same bytes: no creation dates, fixed SVG ids.
matplotlib.rcParams["svg.hashsalt"] = "usdgrade-records"
PNG_METADATA = {"Software": None}
SVG_METADATA = {"Date": None, "Creator": None}
PNG_DPI = 110
CELL_FONT_PT = 9      # a heatmap cell's rate and count: 13.75 px in the PNG


def smallest_text_px(figure, dpi: float = PNG_DPI) -> float:
    """The smallest visible, non-empty text of the figure, in pixels at `dpi`."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * dpi / 72.0 if sizes else 0.0


def _save(figure, out: Path, name: str) -> dict[str, float]:
    out.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(out / f"{name}.png", dpi=PNG_DPI, metadata=PNG_METADATA)
    figure.savefig(out / f"{name}.svg", metadata=SVG_METADATA)
    text_px = smallest_text_px(figure)
    plt.close(figure)
    return {f"{name}.png": text_px, f"{name}.svg": text_px}


def _short(text: str, limit: int = 32) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _label(model: str, agent: str) -> str:
    return f"{_short(model)}\n({_short(agent)})"


def heatmap(rates: list[dict], by: str, out: Path, name: str) -> dict[str, float]:
    """Strict repair rate: families or fault kinds down, models across, the rate in each cell. The
    kinds go down so that a long list grows the figure's height, never its width (a wide figure is
    shown scaled down, its text with it)."""
    if not rates:
        return {}
    rows = sorted({r[by] for r in rates})
    columns = sorted({(r["model"], r["agent"]) for r in rates})
    grid = np.full((len(rows), len(columns)), np.nan)
    counts = {}
    for r in rates:
        i, j = rows.index(r[by]), columns.index((r["model"], r["agent"]))
        grid[i, j] = r["rate"]
        counts[i, j] = f"{r['passed']}/{r['checks']}"
    figure, axes = plt.subplots(figsize=(1.5 * len(columns) + 3.6, 0.62 * len(rows) + 1.9))
    image = axes.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_xticks(range(len(columns)), [_label(*c) for c in columns])
    axes.set_yticks(range(len(rows)), [_short(r) for r in rows])
    for (i, j), text in counts.items():
        axes.text(j, i, f"{grid[i, j]:.2f}  {text}", ha="center", va="center", fontsize=CELL_FONT_PT,
                  color="white" if grid[i, j] < 0.6 else "black")
    axes.set_title(f"strict repair rate by {by.replace('_', ' ')}")
    figure.colorbar(image, ax=axes, fraction=0.046)
    return _save(figure, out, name)


def reward_distribution(rewards: dict[tuple, list[float]], out: Path) -> dict[str, float]:
    """authored_usd of every counted episode per model: box plot with the points over it."""
    if not rewards:
        return {}
    groups = sorted(rewards)
    figure, axes = plt.subplots(figsize=(1.8 * len(groups) + 2, 3.6))
    axes.boxplot([rewards[g] for g in groups], showmeans=True)
    for index, group in enumerate(groups, start=1):
        values = np.asarray(rewards[group])
        offsets = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else np.zeros(1)
        axes.scatter(index + offsets, values, s=14, alpha=0.7, zorder=3)
    axes.set_xticks(range(1, len(groups) + 1), [_label(*g) for g in groups])
    axes.set_ylabel("authored_usd")
    axes.set_ylim(-0.05, 1.05)
    axes.set_title("reward distribution (counted episodes)")
    return _save(figure, out, "rewards")


def partial_credit(points: dict[tuple, list[tuple[float, float]]], out: Path) -> dict[str, float]:
    """F (strict fraction) against S (semantic progress) per episode, one colour per model."""
    if not points:
        return {}
    figure, axes = plt.subplots(figsize=(4.8, 4.2))
    markers = "osD^v<>"
    groups = sorted(points)
    for index, group in enumerate(groups):
        # equal (F, S) pairs are one marker sized by their count; each model is nudged sideways
        # so coinciding models stay visible
        counts: dict[tuple, int] = {}
        for pair in points[group]:
            counts[pair] = counts.get(pair, 0) + 1
        nudge = (index - (len(groups) - 1) / 2) * 0.02
        f = [pair[0] for pair in counts]
        s = [pair[1] + nudge for pair in counts]
        sizes = [18 + 14 * n for n in counts.values()]
        axes.scatter(s, f, s=sizes, alpha=0.75, marker=markers[index % len(markers)],
                     label=f"{_short(group[0])} ({_short(group[1])})")
    axes.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle=":")
    axes.set_xlabel("S: semantic progress")
    axes.set_ylabel("F: targeted checks passed")
    axes.set_xlim(-0.05, 1.05)
    axes.set_ylim(-0.05, 1.05)
    axes.set_title("partial-credit anatomy (marker area: episodes)")
    axes.legend(fontsize=8, loc="upper left")
    return _save(figure, out, "partial_credit")
