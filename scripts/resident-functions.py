"""Lists the functions of a running process's executable that lie on its resident pages of code, in address order.

scripts/link-order.sh reads them twice (once loaded, once it has answered) to make the release link order.
Usage: resident-functions.py PID BINARY OUT (one symbol per line; prints a summary)
"""
import struct
import subprocess
import sys

pid, binary, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
base, maps = None, []
for line in open(f"/proc/{pid}/maps"):
    fields = line.split()
    if len(fields) > 5 and fields[5] == binary:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if int(fields[2], 16) == 0:
            base = start
        maps.append((start, end))
if base is None:
    sys.exit(f"resident-functions: {binary} is not mapped by process {pid}")
resident = set()
with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
    for start, end in maps:
        pagemap.seek(start // 4096 * 8)
        entries = pagemap.read((end - start) // 4096 * 8)
        for i in range((end - start) // 4096):
            if struct.unpack_from("<Q", entries, i * 8)[0] >> 63:
                resident.add((start - base) // 4096 + i)
functions, seen, size = [], set(), 0
nm = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
for line in nm.splitlines():
    fields = line.split()
    if len(fields) != 4 or fields[2] not in "tTwW":
        continue
    address, length = int(fields[0], 16), int(fields[1], 16)
    if length and any(p in resident for p in range(address // 4096, (address + length - 1) // 4096 + 1)):
        functions.append((address, fields[3]))
        size += length
with open(out, "w") as listing:
    for _, name in sorted(functions):
        if name not in seen:
            seen.add(name)
            listing.write(f"{name}\n")
print(f"resident-functions: {len(seen)} functions, {size / 2**20:.1f} MiB of code on the "
      f"{len(resident) * 4 // 1024} MiB resident")
