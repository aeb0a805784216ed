#!/usr/bin/env python3
"""Checks the source layout against Package.swift: every `import` of a package module is a declared dependency
(so no module imports one above it; SwiftPM refuses cycles among the declared ones) and every declared dependency
is imported (no module carries dependencies it does not use), the worker role's module
links neither Hummingbird, GRDB, PostgresNIO nor the HTTP service, no hand-written Swift file has more than
400 lines and no folder more than 15 Swift files. Prints the module ladder (each module with its level: one
above the highest it depends on). Run from the repository root; exits 1 on a violation."""
import os
import re
import sys

MAX_LINES = 400
MAX_FILES = 15
WORKER_MODULE = "LookupWorker"
WORKER_FORBIDDEN = {"Hummingbird", "HummingbirdCore", "HummingbirdHTTP2", "GRDB", "PostgresNIO", "LookupService",
                    "ServiceCore", "LookupStorage"}


def targets(package):
    """(name, kind, path, dependencies) of every target in Package.swift (products named by a `let` are read
    through it)."""
    named = dict(re.findall(r'^let\s+(\w+):\s*Target\.Dependency\s*=\s*\.product\(name:\s*"([^"]+)"', package, re.M))
    out = []
    for match in re.finditer(r'\.(target|executableTarget|testTarget|systemLibrary)\(', package):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(package)):
            depth += {"(": 1, ")": -1}.get(package[end], 0)
            if depth == 0:
                break
        body = package[match.end():end]
        kind = match.group(1)
        name = re.match(r'\s*name:\s*"([^"]+)"', body).group(1)
        deps = []
        dep_block = re.search(r'dependencies:\s*\[(.*?)\]\s*(,|$)', body, re.S)
        if dep_block:
            text = dep_block.group(1)
            deps += re.findall(r'\.product\(name:\s*"([^"]+)"', text)
            rest = re.sub(r'\.product\([^)]*\)', '', text)
            deps += re.findall(r'"([^"]+)"', rest)
            deps += [named[w] for w in re.findall(r'\b([a-zA-Z]\w*)\b', re.sub(r'"[^"]*"', '', rest)) if w in named]
        path = re.search(r'path:\s*"([^"]+)"', body)
        default = {"testTarget": "Tests"}.get(kind, "Sources")
        out.append((name, kind, path.group(1) if path else f"{default}/{name}", deps))
    return out


def doc_paths(doc):
    """Every source path an architecture walk names (`Module/Folder/File.swift`, `Folder/Type`, `File.member`)
    must exist, and a named member must be declared in that file: the walks stay true as code moves."""
    problems = []
    text = open(doc, encoding="utf-8").read()
    for token in sorted(set(re.findall(r'`([A-Z][A-Za-z0-9]*(?:/[A-Za-z0-9+_]+)+(?:\.[A-Za-z]+)?/?)`', text))):
        path, member = token.rstrip("/"), None
        m = re.match(r'(.*)\.([a-z]\w*)$', path)
        if m and m.group(2) != "swift":
            path, member = m.group(1), m.group(2)
        path = path[:-len(".swift")] if path.endswith(".swift") else path
        roots = ["Sources", "Tests", "."] + [os.path.join("Sources", d) for d in sorted(os.listdir("Sources"))]
        found = next((os.path.join(r, path) + ext for r in roots for ext in ("", ".swift")
                      if os.path.exists(os.path.join(r, path) + ext)), None)
        if found is None:
            problems.append(f"{doc}: `{token}` names no file or folder")
        elif member and not re.search(rf'\b(func|var|let|init|case)\s+{member}\b', open(found, encoding="utf-8").read()):
            problems.append(f"{doc}: `{token}`: {found} declares no {member}")
    return problems


def swift_files(path):
    for root, _, files in os.walk(path):
        for f in files:
            if f.endswith(".swift"):
                yield os.path.join(root, f)


def main():
    package = open("Package.swift").read()
    all_targets = targets(package)
    names = {t[0] for t in all_targets}
    deps = {t[0]: set(t[3]) for t in all_targets}
    # Modules a source may import only when declared: the package's targets and the products it depends on.
    known = names | {d for t in all_targets for d in t[3]}
    problems = []

    def closure(name, seen=None):
        seen = set() if seen is None else seen
        for d in deps.get(name, ()):
            if d not in seen:
                seen.add(d)
                closure(d, seen)
        return seen

    for name, kind, path, declared in all_targets:
        if kind == "systemLibrary":
            continue
        imported = set()
        for file in swift_files(path):
            lines = open(file, encoding="utf-8").read().split("\n")
            if not file.endswith(".pb.swift") and len(lines) > MAX_LINES:
                problems.append(f"{file}: {len(lines)} lines (at most {MAX_LINES})")
            for line in lines:
                m = re.match(r'(?:@\w+\s+)*import\s+(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?(\w+)', line)
                if not m:
                    continue
                imported.add(m.group(1))
                if m.group(1) in known and m.group(1) != name and m.group(1) not in declared:
                    problems.append(f"{file}: imports {m.group(1)}, which {name} does not depend on")
        for unused in sorted(set(declared) - imported):
            problems.append(f"{name} depends on {unused} but no file of it imports it")
    for root, dirs, files in os.walk("."):
        if any(part.startswith(".") for part in root.split(os.sep)[1:]) or "/fuzz" in root:
            continue
        count = sum(1 for f in files if f.endswith(".swift"))
        if count > MAX_FILES:
            problems.append(f"{root}: {count} Swift files in one folder (at most {MAX_FILES}; split by concern)")
    if WORKER_MODULE not in names:
        problems.append(f"no {WORKER_MODULE} target: the worker role has no module of its own")
    leaked = closure(WORKER_MODULE) & WORKER_FORBIDDEN
    if leaked:
        problems.append(f"{WORKER_MODULE} links {', '.join(sorted(leaked))}")

    problems += doc_paths("docs/architecture.md")

    level = {}

    def level_of(name):
        if name not in level:
            inner = [level_of(d) for d in deps.get(name, ()) if d in names]
            level[name] = 1 + max(inner, default=-1)
        return level[name]

    for name, kind, _, _ in sorted(all_targets, key=lambda t: (level_of(t[0]), t[0])):
        if kind in ("target", "executableTarget"):
            inner = sorted(d for d in deps[name] if d in names)
            print(f"{level_of(name):2}  {name:18} {', '.join(inner)}")
    for p in problems:
        print("layout:", p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"layout: {WORKER_MODULE} links none of {', '.join(sorted(WORKER_FORBIDDEN))}; every import declared, every dependency imported, every path the architecture walks name exists; "
          f"no file over {MAX_LINES} lines, no folder over {MAX_FILES} Swift files")


if __name__ == "__main__":
    main()
