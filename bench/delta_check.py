#!/usr/bin/env python3
"""Helpers of bench/cluster-delta.sh (a data update through the netns cluster).

  delta_check.py samples DATASET COUNT SEED OUT      numbers to look up: unchanged ones and ones the 0.1% deltas
                                                     remove, change and add; writes OUT (numbers) and OUT.json
                                                     (each number's expected answers before and after)
  delta_check.py check EXPECTED.json PHASE FILE...   checks `callveil query` outputs: phase before (old answers),
                                                     during (each use case's old or new answer), after (new);
                                                     prints counts, exits 1 on any wrong answer
  delta_check.py changed OLD_DIR NEW_DIR             bytes of the plaintexts (slots) that differ between two
                                                     versions' shard files, and the changed shard files' size
"""
import json, random, re, struct, sys


def name_of(value_hex):
    """The name (field 1) of a CallIdentity given in hex, or None."""
    data, i = bytes.fromhex(value_hex), 0
    while i < len(data):
        key, shift = 0, 0
        while True:
            b = data[i]; i += 1; key |= (b & 0x7F) << shift; shift += 7
            if b < 0x80: break
        field, wire = key >> 3, key & 7
        if wire == 0:
            while data[i] >= 0x80: i += 1
            i += 1
        elif wire == 2:
            length, shift = 0, 0
            while True:
                b = data[i]; i += 1; length |= (b & 0x7F) << shift; shift += 7
                if b < 0x80: break
            if field == 1: return data[i:i + length].decode()
            i += length
        else:
            return None
    return None


def answer(block_hex, identity_hex):
    block = "not listed" if block_hex is None else "value " + ",".join(str(b) for b in bytes.fromhex(block_hex))
    identity = "none" if identity_hex is None else f'name "{name_of(identity_hex)}"'
    return [block, identity]


def samples(dataset, count, seed, out):
    rng = random.Random(seed)
    deltas = {}
    for name in ("block", "identity"):
        for line in open(f"{dataset}/{name}-delta-0.1pct.csv").read().splitlines()[1:]:
            op, keyword, *value = line.split(",")
            deltas.setdefault(name, {})[keyword] = (op, value[0] if value else None)
    touched = sorted(set(deltas["block"]) | set(deltas["identity"]))
    picked = set(rng.sample(touched, count))
    # Unchanged numbers: every 997th line of the block list that no delta touches.
    with open(f"{dataset}/kw/block.csv") as f:
        next(f)
        for i, line in enumerate(f):
            keyword = line.split(",", 1)[0]
            if i % 997 == 0 and keyword not in deltas["block"] and keyword not in deltas["identity"]:
                picked.add(keyword)
            if len(picked) >= 2 * count: break
    old = {"block": {}, "identity": {}}
    for name in old:
        with open(f"{dataset}/kw/{name}.csv") as f:
            next(f)
            for line in f:
                keyword, value = line.rstrip("\n").split(",")
                if keyword in picked: old[name][keyword] = value
    expected = {}
    for number in sorted(picked):
        new = {}
        for name in ("block", "identity"):
            op, value = deltas[name].get(number, ("keep", None))
            new[name] = old[name].get(number) if op == "keep" else (None if op == "remove" else value)
        expected[number] = {"old": answer(old["block"].get(number), old["identity"].get(number)),
                            "new": answer(new["block"], new["identity"])}
    changed = sum(1 for e in expected.values() if e["old"] != e["new"])
    json.dump(expected, open(out + ".json", "w"), indent=1)
    open(out, "w").write("\n".join(expected) + "\n")
    print(f"{len(expected)} numbers to look up, {changed} of them changed by the update")


def parse(path):
    """{number: [block, identity]} from one `callveil query` output."""
    answers, number = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("+"):
            number = line; answers[number] = [None, None]
        elif line.startswith("  block: "):
            m = re.search(r"\(value ([0-9,]*)\)", line)
            answers[number][0] = "not listed" if line.endswith("not listed") else f"value {m.group(1)}"
        elif line.startswith("  identity: "):
            m = re.match(r'  identity: (name "[^"]*")', line)
            answers[number][1] = m.group(1) if m else line[len("  identity: "):]
    return answers


def check(expected_path, phase, files):
    expected = json.load(open(expected_path))
    counts = {"old": 0, "new": 0, "wrong": 0, "missing": 0}
    for path in files:
        answers = parse(path)
        for number, e in expected.items():
            got = answers.get(number)
            if got is None: counts["missing"] += 1; continue
            allowed = {"before": ["old"], "during": ["old", "new"], "after": ["new"]}[phase]
            # Each use case is updated on its own: during the update each answer is its use case's old or new one.
            if all(any(got[u] == e[k][u] for k in allowed) for u in (0, 1)):
                counts["new" if any(got[u] == e["new"][u] != e["old"][u] for u in (0, 1)) else "old"] += 1
            else:
                counts["wrong"] += 1
                print(f"  WRONG ({phase}) {number}: got {got}, old {e['old']}, new {e['new']}", file=sys.stderr)
    print(f"{phase}: {len(files)} runs, answers old {counts['old']}, new {counts['new']}, wrong {counts['wrong']}, missing {counts['missing']}")
    sys.exit(1 if counts["wrong"] or counts["missing"] else 0)


def slots(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"CVSHARD1" and struct.unpack_from("<I", data, 8)[0] == 2, path
    header, params, tables, count, slot_bytes = struct.unpack_from("<IIIII", data, 12)
    presence = data[header + params:header + params + tables * count]
    start = -(-(header + params + tables * count) // 4096) * 4096
    return presence, data, start, slot_bytes, len(data)


def changed(old_dir, new_dir):
    old, new = (json.load(open(f"{d}/shard.manifest.json")) for d in (old_dir, new_dir))
    plaintexts = total = files = 0
    for o, n in zip(old["shards"], new["shards"]):
        if o["shard"]["sha256"] == n["shard"]["sha256"]: continue
        p0, d0, s0, b0, _ = slots(f"{old_dir}/{o['shard']['path']}")
        p1, d1, s1, b1, size = slots(f"{new_dir}/{n['shard']['path']}")
        assert (len(p0), s0, b0) == (len(p1), s1, b1), "the layout changed: not an update in place"
        for i in range(len(p1)):
            if p0[i] != p1[i] or d0[s0 + i * b0:s0 + (i + 1) * b0] != d1[s1 + i * b1:s1 + (i + 1) * b1]:
                plaintexts += 1
        total += size; files += 1
        slot_bytes = b1
    print(json.dumps({"shards": files, "plaintexts": plaintexts, "plaintext_bytes": plaintexts * slot_bytes, "shard_file_bytes": total}))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "samples": samples(args[0], int(args[1]), int(args[2]), args[3])
    elif command == "check": check(args[0], args[1], args[2:])
    elif command == "changed": changed(args[0], args[1])
    else: sys.exit(__doc__)
