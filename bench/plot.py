#!/usr/bin/env python3
"""Plots of a `callveil-bench bench` run: latency vs load, throughput vs workers, throughput vs lookups in flight."""
import json
import subprocess
import sys

try:
    import matplotlib
except ImportError:  # the harness installs what it needs
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"], check=True)
    import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round((len(s) - 1) * p))]


def rate(run):
    return run["result"]["lookups"] / max(run["result"]["seconds"], 1e-9)


def main(results_path, out):
    report = json.load(open(results_path))
    runs = report["runs"]
    title = f'{report["rows"]} numbers, {report["cores"]} cores'
    saved = []

    open_runs = [r for r in runs if "open" in r["mode"]]
    if open_runs:
        open_runs.sort(key=lambda r: r["mode"]["open"]["rate"])
        x = [r["mode"]["open"]["rate"] for r in open_runs]
        plt.figure(figsize=(6, 4))
        for p, style in ((0.5, "o-"), (0.9, "s--"), (0.99, "^:")):
            plt.plot(x, [pct(r["result"]["lookupLatencies"], p) * 1000 for r in open_runs], style, label=f"p{int(p * 100)}")
        plt.ylim(bottom=0)
        plt.xlabel("offered load (lookups/s, open loop)")
        plt.ylabel("lookup latency (ms, block + identity)")
        plt.title("Latency vs load — " + title)
        plt.grid(True, alpha=0.3)
        plt.legend()
        plt.tight_layout()
        plt.savefig(f"{out}/latency-vs-load.png", dpi=120)
        saved.append("latency-vs-load.png")

    worker_runs = [r for r in runs if r["label"].startswith("workers=")]
    if worker_runs:
        plt.figure(figsize=(6, 4))
        plt.bar([str(r["workers"]) for r in worker_runs], [rate(r) for r in worker_runs])
        plt.ylim(bottom=0)
        plt.xlabel("workers (embedded, same host)")
        plt.ylabel("lookups/s (closed loop, 4 phones)")
        plt.title("Throughput vs workers — " + title)
        plt.tight_layout()
        plt.savefig(f"{out}/throughput-vs-workers.png", dpi=120)
        saved.append("throughput-vs-workers.png")

    phone_runs = [r for r in runs if r["label"].startswith("phones=")]
    if phone_runs:
        plt.figure(figsize=(6, 4))
        plt.plot([r["phones"] for r in phone_runs], [rate(r) for r in phone_runs], "o-")
        plt.ylim(bottom=0)
        plt.xlabel("lookups in flight (batch size: phones, closed loop)")
        plt.ylabel("lookups/s")
        plt.title("Throughput vs batch size — " + title)
        plt.grid(True, alpha=0.3)
        plt.tight_layout()
        plt.savefig(f"{out}/throughput-vs-batch.png", dpi=120)
        saved.append("throughput-vs-batch.png")
    print("plots:", ", ".join(saved) if saved else "none (no sweep runs)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
