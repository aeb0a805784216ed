"""Lists the functions that have a text section of their own in a link's inputs (objects and static archives).

The release link can place only those: a function compiled into an object's shared `.text` (parts of the Swift
runtime's archives are) stays where that section goes. scripts/link-order.sh leaves such functions out of the order,
so scripts/check-link-order.py's span holds only functions the linker could place.
Usage: function-sections.py OUT PATH... (a folder stands for the objects and archives under it; writes one function
name per line to OUT and prints a summary)
"""
import pathlib
import re
import subprocess
import sys

out, files = sys.argv[1], []
for path in map(pathlib.Path, sys.argv[2:]):
    files += sorted(str(o) for o in path.rglob("*") if o.suffix in (".o", ".a")) if path.is_dir() else [str(path)]
section = re.compile(r"^\s*\[\s*\d+\]\s+\.text\.(\S+)\s+PROGBITS\b")
names = set()
for start in range(0, len(files), 200):
    listing = subprocess.run(["readelf", "-SW", *files[start:start + 200]], capture_output=True, text=True,
                             check=True).stdout
    for line in listing.splitlines():
        match = section.match(line)
        if match:
            names.add(match.group(1))
with open(out, "w") as listing:
    for name in sorted(names):
        listing.write(f"{name}\n")
print(f"function-sections: {len(names)} functions with a section of their own in {len(files)} files")
