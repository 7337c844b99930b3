#!/usr/bin/env python3
"""Turns the benchmarks' CSV files into SVG plots.

    bench/plot.py [--data DIR] [--out DIR]

DIR defaults: docs/plots/data (committed CSV, each led by '# key: value'
lines naming the machine, date, commit and command) and docs/plots. Every
plot puts native MPI, mpix, NCCL and NVSHMEM on one chart where the run
measured them, log axes, machine and date in the title. A plot whose data
file is missing is left out (and said so); a file that does not parse is an
error (exit status 1). Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import glob
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
EXT = "svg"  # --format
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import FuncFormatter  # noqa: E402


def read(path):
    """(metadata, rows) of a CSV whose leading '# key: value' lines are metadata."""
    meta, lines = {}, []
    with open(path, newline="") as f:
        for line in f:
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                meta[key.strip()] = value.strip()
            elif line.strip():
                lines.append(line)
    rows = list(csv.DictReader(lines))
    if not rows:
        raise ValueError(f"{path}: no rows")
    return meta, rows


def num(row, key):
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return None


def bytes_label(x, _pos=None):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if x >= size:
            v = x / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:g} {unit}"
    return f"{x:.0f} B"


def finish(ax, meta, title, xlabel, ylabel, path, xbytes=True):
    ax.set_xscale("log", base=2 if xbytes else 10)
    ax.set_yscale("log")
    if xbytes:
        ax.xaxis.set_major_formatter(FuncFormatter(bytes_label))
        for label in ax.get_xticklabels():
            label.set_rotation(45)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    where = textwrap.shorten(f"{meta.get('machine', '?')}, {meta.get('date', '?')}", width=90)
    ax.set_title(f"{title}\n{where}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig = ax.get_figure()
    fig.tight_layout()
    fmt = os.path.splitext(path)[1][1:]
    fig.savefig(path, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(fig)
    print(f"wrote {path}")


def series(ax, rows, xkey, ykey, label, style, scale=1.0, where=None):
    pts = []
    for r in rows:
        if where and any(r.get(k) != v for k, v in where.items()):
            continue
        x, y = num(r, xkey), num(r, ykey)
        if x is not None and y is not None and x > 0 and y > 0:
            pts.append((x, y * scale))
    if not pts:
        return False
    pts.sort()
    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label, markersize=4)
    return True


def latest(data, prefix):
    files = sorted(glob.glob(os.path.join(data, prefix + "*.csv")))
    return files[-1] if files else None


def host_plots(data, out):
    made = []
    path = latest(data, "host_pingpong_")
    if path:
        meta, rows = read(path)
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        series(ax, rows, "size_B", "lat_us_median_native", "native MPICH", "o-")
        series(ax, rows, "size_B", "lat_us_median_mpix", "mpix (no-wildcard communicator)", "s-")
        finish(ax, meta, "Host ping-pong latency, 2 ranks", "message size", "half round trip (us)",
               os.path.join(out, "host_latency." + EXT))
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        series(ax, rows, "size_B", "bw_MBps_median_native", "native MPICH", "o-", 1e-3)
        series(ax, rows, "size_B", "bw_MBps_median_mpix", "mpix (no-wildcard communicator)", "s-", 1e-3)
        finish(ax, meta, "Host streaming bandwidth (window of messages), 2 ranks", "message size", "GB/s",
               os.path.join(out, "host_bandwidth." + EXT))
        made += ["host_latency", "host_bandwidth"]
    path = latest(data, "host_matching_")
    if path:
        meta, rows = read(path)
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for queue, marker in (("posted", "o"), ("unexpected", "s")):
            for label, who, line in (("native MPICH", "native", "--"), ("mpix", "mpix", "-")):
                series(ax, rows, "N", f"matches_per_s_{who}", f"{label}, {queue} queue", marker + line, 1e-6,
                       {"order": "worst", "queue": queue})
        finish(ax, meta, "Matching rate against queue depth (worst order), 2 ranks", "messages queued (N)",
               "million matches/s", os.path.join(out, "matching_rate." + EXT), xbytes=False)
        made.append("matching_rate")
    return made


def gpu_plots(data, out):
    made = []
    path = latest(data, "gpu_p2p_")
    if not path:
        return made
    meta, rows = read(path)
    stream = latest(data, "gpu_stream_")
    dev = latest(data, "gpu_dev_")
    fig, ax = plt.subplots(figsize=(7.2, 4.8))
    series(ax, rows, "bytes", "half_rtt_us", "mpix MPI_Send/Recv of device buffers", "s-", where={"mode": "mpix"})
    series(ax, rows, "bytes", "half_rtt_us", "native MPICH, copied by hand", "o--", where={"mode": "staged"})
    series(ax, rows, "bytes", "half_rtt_us", "NCCL send/recv, synchronised per message", "^:",
           where={"mode": "nccl"})
    if stream:
        _, srows = read(stream)
        series(ax, srows, "bytes", "usec", "mpix MPIX_Send_enqueue (stream, queued)", "d-",
               where={"method": "enqueue_queued"})
        series(ax, srows, "bytes", "usec", "NCCL send/recv on a stream (queued)", "v:", where={"method": "nccl_queued"})
    if dev:
        _, drows = read(dev)
        series(ax, drows, "bytes", "value", "mpix MPIX_Send from a kernel", "P-",
               where={"test": "latency", "path": "ipc"})
        series(ax, drows, "bytes", "value", "NVSHMEM put+signal from a kernel", "X:",
               where={"test": "putsig", "path": "nvshmem"})
    finish(ax, meta, "GPU-to-GPU latency, 2 GPUs (one rank each)", "message size", "half round trip (us)",
           os.path.join(out, "gpu_latency." + EXT))
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    series(ax, rows, "bytes", "bandwidth_GBps", "mpix MPI_Send/Recv of device buffers", "s-", where={"mode": "mpix"})
    series(ax, rows, "bytes", "bandwidth_GBps", "native MPICH, copied by hand", "o--", where={"mode": "staged"})
    series(ax, rows, "bytes", "bandwidth_GBps", "NCCL send/recv, synchronised per message", "^:",
           where={"mode": "nccl"})
    finish(ax, meta, "GPU-to-GPU ping-pong bandwidth, 2 GPUs", "message size", "GB/s",
           os.path.join(out, "gpu_bandwidth." + EXT))
    made += ["gpu_latency", "gpu_bandwidth"]
    return made


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(top, "docs", "plots", "data"))
    ap.add_argument("--out", default=os.path.join(top, "docs", "plots"))
    ap.add_argument("--format", default="svg", choices=("svg", "png"), help="png: for a quick look")
    args = ap.parse_args()
    global EXT
    EXT = args.format
    os.makedirs(args.out, exist_ok=True)
    # One look for every chart; fixed fonts so that the SVGs differ only
    # where the data do.
    plt.rcParams.update({"svg.hashsalt": "mpix", "svg.fonttype": "none", "font.size": 9})
    try:
        made = host_plots(args.data, args.out) + gpu_plots(args.data, args.out)
    except (OSError, ValueError, KeyError) as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    if not made:
        print(f"plot.py: no benchmark CSV in {args.data}", file=sys.stderr)
        return 1
    print(f"{len(made)} plots in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
