#!/usr/bin/python3
"""run_golden.py - golden-file test runner for mlc (Python standard library only).

    tests/run_golden.py --mlc build/mlc --suite SUITE [--update] [--timeout S] [FILTER...]

Each suite is a folder of .model inputs, each next to its expected output:

    lex       tests/front/lex/N.model      N.tokens   stdout of `mlc dump-tokens FILE`
    parse     tests/front/parse/N.model    N.ast      stdout of `mlc dump-ast FILE`
    explain   tests/sema/explain/N.model  N.explain  stdout of `mlc check --explain FILE`
    diag      tests/sema/diag/N.model     N.err      stderr of `mlc check FILE`; exit 1;
                                                inline `# expect error: TEXT` checked
    warn      tests/sema/warn/N.model     N.warn     stderr of `mlc check FILE`; exit 0;
                                                inline `# expect warning: TEXT` checked
    ok        tests/sema/ok/N.model       -          `mlc check FILE`: exit 0, empty stderr
    examples  examples/N.model       -          as ok

mlc runs from the repository root with the relative path of the input, so the
paths inside outputs read `tests/sema/diag/N.model`. For lex, parse and explain the
exit status must be 0 or 1 (a usage error, a signal or a hang fails).

diag annotations: a line of a tests/sema/diag input that ends in
`# expect error: TEXT` must get an error (`path:LINE:col: error: ...`) whose
message contains TEXT; an error on a line without such an annotation fails
the case. A line may carry several annotations. tests/sema/warn inputs do
the same with `# expect warning: TEXT` and warnings (and must have no error).

FILTER keeps the cases whose path contains any of the given substrings.
--update rewrites the goldens from the actual outputs (crashes and hangs are
never written). A suite with no cases fails. Output: `[PASS] path` or
`[FAIL] path` with the reason and a unified diff, then `N passed, N failed`;
the exit status is 1 when anything failed.
"""

import argparse
import difflib
import os
import re
import shlex
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# suite -> (folder, mlc arguments before the file, golden suffix, stream compared)
SUITES = {
    "lex": ("tests/front/lex", ["dump-tokens"], ".tokens", "stdout"),
    "parse": ("tests/front/parse", ["dump-ast"], ".ast", "stdout"),
    "explain": ("tests/sema/explain", ["check", "--explain"], ".explain", "stdout"),
    "diag": ("tests/sema/diag", ["check"], ".err", "stderr"),
    "warn": ("tests/sema/warn", ["check"], ".warn", "stderr"),
    "ok": ("tests/sema/ok", ["check"], None, None),
    "examples": ("examples", ["check"], None, None),
}

# `# expect error: TEXT` / `# expect warning: TEXT`, and the diagnostics they match
ANNOT_RE = {lv: re.compile(r"#\s*expect %s:" % lv) for lv in ("error", "warning")}
DIAG_RE = {lv: re.compile(r"^(?P<path>[^\n]*?):(?P<line>\d+):(?P<col>\d+): %s: (?P<msg>.*)$" % lv)
           for lv in ("error", "warning")}


class Result:
    def __init__(self):
        self.problems = []  # one line each
        self.diff = ""
        self.updated = False

    def fail(self, msg):
        self.problems.append(msg)


