#!/usr/bin/env python3
"""The one-way map of each program's folders, checked over #include lines (HACKING.md draws
the same map).  A file may include headers of its own folder and of the folders below it in
its program's list, plus include/; never a folder above it, never another program's files.
The folder graph this reads has no cycle by construction: a cycle needs an upward include.
Exits 1 after one line per wrong include; prints the map it checked otherwise."""
import os
import re
import sys

# Lowest first.  The root of a program (main.c, usage.h, shim.h) sits above every folder.
LAYERS = {
    "analyzer": ["base", "heap", "read", "symbols", "analyze", "export", "report", "live"],
    "shim": ["base", "walk", "record", "ways", "process"],
}
# shim.h is the shim's one shared interface: every shim file includes it (the lifecycle and
# the recorder call each other: start-up, the exit flush), so the rule applies to the
# folders' own headers.  shim.h itself may use the walk's CFI cache, which churn_thread holds.
SHARED = {"shim": {"shim.h": "walk"}}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def level(prog, path):
    """The layer index of a path relative to the program root; the root is above all."""
    parts = path.split("/")
    if len(parts) == 1:
        return len(LAYERS[prog])
    return LAYERS[prog].index(parts[0]) if parts[0] in LAYERS[prog] else None


def check(root):
    bad = []
    for prog, layers in LAYERS.items():
        top = os.path.join(root, prog)
        for d, _, files in os.walk(top):
            rel_dir = os.path.relpath(d, top)
            if rel_dir != "." and rel_dir.split("/")[0] not in layers:
                bad.append(f"{prog}/{rel_dir}: a folder the map in test/tools/layers.py lacks")
                continue
            if rel_dir.count("/") > 0:
                bad.append(f"{prog}/{rel_dir}: folders are one level deep")
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                rel = os.path.normpath(os.path.join(rel_dir, f))
                here = level(prog, rel)
                if rel in SHARED.get(prog, {}):
                    here = layers.index(SHARED[prog][rel])
                text = open(os.path.join(d, f), encoding="utf-8").read()
                for inc in INCLUDE.findall(text):
                    if inc.startswith("churn/") or inc == "churn.h":
                        continue
                    if inc in SHARED.get(prog, {}):
                        continue
                    if not os.path.exists(os.path.join(top, inc)):
                        bad.append(f"{prog}/{rel}: includes \"{inc}\", not a path from "
                                   f"{prog}/ (include by folder/file)")
                        continue
                    there = level(prog, inc)
                    if there > here:
                        bad.append(f"{prog}/{rel}: includes {inc}, a layer above its own "
                                   f"({' < '.join(layers)})")
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = check(root)
    for b in bad:
        print(b)
    if bad:
        return 1
    for prog, layers in LAYERS.items():
        print(f"{prog}: {' < '.join(layers)} < root")
    return 0


if __name__ == "__main__":
    sys.exit(main())
