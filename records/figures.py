"""The report's figures (matplotlib, Agg), each written as PNG and SVG without timestamps."""
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


def _save(figure, out: Path, name: str) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(out / f"{name}.png", dpi=110, metadata=PNG_METADATA)
    figure.savefig(out / f"{name}.svg", metadata=SVG_METADATA)
    plt.close(figure)
    return [f"{name}.png", f"{name}.svg"]


def _short(text: str, limit: int = 32) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _label(model: str, agent: str) -> str:
    return f"{_short(model)}\n({_short(agent)})"


def heatmap(rates: list[dict], by: str, out: Path, name: str) -> list[str]:
    """Strict repair rate: models down, families or fault kinds across, the rate in each cell."""
    if not rates:
        return []
    rows = sorted({(r["model"], r["agent"]) for r in rates})
    columns = sorted({r[by] for r in rates})
    grid = np.full((len(rows), len(columns)), np.nan)
    counts = {}
    for r in rates:
        i, j = rows.index((r["model"], r["agent"])), columns.index(r[by])
        grid[i, j] = r["rate"]
        counts[i, j] = f"{r['passed']}/{r['checks']}"
    figure, axes = plt.subplots(figsize=(1.3 * len(columns) + 2.5, 0.6 * len(rows) + 1.8))
    image = axes.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_xticks(range(len(columns)), [_short(c) for c in columns], rotation=35, ha="right")
    axes.set_yticks(range(len(rows)), [_label(*r) for r in rows])
    for (i, j), text in counts.items():
        axes.text(j, i, f"{grid[i, j]:.2f}\n{text}", ha="center", va="center", fontsize=8,
                  color="white" if grid[i, j] < 0.6 else "black")
    axes.set_title(f"strict repair rate by {by.replace('_', ' ')}")
    figure.colorbar(image, ax=axes, fraction=0.046)
    return _save(figure, out, name)


def reward_distribution(rewards: dict[tuple, list[float]], out: Path) -> list[str]:
    """authored_usd of every counted episode per model: box plot with the points over it."""
    if not rewards:
        return []
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


def partial_credit(points: dict[tuple, list[tuple[float, float]]], out: Path) -> list[str]:
    """F (strict fraction) against S (semantic progress) per episode, one colour per model."""
    if not points:
        return []
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
    axes.legend(fontsize=7, loc="upper left")
    return _save(figure, out, "partial_credit")
