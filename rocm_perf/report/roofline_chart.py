"""The roofline chart of an analysis (analysis.json's content), drawn by matplotlib (Agg, no display)
as SVG and PNG.

One panel per GPU of the profile: the memory roofs (HBM, L2, vL1D, LDS: bytes/s x intensity) and
the compute ceilings of the data types in play, each kernel a point at its HBM arithmetic intensity
and achieved FLOP/s, its area proportional to its share of the profile's kernel time. A kernel that
does no floating-point work has no intensity to place it at; it is drawn as a dashed line at the
bandwidth it reached, below the HBM roof, and named in the legend.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, whatever DISPLAY says

import matplotlib.pyplot as plt  # noqa: E402

from rocm_perf.trace.names import short_name  # noqa: E402

LEVEL_STYLE = {"hbm": ("HBM", "#1f4e79"), "l2": ("L2", "#2e75b6"), "vl1d": ("vL1D", "#9dc3e6"), "lds": ("LDS", "#70ad47")}
# Compute ceilings always drawn; others only when a kernel uses that data type.
ALWAYS = ("valu_f32", "valu_f64", "mfma_f16")
CEILING_GREYS = ("#333333", "#666666", "#999999")
CEILING_STYLES = ("-", "--", ":", "-.")
# Kernels in warm colours, apart from the roofs' blues and green.
KERNEL_COLORS = ("#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f")
X_RANGE = (1e-2, 1e4)


def _ceilings(kernels: list[dict], peaks: dict) -> list[str]:
    used = {d for k in kernels for d, v in k["flops"].items() if v and d != "total" and "int" not in d and "i8" not in d}
    keys = [d for d in peaks if d not in LEVEL_STYLE and "int" not in d and "i8" not in d and (d in ALWAYS or d in used)]
    return sorted(keys, key=lambda d: -peaks[d]["value"])


def roofline_figure(analysis: dict, title: str = ""):
    """The matplotlib Figure of an analysis.json object (one panel per device)."""
    devices = analysis["devices"]
    runtime = analysis.get("runtime_ns") or 0
    matplotlib.rcParams["svg.hashsalt"] = "rocm-perf"  # stable ids: the same analysis gives the same file
    fig, axes = plt.subplots(1, max(1, len(devices)), figsize=(7.5 * max(1, len(devices)), 5.2), squeeze=False)
    for ax, device in zip(axes[0], devices):
        names = set(device.get("kernels", []))
        kernels = [k for k in analysis["kernels"] if k["name"] in names]
        peaks = device["peaks"]
        x0, x1 = X_RANGE
        compute = _ceilings(kernels, peaks)
        top_flops = max([peaks[d]["value"] for d in compute] or [1e12])
        for level, (label, color) in LEVEL_STYLE.items():
            if level not in peaks:
                continue
            bw = peaks[level]["value"]
            end = min(top_flops / bw, x1)
            ax.plot([x0, end], [bw * x0, bw * end], color=color, lw=1.8, label=f"{label} {bw / 1e9:,.0f} GB/s")
        for i, dtype in enumerate(compute):
            value = peaks[dtype]["value"]
            start = max(value / peaks["hbm"]["value"], x0) if "hbm" in peaks else x0
            ax.plot([start, x1], [value, value], color=CEILING_GREYS[i % len(CEILING_GREYS)], lw=1.0,
                    ls=CEILING_STYLES[i % len(CEILING_STYLES)], label=f"{dtype} {value / 1e12:,.1f} TFLOP/s")
        for i, k in enumerate(kernels):
            color = KERNEL_COLORS[i % len(KERNEL_COLORS)]
            share = k["duration_ns"] / runtime if runtime else 0.0
            label = f"{short_name(k['name'], 40)} ({share * 100:.1f} %)"
            total = k["achieved"]["flops_per_s"].get("total")
            ai = k["intensity"].get("hbm")
            bw = k["achieved"]["bytes_per_s"].get("hbm")
            if total and ai and total > 0 and ai > 0:
                ax.scatter([ai], [total], s=30 + 600 * share, color=color, alpha=0.8, edgecolor="black", lw=0.5,
                           label=label, zorder=3)
            elif bw:
                end = min(x1, top_flops / bw)  # up to the highest ceiling, like the roofs
                ax.plot([x0, end], [bw * x0, bw * end], color=color, lw=1.4, ls="--",
                        label=f"{label}: no FLOPs, HBM {bw / 1e9:,.0f} GB/s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(x0, x1)
        floor = min([peaks[level]["value"] * x0 for level in LEVEL_STYLE if level in peaks] or [1e9]) / 10
        ax.set_ylim(floor, top_flops * 3)
        ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
        ax.set_ylabel("FLOP/s")
        ax.grid(True, which="major", lw=0.3, color="#ccc")
        ax.set_title(f"{device.get('product') or device['arch']} ({device['arch']}, {device['cu_count']} CUs, "
                     f"{device['sclk_mhz']:g} MHz)", fontsize=10)
        ax.legend(fontsize=7, loc="upper left", framealpha=0.9)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def write_roofline_chart(analysis: dict, out_dir: Path, stem: str = "roofline", title: str = "") -> list[Path]:
    """roofline.svg and roofline.png of an analysis.json object in `out_dir`; the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig = roofline_figure(analysis, title)
    paths = [out_dir / f"{stem}.svg", out_dir / f"{stem}.png"]
    try:
        fig.savefig(paths[0], format="svg", metadata={"Date": None})
        fig.savefig(paths[1], format="png", dpi=110, metadata={"Software": None})
    finally:
        plt.close(fig)
    return paths
