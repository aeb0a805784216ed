#!/usr/bin/env python3
"""Side-by-side timing of PIR servers in one run, interleaved.

Each contestant is a command that loads one shard, prints `ready key=value ...`, then answers lines
`run <threads> <queries>` with `result threads=T n=Q checked=Q median_ms=... min_ms=... max_ms=...` (computing,
decrypting and checking `queries` fresh queries) and exits on end of input. `bench/PIRBench --interleave` speaks it;
so can a harness around another implementation built outside this repository.

All contestants are started first, one after another, so their processing does not overlap. Then, for every round
and thread count, each contestant answers a block of queries in turn (the order rotates every round) while the
others wait on their input: the same minutes of the same machine for all, so drifting load hits every contestant
alike. The table gives each contestant's median over all rounds (the median of the per-round medians) and its ratio
to the first contestant.

    bench/interleave.py --rounds 5 --queries 5 --threads 1,2 \
        callveil='.build-release/release/PIRBench --interleave --rows-in /tmp/rows.bin' \
        other:1='/path/to/other-harness --rows-in /tmp/rows.bin'

`NAME:1,2=COMMAND` limits a contestant to the listed thread counts.
"""
import argparse
import shlex
import statistics
import subprocess
import sys
import time


def parse_fields(line):
    fields = {}
    for word in line.split()[1:]:
        if "=" in word:
            key, value = word.split("=", 1)
            fields[key] = value
    return fields


class Contestant:
    def __init__(self, spec, default_threads):
        head, command = spec.split("=", 1)
        name, _, threads = head.partition(":")
        self.name = name
        self.threads = [int(t) for t in threads.split(",")] if threads else default_threads
        self.command = command
        self.process = None
        self.ready = {}
        self.results = {}  # threads -> list of per-round result dicts

    def start(self):
        self.process = subprocess.Popen(shlex.split(self.command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1)
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit(f"{self.name}: exited before it was ready (code {self.process.wait()})")
            if line.startswith("ready"):
                self.ready = parse_fields(line)
                return
            print(f"  [{self.name}] {line.rstrip()}", file=sys.stderr)

    def run(self, threads, queries):
        self.process.stdin.write(f"run {threads} {queries}\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit(f"{self.name}: exited during a run (code {self.process.wait()}): a wrong answer?")
            if line.startswith("result"):
                result = parse_fields(line)
                if int(result.get("checked", -1)) != queries:
                    raise SystemExit(f"{self.name}: checked {result.get('checked')} of {queries} answers")
                self.results.setdefault(threads, []).append(result)
                return result
            print(f"  [{self.name}] {line.rstrip()}", file=sys.stderr)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=5, help="queries per contestant per round")
    parser.add_argument("--threads", default="1", help="thread counts, e.g. 1,2")
    parser.add_argument("--label", default="", help="shard label for the table")
    parser.add_argument("contestants", nargs="+", help="NAME[:THREADS]=COMMAND")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    contestants = [Contestant(spec, threads) for spec in args.contestants]
    try:
        for c in contestants:
            started = time.time()
            c.start()
            print(f"{c.name}: ready in {time.time() - started:.1f} s: {c.ready}", file=sys.stderr)
        dims = {c.ready.get("dims") for c in contestants}
        if len(dims) != 1:
            raise SystemExit(f"contestants disagree on the dimensions: {[(c.name, c.ready.get('dims')) for c in contestants]}")
        for r in range(args.rounds):
            for t in threads:
                order = contestants[r % len(contestants):] + contestants[:r % len(contestants)]
                for c in order:
                    if t in c.threads:
                        res = c.run(t, args.queries)
                        print(f"round {r + 1} threads {t} {c.name}: median {res['median_ms']} ms", file=sys.stderr)
    finally:
        for c in contestants:
            c.stop()
    base = contestants[0]
    print(f"| shard | dimensions | threads | {' | '.join(c.name + ' ms' for c in contestants)} | "
          + " | ".join(f"{c.name} / {base.name}" for c in contestants[1:]) + " |")
    print("|---|---|---:|" + "---:|" * (2 * len(contestants) - 1))
    for t in threads:
        medians = {}
        cells = []
        for c in contestants:
            rounds = c.results.get(t)
            if not rounds:
                cells.append("–")
                continue
            per_round = [float(x["median_ms"]) for x in rounds]
            medians[c.name] = statistics.median(per_round)
            cells.append(f"{medians[c.name]:.1f} ({min(per_round):.1f}–{max(per_round):.1f})")
        ratios = [f"{medians[c.name] / medians[base.name]:.2f}×" if c.name in medians and base.name in medians else "–"
                  for c in contestants[1:]]
        print(f"| {args.label} | {base.ready.get('dims')} | {t} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    checked = sum(int(x["checked"]) for c in contestants for rs in c.results.values() for x in rs)
    print(f"\n{checked} answers decrypted and checked, 0 wrong; "
          f"{args.rounds} rounds × {args.queries} queries per contestant and thread count; "
          + "; ".join(f"{c.name} key {c.ready.get('keybytes')} B" for c in contestants))


if __name__ == "__main__":
    main()