def run_mlc(mlc, args, path, timeout):
    """Runs mlc; returns (rc, stdout bytes, stderr bytes) or raises TimeoutExpired."""
    proc = subprocess.Popen([mlc] + args + [path], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return proc.returncode, out, err


def describe_rc(rc):
    if rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit %d" % rc


def text(b):
    return b.decode("utf-8", errors="replace")


def unified(expected, actual, golden):
    lines = difflib.unified_diff(text(expected).splitlines(keepends=True),
                                 text(actual).splitlines(keepends=True),
                                 fromfile=golden, tofile="actual output")
    out = []
    for ln in lines:
        out.append(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n")
    return "".join(out)


def annotations(source, level):
    """Line number -> list of expected substrings, from `# expect LEVEL: TEXT`."""
    expect = {}
    for no, line in enumerate(text(source).split("\n"), start=1):
        parts = ANNOT_RE[level].split(line)
        for want in parts[1:]:
            expect.setdefault(no, []).append(want.strip())
    return expect


def check_annotations(res, path, source, stderr, level="error"):
    expect = annotations(source, level)
    errors = {}  # line -> [message]
    for ln in text(stderr).splitlines():
        m = DIAG_RE[level].match(ln)
        if not m:
            continue
        if m.group("path") != path:
            res.fail("%s reported in another file: %s" % (level, ln))
            continue
        errors.setdefault(int(m.group("line")), []).append(m.group("msg"))
    if not expect:
        res.fail("no `# expect %s:` annotation in the input" % level)
    for line, wants in sorted(expect.items()):
        got = errors.get(line, [])
        for want in wants:
            if not any(want in msg for msg in got):
                if got:
                    res.fail("line %d: expected %s %s containing %r, got: %s"
                             % (line, "an" if level == "error" else "a", level, want, " | ".join(got)))
                else:
                    res.fail("line %d: expected %s %s containing %r, none reported"
                             % (line, "an" if level == "error" else "a", level, want))
    for line, msgs in sorted(errors.items()):
        if line not in expect:
            for msg in msgs:
                res.fail("line %d: unexpected %s: %s" % (line, level, msg))


def check_case(opts, suite, path):
    folder, args, suffix, stream = SUITES[suite]
    res = Result()
    try:
        rc, out, err = run_mlc(opts.mlc, args, path, opts.timeout)
    except subprocess.TimeoutExpired:
        res.fail("timed out after %g s" % opts.timeout)
        return res
    except OSError as e:
        res.fail("cannot run %s: %s" % (opts.mlc, e))
        return res

    crashed = rc not in (0, 1)  # never written as a golden
    if suite in ("ok", "examples"):
        if rc != 0:
            res.fail("expected exit 0, got %s" % describe_rc(rc))
        if err:
            res.fail("expected no diagnostics, got:\n" + text(err).rstrip("\n"))
        return res

    if suite == "diag":
        if rc != 1:
            res.fail("expected exit 1, got %s" % describe_rc(rc))
        with open(path, "rb") as f:
            check_annotations(res, path, f.read(), err)
    elif suite == "warn":
        if rc != 0:
            res.fail("expected exit 0 (warnings only), got %s" % describe_rc(rc))
        with open(path, "rb") as f:
            check_annotations(res, path, f.read(), err, "warning")
    elif rc not in (0, 1):
        res.fail("expected exit 0 or 1, got %s" % describe_rc(rc))
        if err:
            res.fail("stderr:\n" + text(err).rstrip("\n"))

    actual = out if stream == "stdout" else err
    golden = os.path.splitext(path)[0] + suffix
    return compare_golden(res, golden, actual, stream, opts.update and not crashed)


def compare_golden(res, golden, actual, stream, update):
    """Checks `actual` (bytes of `stream`) against the file `golden`, or with
    update rewrites it when it differs; returns res."""
    if update:
        old = None
        if os.path.exists(golden):
            with open(golden, "rb") as f:
                old = f.read()
        if old != actual:
            with open(golden, "wb") as f:
                f.write(actual)
            res.updated = True
        return res
    if not os.path.exists(golden):
        res.fail("missing golden %s (create it with --update)" % golden)
        return res
    with open(golden, "rb") as f:
        expected = f.read()
    if expected != actual:
        res.fail("%s differs from %s" % (stream, golden))
        res.diff = unified(expected, actual, golden)
    return res


def print_result(path, res):
    """Prints one case's [PASS]/[UPDATED]/[FAIL] line (problems, diff); True if it passed."""
    if not res.problems:
        print("[%s] %s" % ("UPDATED" if res.updated else "PASS", path))
        return True
    print("[FAIL] %s" % path)
    for p in res.problems:
        print("    " + p.replace("\n", "\n    "))
    if res.diff:
        sys.stdout.write(res.diff)
    return False


def collect(suite, filters):
    folder, _, suffix, _ = SUITES[suite]
    if not os.path.isdir(folder):
        return [], []
    names = sorted(os.listdir(folder))
    cases = [os.path.join(folder, n) for n in names if n.endswith(".model")]
    # Goldens whose input is gone are reported, not silently kept.
    orphans = []
    if suffix:
        models = set(cases)
        orphans = [os.path.join(folder, n) for n in names if n.endswith(suffix)
                   and os.path.join(folder, n[: -len(suffix)] + ".model") not in models]
    if filters:
        cases = [c for c in cases if any(f in c for f in filters)]
        orphans = [o for o in orphans if any(f in o for f in filters)]
    return cases, orphans


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlc", required=True, help="path to the mlc executable")
    ap.add_argument("--suite", required=True, choices=sorted(SUITES))
    ap.add_argument("--update", action="store_true", help="rewrite the goldens")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per case (default 10)")
    ap.add_argument("filters", nargs="*", metavar="FILTER")
    opts = ap.parse_args()
    opts.mlc = os.path.abspath(opts.mlc)
    os.chdir(REPO)  # relative paths in outputs, whatever the caller's directory

    cases, orphans = collect(opts.suite, opts.filters)
    passed = failed = 0
    for path in orphans:
        print("[FAIL] %s: golden without a .model input" % path)
        failed += 1
    for path in cases:
        if print_result(path, check_case(opts, opts.suite, path)):
            passed += 1
        else:
            failed += 1
    if not cases:
        print("[FAIL] suite %s: no cases in %s%s" % (
            opts.suite, SUITES[opts.suite][0], " matching the filter" if opts.filters else ""))
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


# ---- tool suites: a test tool over NAME.kir inputs (tests/kernel, tests/backend/cuda) ----
# Each FOLDER/NAME.kir starts with `; args: ARGS` (the tool's options) and may
# say `; expect: error` on its second line (exit 1, else 0); the tool runs as
# `TOOL ARGS FOLDER/NAME.kir` from the repository root and its stdout must
# equal FOLDER/NAME + ext.

def tool_directives(path):
    with open(path, encoding="utf-8") as f:
        first, second = f.readline(), f.readline()
    if not first.startswith("; args:"):
        return None, False
    return shlex.split(first[len("; args:"):]), second.strip() == "; expect: error"


def check_tool_case(opts, path, ext):
    res = Result()
    args, want_error = tool_directives(path)
    if args is None:
        res.fail("first line must be '; args: ...'")
        return res
    try:
        rc, out, err = run_mlc(opts.tool, args, path, opts.timeout)
    except subprocess.TimeoutExpired:
        res.fail("timed out after %g s" % opts.timeout)
        return res
    if rc != (1 if want_error else 0):
        res.fail("expected exit %d, got %s" % (1 if want_error else 0, describe_rc(rc)))
        if err:
            res.fail("stderr:\n" + text(err).rstrip("\n"))
    golden = os.path.splitext(path)[0] + ext
    return compare_golden(res, golden, out, "stdout", opts.update and rc in (0, 1))


def tool_main(description, folder, ext, repo):
    """The command line of a tool suite: --tool T [--update] [--timeout S] [FILTER...]."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--tool", required=True, help="path to the test tool")
    ap.add_argument("--update", action="store_true", help="rewrite the goldens")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("filters", nargs="*", metavar="FILTER")
    opts = ap.parse_args()
    opts.tool = os.path.abspath(opts.tool)
    os.chdir(repo)
    names = sorted(os.listdir(folder))
    cases = [os.path.join(folder, n) for n in names if n.endswith(".kir")]
    orphans = [os.path.join(folder, n) for n in names
               if n.endswith(ext) and n[:-len(ext)] + ".kir" not in names]
    if opts.filters:
        cases = [c for c in cases if any(f in c for f in opts.filters)]
    passed = failed = 0
    for path in orphans:
        print("[FAIL] %s: golden without a .kir input" % path)
        failed += 1
    for path in cases:
        if print_result(path, check_tool_case(opts, path, ext)):
            passed += 1
        else:
            failed += 1
    if not cases:
        print("[FAIL] no cases in %s" % folder)
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
