#!/usr/bin/env python3
"""layering.py — checks the include structure of compiler/ against its stages.

    tests/lint/layering.py [ROOT]        (ROOT: the repository, default .)

Rules (docs/design/pipeline.md, "Layout"):
  1. Inside compiler/, a header of another folder is included by its path
     under compiler/ ("graph/ir.h"); a bare name ("ir.h") must be a header of
     the including file's own folder (or a generated one: parser.h).
  2. A folder's *_internal.h is included only from that folder.
  3. The printing backends (backend/llvm, backend/cuda) include only headers
     of their own folder, backend/backend.h and kernel/kir.h; and those two
     headers, followed through their own includes, reach no stage above the
     kernel IR (front, sema, graph, lower, passes, driver).
Prints one line per violation and exits 1 if there is any, else prints a
summary and exits 0.
"""
import os
import re
import sys

COMP = "compiler"
GENERATED = {"parser.h"}
PRINTERS = ("backend/llvm", "backend/cuda")
PRINTER_ALLOWED = {"backend/backend.h", "kernel/kir.h"}
ABOVE_KIR = ("front/", "sema/", "graph/", "lower/", "passes/", "driver/")
# Known crossings, each to be removed by the change that fixes it (an entry
# that no longer occurs is reported too, so the list only shrinks).
KNOWN = set()
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for d, _, files in os.walk(COMP):
        for f in sorted(files):
            if f.endswith((".c", ".h", ".def")):
                p = os.path.join(d, f)
                yield os.path.relpath(p, COMP).replace(os.sep, "/")


def includes(rel):
    with open(os.path.join(COMP, rel), encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def resolve(rel, inc):
    """The compiler/-relative path an include names, or None (outside compiler/)."""
    if "/" not in inc:
        return f"{os.path.dirname(rel)}/{inc}" if os.path.dirname(rel) else inc
    return inc if os.path.exists(os.path.join(COMP, inc)) else None


def check():
    """The violations under COMP, as messages."""
    bad, used = [], set()
    files = list(sources())
    for rel in files:
        folder = os.path.dirname(rel)
        for inc in includes(rel):
            if inc in GENERATED:
                continue
            target = resolve(rel, inc)
            if "/" not in inc and not os.path.exists(os.path.join(COMP, target)):
                bad.append(f"{rel}: includes \"{inc}\", which is not in its folder {folder}/ "
                           f"(name another folder's header by its path)")
                continue
            if target is None:
                continue  # kernels/, runtime headers: not a compiler stage
            tfolder = os.path.dirname(target)
            if os.path.basename(target).endswith("_internal.h") and tfolder != folder:
                if (rel, target) in KNOWN:
                    used.add((rel, target))
                    continue
                bad.append(f"{rel}: includes {target}, an internal header of {tfolder}/")
            if folder.startswith(PRINTERS) and tfolder != folder and target not in PRINTER_ALLOWED:
                bad.append(f"{rel}: a printing backend includes {target} "
                           f"(only {', '.join(sorted(PRINTER_ALLOWED))} and its own headers)")
    for rel, target in sorted(KNOWN - used):
        bad.append(f"{rel} no longer includes {target}: drop it from KNOWN")
    # What the printers see through backend.h and kir.h.
    seen, todo = set(), list(PRINTER_ALLOWED)
    while todo:
        h = todo.pop()
        if h in seen or not os.path.exists(os.path.join(COMP, h)):
            continue
        seen.add(h)
        for inc in includes(h):
            t = resolve(h, inc)
            if t:
                todo.append(t)
    for h in sorted(seen):
        if h.startswith(ABOVE_KIR):
            bad.append(f"backends see {h} through {', '.join(sorted(PRINTER_ALLOWED))}")
    return bad, files, seen


def self_test():
    """The checker finds planted violations of each rule in a scratch tree."""
    import tempfile
    global COMP, KNOWN
    saved = COMP, KNOWN
    cases = {
        "internal": {"graph/ir.h": "", "graph/ir_internal.h": "",
                     "kernel/k.c": '#include "graph/ir_internal.h"\n'},
        "printer": {"graph/ir.h": "", "backend/llvm/e.c": '#include "graph/ir.h"\n'},
        "through kir.h": {"graph/ir.h": "", "kernel/kir.h": '#include "graph/ir.h"\n',
                          "backend/backend.h": "", "backend/llvm/e.c": '#include "kernel/kir.h"\n'},
        "bare name": {"graph/ir.h": "", "kernel/k.c": '#include "ir.h"\n'},
    }
    ok = True
    for name, tree in cases.items():
        with tempfile.TemporaryDirectory() as d:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w") as f:
                    f.write(text)
            COMP, KNOWN = d, set()
            bad, _, _ = check()
            if not bad:
                print(f"layering: self-test '{name}': the planted violation was not found")
                ok = False
    COMP, KNOWN = saved
    return ok


def main():
    global COMP
    COMP = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "compiler")
    if not self_test():
        return 1
    bad, files, seen = check()
    for b in bad:
        print("layering: " + b)
    if bad:
        print(f"layering: {len(bad)} violation(s)")
        return 1
    print(f"layering: {len(files)} files, every include within the rules; "
          f"the backends see {', '.join(sorted(seen))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
