#!/usr/bin/python3
"""run.py - the `mlc` command line: stages, emissions, usage errors, outputs (stdlib only).

    tests/driver/run.py --mlc build/mlc --ir-check build/tests/ir_check
                        [--build-type TYPE] [--timeout S] [FILTER...]

Runs from the repository root. Each case runs mlc (with TMPDIR pointing at a
fresh folder, so temporaries can be counted) and checks exit status, output
and the files left behind:
  - every --emit STAGE prints that stage's text form; graph stages parse back
    (ir_check: parse, verify, print gives the same text); --dump-after=STAGE
    puts the same text on stderr after a "; after STAGE" line, for every stage
    and for a comma list;
  - the printed train_step has as many results as the compiled one (the
    kernel IR's outputs, and the glue the program is linked with);
  - usage errors exit 2 with one message format for every subcommand; every
    option a --help lists is accepted;
  - -o - is standard output; /dev/full fails with exit 1; -o naming the input
    (by its name, another path, a hard link) is refused and the input kept;
    an output in a missing, non-directory or read-only folder is refused
    before any stage runs (no temporary made, far quicker than a build);
    --emit lib onto a directory or a full disk leaves no archive; a newline
    in a library name reaches no ar script; an interrupted build removes its
    temporary next to the output;
  - --verify-each runs every verifier (-v lists them), -v times every stage;
  - mlc run --interp reads .npy inputs with the runtime's reader;
  - build --report lists every kernel of train_step, eval and predict (as
    --emit memplan has them) with lines that are the file's, a matmul's
    FLOPs are 2*M*N*K at the --batch given, the peak is the sum of its parts,
    and --max-memory gives B with peak(B) <= SIZE < peak(B + 1).
Prints `[PASS] name`, `[SKIP] name: why` or `[FAIL] name` with the reasons,
then `N passed, N failed, N skipped`; exits 1 when anything failed.
"""

import argparse
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

GRAPH_STAGES = ["lower", "autodiff", "optim"]
SMALL = "tests/e2e/diverge.model"  # builds in about a second
MLP = "examples/fashion_mlp.model"


class Skip(Exception):
    pass


class Ctx:
    def __init__(self, mlc, ir_check, build_type, timeout, tmp):
        self.mlc, self.ir_check, self.build_type = mlc, ir_check, build_type
        self.timeout, self.tmp = timeout, tmp
        self.build_secs = None  # a full build of SMALL, measured once

    def scratch(self, name):
        d = os.path.join(self.tmp, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def run(self, args, tmpdir=None, stdout=None):
        """(rc, stdout bytes, stderr text, seconds); TMPDIR is tmpdir or a fresh folder."""
        env = dict(os.environ, TMPDIR=tmpdir or self.scratch("tmpdir"))
        t0 = time.monotonic()
        proc = subprocess.Popen([self.mlc] + args, stdin=subprocess.DEVNULL,
                                stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None, b"", "timeout", self.timeout
        return proc.returncode, out or b"", err.decode("utf-8", "replace"), time.monotonic() - t0

    def ir_parses(self, text):
        """Reasons the graph IR text is not accepted (empty: it parses, verifies, round-trips)."""
        proc = subprocess.run([self.ir_check, "-"], input=text, capture_output=True)
        if proc.returncode:
            return ["ir_check: " + (proc.stdout + proc.stderr).decode()[:400]]
        return []


def funcs_of(ctx, text):
    proc = subprocess.run([ctx.ir_check, "-"], input=text, capture_output=True)
    out = {}
    for line in proc.stdout.decode().splitlines():
        if line.startswith("func "):
            _, name, nargs, nres = line.split()
            out[name] = (int(nargs), int(nres))
    return out


def expect_rc(why, rc, want, err):
    if rc != want:
        why.append("exit %s, expected %d; stderr: %s" % (rc, want, err.strip()[:300]))


# ---- stages and emissions -------------------------------------------------------------------

def form_problems(ctx, stage, text):
    """Reasons `text` is not the text form of `stage`."""
    if stage in GRAPH_STAGES or stage == "ir":
        why = ctx.ir_parses(text)
        want = {"lower": ["forward", "loss", "eval", "predict"], "autodiff": ["loss_grad"],
                "optim": ["loss_grad", "train_step"], "ir": ["train_step"]}[stage]
        have = funcs_of(ctx, text)
        why += ["no func %s" % f for f in want if f not in have]
        if stage == "lower" and "loss_grad" in have:
            why.append("--emit lower shows autodiff's loss_grad")
        return why
    t = text.decode()
    marks = {"kir": [r"^program train_step$", r"^program train_step_checked$", r"^program eval$",
                     r"^program predict$", r"^kernel k\d+_"],
             "schedule": [r"^program train_step$", r"^target cpu$", r" @chunk\(", r"^kernel k\d+_"],
             "memplan": [r"^program train_step$", r"^target cpu$", r" temp at ", r"^scratch "],
             "glue": [r"const MlcModel mlc_model_\w+ = \{", r"static int train_step\("],
             "codegen": [r"^define .*@mlc_\w+_k_train_step\(", r"^target triple"],
             "llvm": [r"^define .*@mlc_\w+_k_train_step\(", r"^target triple"],
             "asm": [r"^mlc_\w+_k_train_step:", r"\.text"],
             "dot": [r"^digraph"]}[stage]
    return ["no line matching %r" % m for m in marks if not re.search(m, t, re.M)]


def case_emit(ctx, stage, model):
    rc, out, err, _ = ctx.run(["build", model, "--emit", stage, "-o", "-"])
    why = []
    expect_rc(why, rc, 0, err)
    return why or form_problems(ctx, stage, out)


# The sections of a --dump-after stderr: {stage: text}.
def dump_sections(err):
    parts = re.split(r"^(?:;|//) after (\w+)\n", err, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def case_dump(ctx, stage, model):
    # (-o - in both runs: the C name of symbols comes from -o's file name)
    rc, out, err, _ = ctx.run(["build", model, "--emit", "kir" if stage != "codegen" else "llvm",
                               "-o", "-", "--dump-after=" + stage])
    why = []
    expect_rc(why, rc, 0, err)
    sec = dump_sections(err)
    if stage not in sec:
        return why + ["stderr has no '; after %s' section" % stage]
    why += form_problems(ctx, stage, sec[stage].encode())
    # The dump is the same text --emit STAGE prints: one IR, however it is asked for.
    if stage == "codegen":
        return why  # (its text is checked above; --emit codegen is --emit llvm, a file by default)
    rc2, out2, err2, _ = ctx.run(["build", model, "--emit", stage, "-o", "-"])
    if rc2 != 0 or out2.decode() != sec[stage]:
        why.append("--dump-after=%s differs from --emit %s" % (stage, stage))
    return why


def case_dump_list(ctx):
    rc, out, err, _ = ctx.run(["build", MLP, "--emit", "ir", "--dump-after=lower,optim,kir"])
    why = []
    expect_rc(why, rc, 0, err)
    sec = dump_sections(err)
    if list(sec) != ["lower", "optim", "kir"]:
        why.append("sections %s, expected lower, optim, kir in that order" % list(sec))
    if out.decode() != sec.get("optim"):
        why.append("--emit ir (stdout) is not the graph IR after optim")
    return why


def case_step_results(ctx):
    """The printed train_step vs the compiled one, on SMALL (MSE) and MLP (cross-entropy)."""
    why = []
    for model in (SMALL, MLP):
        rc, out, err, _ = ctx.run(["build", model, "--emit", "ir"])
        expect_rc(why, rc, 0, err)
        printed = funcs_of(ctx, out).get("train_step", (0, 0))[1]
        rc, kir, err, _ = ctx.run(["build", model, "--emit", "kir"])
        prog = kir.decode().split("\nprogram ")[0]
        outputs = len(re.findall(r"^buf \S+ : .* output \d+$", prog, re.M))
        if printed != 4 or outputs != printed:
            why.append("%s: printed train_step has %d results, its kernel IR %d outputs" %
                       (model, printed, outputs))
        if model != SMALL:
            continue
        tmpdir = ctx.scratch("keep")
        rc, _, err, secs = ctx.run(["build", model, "-o", os.path.join(tmpdir, "prog"), "--keep-temps"],
                                   tmpdir=tmpdir)
        expect_rc(why, rc, 0, err)
        ctx.build_secs = secs
        m = re.search(r"temporaries kept in (\S+)", err)
        glue = open(os.path.join(m.group(1), "glue.c")).read() if m else ""
        g = re.search(r"STEP_OUT = (\d)", glue)
        if not g or 3 + int(g.group(1)) != printed:
            why.append("the linked glue says STEP_OUT = %s, the printed step has %d results" %
                       (g.group(1) if g else "?", printed))
    return why


def case_accumulate(ctx):
    rc, out, err, _ = ctx.run(["build", "tests/e2e/accum.model", "--emit", "ir"])
    why = []
    expect_rc(why, rc, 0, err)
    res = funcs_of(ctx, out).get("train_step")
    if res != (4, 3):
        why.append("accum.model (accumulate 2): train_step (args, results) = %s, expected (4, 3)" % (res,))
    return why


# ---- usage errors and help ------------------------------------------------------------------

USAGE_RE = r"\Amlc %s: error: [^\n]*%s[^\n]*\nTry 'mlc %s --help' for more information\.\n\Z"

USAGE_CASES = [
    # (args, the subcommand named, text the message contains)
    (["check", "--frob", MLP], "check", "unknown option '--frob'"),
    (["check"], "check", "no input file"),
    (["check", "--color=sometimes", MLP], "check", "sometimes"),
    (["dump-tokens", "--frob", MLP], "dump-tokens", "--frob"),
    (["dump-tokens", MLP, MLP], "dump-tokens", "got 2"),
    (["dump-ast", "--explain", MLP], "dump-ast", "--explain"),
    (["dump-ast"], "dump-ast", "FILE"),
    (["build", MLP, "--frob"], "build", "--frob"),
    (["build", MLP, "--emit", "frob"], "build", "'frob'"),
    (["build", MLP, "--emit"], "build", "'--emit' needs a value"),
    (["build", MLP, "--dump-after=lower,fold"], "build", "'fold'"),
    (["build", MLP, "--dump-after=link"], "build", "'link'"),
    (["build", MLP, "-O9"], "build", "'9'"),
    (["build", MLP, "-o"], "build", "'-o' needs a value"),
    (["build", MLP, "-o", "-"], "build", "-o -"),
    (["build", MLP, MLP], "build", "got 2"),
    (["build"], "build", "FILE.model"),
    (["run", "--interp", MLP, "--entry", "loss", "--seed", "x"], "run", "--seed"),
    (["run", "--interp", MLP, "--entry", "loss", "--input", "x"], "run", "NAME=PATH"),
    (["run", "--interp", MLP, "--entry", "frob"], "run", "--entry"),
    (["run", MLP, "--entry", "loss"], "run", "--interp"),
    (["run", "--frob"], "run", "--frob"),
    (["help", "frob"], "help", "frob"),
    (["help", "--frob"], "help", "--frob"),
    (["version", "--frob"], "version", "--frob"),
    (["version", "x"], "version", "takes no operands"),
    (["build", MLP, "--batch", "8"], "build", "options of --report"),
    (["build", MLP, "--report", "--batch", "0"], "build", "--batch"),
    (["build", MLP, "--report", "--max-memory", "lots"], "build", "'lots'"),
    (["build", MLP, "--report", "--emit", "kir"], "build", "--report=FILE"),
    (["build", MLP, "--conv", "fast"], "build", "--conv takes direct or winograd"),
]


def case_usage(ctx, args, cmd, text):
    rc, out, err, _ = ctx.run(args)
    why = []
    expect_rc(why, rc, 2, err)
    if not re.match(USAGE_RE % (re.escape(cmd), re.escape(text), re.escape(cmd)), err):
        why.append("stderr is not one 'mlc %s: error: ...%s...' + 'Try' line: %r" % (cmd, text, err[:300]))
    if out:
        why.append("a usage error printed to stdout")
    return why


def case_usage_top(ctx):
    why = []
    for args, text in (([], "no command"), (["frobnicate"], "frobnicate"), (["--frob"], "--frob"),
                       (["biuld"], "did you mean 'build'")):
        rc, out, err, _ = ctx.run(args)
        expect_rc(why, rc, 2, err)
        if not re.match(r"\Amlc: error: [^\n]*%s[^\n]*\nTry 'mlc --help' for more information\.\n\Z" %
                        re.escape(text), err):
            why.append("%s: %r" % (args, err[:200]))
    return why


SAMPLE = {"color": "auto", "model": "M", "emit": "ir", "dump-after": "lower", "cpu": "native",
          "entry": "loss", "input": "x=x.npy", "seed": "1", "target": "cpu", "cuda-arch": "sm_90",
          "batch": "8", "max-memory": "1G", "precision": "bf16", "conv": "winograd"}


def case_help(ctx, cmd):
    rc, out, err, _ = ctx.run([cmd, "--help"])
    why = []
    expect_rc(why, rc, 0, err)
    text = out.decode()
    if not text.startswith("usage: mlc %s" % ("<command>" if cmd == "help" else cmd)):
        why.append("help does not start with its usage line")
    # every long option the help shows is accepted by that subcommand (mlc
    # help shows mlc's own: mlc --help, mlc --version)
    for name, value in re.findall(r"^  (?:-\w, )?--([\w-]+)([= ][A-Z])?", text, re.M):
        arg = "--%s=%s" % (name, SAMPLE.get(name, "x")) if value else "--" + name
        rc, _, err, _ = ctx.run([arg] if cmd == "help" else [cmd, "--help", arg])
        if rc != 0:
            why.append("%s --help lists %s, which it refuses: %s" % (cmd, arg, err.strip()[:200]))
    return why


# ---- outputs ----------------------------------------------------------------------------------

def case_stdout(ctx):
    why = []
    rc, a, err, _ = ctx.run(["build", MLP, "--emit", "ir", "-o", "-"])
    rc2, b, err2, _ = ctx.run(["build", MLP, "--emit", "ir"])
    expect_rc(why, rc, 0, err)
    if not a or a != b:
        why.append("--emit ir -o - differs from --emit ir")
    for kind in ("llvm", "asm"):
        d = ctx.scratch("stdout")
        rc, out, err, _ = ctx.run(["build", os.path.abspath(SMALL), "--emit", kind, "-o", "-"])
        expect_rc(why, rc, 0, err)
        why += ["--emit %s -o -: %s" % (kind, p) for p in form_problems(ctx, kind, out)]
    return why


def case_dev_full(ctx):
    why = []
    for args in (["--emit", "ir", "-o", "/dev/full"], ["--emit", "kir", "-o", "/dev/full"],
                 ["--emit", "glue", "-o", "/dev/full"]):
        rc, _, err, _ = ctx.run(["build", MLP] + args)
        expect_rc(why, rc, 1, err)
        if "cannot write '/dev/full'" not in err:
            why.append("%s: stderr does not name /dev/full: %r" % (args, err[:200]))
    with open("/dev/full", "wb") as full:
        rc, _, err, _ = ctx.run(["build", MLP, "--emit", "optim"], stdout=full)
    expect_rc(why, rc, 1, err)
    if "standard output" not in err:
        why.append("a failed write to standard output is not reported: %r" % err[:200])
    rc, _, err, _ = ctx.run(["build", SMALL, "--emit", "llvm", "-o", "/dev/full"])
    expect_rc(why, rc, 1, err)
    return why


def case_onto_input(ctx):
    why = []
    d = ctx.scratch("input")
    src = os.path.join(d, "x.model")
    shutil.copy(MLP, src)
    os.link(src, os.path.join(d, "hard.model"))
    os.symlink("x.model", os.path.join(d, "sym.model"))
    before = open(src, "rb").read()
    for emit, out in (("exe", "x.model"), ("exe", "./x.model"), ("ir", "x.model"), ("obj", "hard.model"),
                      ("llvm", "sym.model"), ("exe", os.path.join(d, "x.model"))):
        rc, _, err, _ = run_in(ctx, d, ["build", "x.model", "--emit", emit, "-o", out])
        expect_rc(why, rc, 1, err)
        if "input" not in err or out not in err:
            why.append("-o %s: the refusal does not say it is the input: %r" % (out, err[:200]))
    # the library's header NAME.h would be the input
    shutil.copy(MLP, os.path.join(d, "m.h"))
    rc, _, err, _ = run_in(ctx, d, ["build", "m.h", "--emit", "lib", "-o", "libm.a"])
    expect_rc(why, rc, 1, err)
    if os.path.exists(os.path.join(d, "libm.a")):
        why.append("a refused --emit lib left libm.a")
    if open(src, "rb").read() != before or open(os.path.join(d, "m.h"), "rb").read() != open(MLP, "rb").read():
        why.append("an input file changed")
    left = sorted(os.listdir(d))
    if left != ["hard.model", "m.h", "sym.model", "x.model"]:
        why.append("files left in the folder: %s" % left)
    return why


def run_in(ctx, cwd, args):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return ctx.run(args)
    finally:
        os.chdir(old)


def mount_tmpfs(path, opts):
    """Mounts a tmpfs (root in a container may); True on success."""
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path], capture_output=True)
    except OSError:
        return False
    return r.returncode == 0


def case_bad_dirs(ctx):
    why = []
    if ctx.build_secs is None:
        raise Skip("needs the build time measured by 'train_step results'")
    d = ctx.scratch("dirs")
    open(os.path.join(d, "file"), "w").close()
    targets = [("a missing folder", os.path.join(d, "no", "such", "prog"), "No such file"),
               ("a path under a file", os.path.join(d, "file", "prog"), "not a directory"),
               ("a directory", d, "is a directory")]
    ro = os.path.join(d, "ro")
    os.mkdir(ro)
    if os.geteuid() != 0:
        os.chmod(ro, 0o555)
        targets.append(("a read-only folder", os.path.join(ro, "prog"), "Permission denied"))
    elif mount_tmpfs(ro, "ro,size=64k"):
        targets.append(("a read-only file system", os.path.join(ro, "prog"), "Read-only"))
    else:
        print("    (no read-only folder case: running as root, and no read-only tmpfs can be mounted)")
    try:
        for emit in ("exe", "lib", "ir"):
            for what, out, text in targets:
                tmpdir = ctx.scratch("tmpdir-bad")
                rc, _, err, secs = ctx.run(["build", SMALL, "--emit", emit, "-o", out], tmpdir=tmpdir)
                expect_rc(why, rc, 1, err)
                if out not in err or text not in err:
                    why.append("--emit %s -o %s: message %r" % (emit, what, err.strip()[:200]))
                if os.listdir(tmpdir):
                    why.append("--emit %s into %s: a temporary was made before refusing" % (emit, what))
                if secs > 0.25 * ctx.build_secs:
                    why.append("--emit %s into %s took %.2f s (a build takes %.2f s): refused late" %
                               (emit, what, secs, ctx.build_secs))
    finally:
        subprocess.run(["umount", ro], capture_output=True)
    if os.listdir(d) != ["file", "ro"] and sorted(os.listdir(d)) != ["file", "ro"]:
        why.append("files left: %s" % os.listdir(d))
    return why


def case_lib_failures(ctx):
    why = []
    d = ctx.scratch("libdir")
    rc, _, err, _ = ctx.run(["build", SMALL, "--emit", "lib", "-o", d])
    expect_rc(why, rc, 1, err)
    if os.listdir(d):
        why.append("--emit lib onto a directory left %s" % os.listdir(d))
    full = ctx.scratch("full")
    if not mount_tmpfs(full, "size=256k"):
        print("    (no disk-full case: no small tmpfs can be mounted here)")
        return why
    try:
        rc, _, err, _ = ctx.run(["build", SMALL, "--emit", "lib", "-o", os.path.join(full, "libx.a")])
        expect_rc(why, rc, 1, err)
        if "No space left" not in err:
            why.append("disk full: %r" % err.strip()[:200])
        if os.listdir(full):
            why.append("disk full: left %s" % os.listdir(full))
    finally:
        subprocess.run(["umount", full], capture_output=True)
    return why


def case_lib_name(ctx):
    why = []
    d = ctx.scratch("libname")
    name = "lib\nCREATE evil.a\nADDMOD x.model\nSAVE\nEND\nx.a"
    rc, _, err, _ = run_in(ctx, d, ["build", os.path.abspath(SMALL), "--emit", "lib", "-o", name])
    expect_rc(why, rc, 0, err)
    left = sorted(os.listdir(d))
    if name not in left or "evil.a" in left:
        why.append("files made: %r" % left)
    else:
        members = subprocess.run(["ar", "t", os.path.join(d, name)], capture_output=True,
                                 text=True).stdout.split()
        if members[-5:] != ["glue.o", "kernels.o", "kernels1.o", "kernels2.o", "kernels3.o"] or "pool.c.o" not in members:
            why.append("archive members: %s" % members)
    return why


def case_binary_outputs(ctx):
    """exe, obj and lib land whole, with the modes cc would give, and no temporaries stay."""
    why = []
    d = ctx.scratch("bins")
    tmpdir = ctx.scratch("tmpdir-bins")
    for emit, out in (("exe", "prog"), ("obj", "prog.o"), ("lib", "libprog.a")):
        rc, _, err, _ = ctx.run(["build", SMALL, "--emit", emit, "-o", os.path.join(d, out)], tmpdir=tmpdir)
        expect_rc(why, rc, 0, err)
    left = sorted(os.listdir(d))
    if left != ["libprog.a", "prog", "prog.h", "prog.o"]:
        why.append("files: %s" % left)
    elif not os.access(os.path.join(d, "prog"), os.X_OK) or os.access(os.path.join(d, "prog.o"), os.X_OK):
        why.append("modes: the program must be executable, the object not")
    if os.listdir(tmpdir):
        why.append("temporaries left in TMPDIR: %s" % os.listdir(tmpdir))
    return why


def case_interrupted(ctx):
    """^C during code generation removes the temporary next to the output."""
    d = ctx.scratch("interrupt")
    proc = subprocess.Popen([ctx.mlc, "build", MLP, "-o", os.path.join(d, "prog")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, TMPDIR=ctx.scratch("tmpdir-int")))
    deadline = time.monotonic() + 10
    while not os.listdir(d) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if proc.poll() is not None:
        raise Skip("the build ended before it could be interrupted")
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=ctx.timeout)
    why = []
    if rc != -signal.SIGINT:
        why.append("exit %s, expected death by SIGINT" % rc)
    if os.listdir(d):
        why.append("left in the output folder: %s" % os.listdir(d))
    return why


# ---- verifiers and times ------------------------------------------------------------------------

TIME_RE = re.compile(r"^mlc build: ([\w-]+) +([\d.]+) ms(, verify ([\d.]+) ms)?", re.M)


def case_verify(ctx):
    why = []
    rc, _, err, _ = ctx.run(["build", MLP, "--emit", "kir", "--verify-each", "-v", "-o", os.devnull])
    expect_rc(why, rc, 0, err)
    lines = {m.group(1): m.group(3) for m in TIME_RE.finditer(err)}
    for s in GRAPH_STAGES + ["kir"]:
        if lines.get(s) is None:
            why.append("--verify-each -v: no verify time for stage %s" % s)
    rc, _, err, _ = ctx.run(["build", MLP, "--emit", "kir", "-v", "-o", os.devnull])
    verified = [m.group(1) for m in TIME_RE.finditer(err) if m.group(3)]
    if ctx.build_type == "Debug" and len(verified) != 4:
        why.append("a Debug build verifies %s without --verify-each, expected every graph and kir stage" % verified)
    if ctx.build_type not in ("Debug", "") and verified:
        why.append("a %s build verified %s without --verify-each" % (ctx.build_type, verified))
    return why


def case_times(ctx):
    why = []
    rc, _, err, _ = ctx.run(["build", SMALL, "-v", "-o", os.path.join(ctx.scratch("times"), "p")])
    expect_rc(why, rc, 0, err)
    got = [m.group(1) for m in TIME_RE.finditer(err)]
    want = ["front", "lower", "autodiff", "optim", "kir", "schedule", "memplan", "glue", "codegen", "link", "total"]
    if got != want:
        why.append("-v lines for %s, expected %s" % (got, want))
    if not re.search(r"^mlc build: codegen .*\(ir [\d.]+ ms, verify [\d.]+ ms, split [\d.]+ ms, passes [\d.]+ ms\)$",
                     err, re.M):
        why.append("-v: the codegen line does not time its steps: %r" % err[-600:])
    if not re.search(r"^mlc build: link .*\(kernels\.o [\d.]+ ms, glue\.o [\d.]+ ms, cc [\d.]+ ms; "
                     r"kernels1\.o: read [\d.]+ ms, passes [\d.]+ ms, object [\d.]+ ms; "
                     r"kernels2\.o: read [\d.]+ ms, passes [\d.]+ ms, object [\d.]+ ms; "
                     r"kernels3\.o: read [\d.]+ ms, passes [\d.]+ ms, object [\d.]+ ms\)$", err, re.M):
        why.append("-v: the link line does not time its steps: %r" % err[-300:])
    return why


# ---- mlc run --interp ------------------------------------------------------------------------------

def npy(descr, shape, data, fortran=False):
    head = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False", "".join("%d, " % s for s in shape))
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + data


def case_run_npy(ctx):
    why = []
    d = ctx.scratch("npy")
    x = [((i * 37) % 101) / 101.0 for i in range(3 * 784)]
    files = {"x.npy": npy("<f4", (3, 784), struct.pack("<%df" % len(x), *x)),
             "y.npy": npy("|u1", (3,), bytes([1, 7, 3])),
             "fortran.npy": npy("<f4", (3, 784), struct.pack("<%df" % len(x), *x), fortran=True),
             "short.npy": npy("<f4", (3, 784), struct.pack("<%df" % 10, *x[:10]))}
    for n, b in files.items():
        with open(os.path.join(d, n), "wb") as f:
            f.write(b)
    p = lambda n: os.path.join(d, n)
    rc, out, err, _ = ctx.run(["run", "--interp", MLP, "--entry", "loss", "--input", "x=" + p("x.npy"),
                               "--input", "y=" + p("y.npy")])
    expect_rc(why, rc, 0, err)
    m = re.match(r"^loss: f32 = \[([\d.eE+-]+)\]$", out.decode().strip())
    if not m or not 0 < float(m.group(1)) < 20:
        why.append("loss output: %r" % out[:200])
    # the runtime's reader's own messages, naming the file
    for bad, text in (("fortran.npy", "Fortran-order"), ("short.npy", "truncated")):
        rc, out, err, _ = ctx.run(["run", "--interp", MLP, "--entry", "loss", "--input", "x=" + p(bad),
                                   "--input", "y=" + p("y.npy")])
        expect_rc(why, rc, 1, err)
        if text not in err or p(bad) not in err or not err.startswith("mlc run: error: "):
            why.append("%s: %r" % (bad, err.strip()[:200]))
    rc, _, err, _ = ctx.run(["run", "--interp", MLP, "--entry", "loss", "--input", "x=" + p("x.npy")])
    expect_rc(why, rc, 1, err)
    if "no --input for argument 'y'" not in err:
        why.append("missing input: %r" % err[:200])
    return why


# ---- main --------------------------------------------------------------------------------------------

# ---- build --conv winograd -------------------------------------------------------------------

def case_conv_winograd(ctx):
    """fashion_cnn: conv2 (32 input channels) takes the Winograd path, conv1 (1) does not;
    -v and --report say so, and without the option nothing does."""
    cnn = "examples/fashion_cnn.model"
    why, text = report(ctx, cnn, "--conv", "winograd")
    rows = [l for l in text.splitlines() if "conv2d_bias" in l]
    marked = [l for l in rows if l.rstrip().endswith("[winograd]")]
    if not rows or not all("conv2(h)" in l for l in marked) or not any("conv2(h)" in l for l in marked):
        why.append("--report: [winograd] not on exactly conv2's rows: %r" % rows[:6])
    if any("conv1(x)" in l for l in marked):
        why.append("--report: conv1 (one input channel) is marked [winograd]")
    _, plain = report(ctx, cnn)
    if "[winograd]" in plain:
        why.append("--report without --conv winograd marks a kernel")
    rc, out, err, _ = ctx.run(["build", cnn, "--conv", "winograd", "--emit", "memplan", "-o", "-", "-v"])
    expect_rc(why, rc, 0, err)
    if not re.search(r"schedule .*--conv winograd, train_step: 2 of 3 forward and input-gradient convolutions: "
                     r"k\d+_conv2d_bias k\d+_conv2d_grad_input\)",
                     err):
        why.append("-v does not name the one Winograd convolution: %r" % err[:400])
    kir = out.decode()
    if kir.count("winograd]") < 3:  # train_step, eval, predict
        why.append("the planned kernel IR has fewer than 3 calls with the winograd flag")
    if not re.search(r"call conv2d_grad_input\([^\n]*flags = \[winograd\]", kir):
        why.append("conv2's input gradient does not carry the winograd flag")
    return why


# ---- build --report ---------------------------------------------------------------------------

def report(ctx, model, *extra):
    """(why, text) of `mlc build MODEL --report EXTRA...`."""
    rc, out, err, _ = ctx.run(["build", model, "--report"] + list(extra))
    why = []
    expect_rc(why, rc, 0, err)
    return why, out.decode()


def report_tables(text):
    """{program: [(name, lines, flops, bytes, source)]} of a report."""
    tables, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^(\w+): (\d+) kernels$", line)
        if m:
            cur = tables.setdefault(m.group(1), [])
            continue
        m = re.match(r"^  (\d+) +(\S+) +(\S+) +([\d,]+) +([\d,]+)  ?(.*)$", line)
        if m and cur is not None:
            cur.append((m.group(2), m.group(3), int(m.group(4).replace(",", "")),
                        int(m.group(5).replace(",", "")), m.group(6)))
        elif not line.strip():
            cur = None
    return tables


def report_memory(text):
    """{row: bytes} of the peak memory section."""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith("peak memory of training"):
            inside = True
            continue
        m = re.match(r"^  (\S.*?) {2,}([\d,]+)  ", line + "  ")
        if inside and m:
            rows[m.group(1)] = int(m.group(2).replace(",", ""))
        elif inside and not line.startswith("  "):
            inside = False
    return rows


def case_report_kernels(ctx):
    why, text = report(ctx, MLP)
    rc, out, err, _ = ctx.run(["build", MLP, "--emit", "memplan", "-o", "-"])
    expect_rc(why, rc, 0, err)
    want, prog = {}, None
    for line in out.decode().splitlines():
        m = re.match(r"^program (\w+)$", line)
        if m:
            prog = m.group(1)
        m = re.match(r"^kernel (\w+)\(", line)
        if m:
            want.setdefault(prog, []).append(m.group(1))
    tables = report_tables(text)
    for p in ("train_step", "eval", "predict"):
        have = [k[0] for k in tables.get(p, [])]
        if have != want.get(p):
            why.append("%s: the report lists %d kernels, --emit memplan has %d (first difference: %s)" % (
                p, len(have), len(want.get(p, [])),
                next((f"{a} / {b}" for a, b in zip(have, want.get(p, [])) if a != b), "length")))
    src = open(MLP).read().splitlines()
    for p, rows in tables.items():
        for name, lines, _, _, text_ in rows:
            if lines == "-":
                continue
            lo, _, hi = lines.partition("-")
            lo, hi = int(lo), int(hi or lo)
            if not 1 <= lo <= hi <= len(src):
                why.append("%s %s: lines %s are not in the file" % (p, name, lines))
            elif not src[lo - 1].strip().startswith(text_.rstrip(".").strip()):
                why.append("%s %s: line %d is %r, the report shows %r" % (p, name, lo, src[lo - 1], text_))
    if not tables.get("train_step") or all(r[1] == "-" for r in tables["train_step"]):
        why.append("train_step's kernels name no lines")
    return why


def case_report_flops(ctx):
    why = []
    for b in (64, 7):
        w, text = report(ctx, MLP, "--batch", str(b))
        why += w
        rows = {r[0]: r for r in report_tables(text).get("train_step", [])}
        # fc1: x [B, 784] @ w^T [784, 256] (fashion_mlp.model line 14), its
        # bias add folded in (matmul_bias: one more add per output) or not
        name = next((n for n in ("k2_matmul_bias", "k2_matmul") if n in rows), None)
        if not name:
            why.append("no k2_matmul or k2_matmul_bias in train_step")
            continue
        _, lines, flops, nbytes, _ = rows[name]
        bias = name.endswith("_bias")
        want = 2 * b * 784 * 256 + (b * 256 if bias else 0)
        if flops != want:
            why.append("batch %d: %s has %d FLOPs, 2*M*N*K%s = %d" % (b, name, flops, " + M*N" if bias else "", want))
        if lines != "14":
            why.append("%s covers lines %s, not 14 (h = relu(fc1(x)))" % (name, lines))
        # it reads x, w^T (and the bias) and writes y (the unfused matmul
        # also accumulates into it)
        want = 4 * (b * 784 + 784 * 256 + (256 + b * 256 if bias else 2 * b * 256))
        if nbytes != want:
            why.append("batch %d: %s moves %d bytes, expected %d" % (b, name, nbytes, want))
    return why


def case_report_peak(ctx):
    why, text = report(ctx, MLP)
    rows = report_memory(text)
    parts = ["parameters", "gradients", "optimizer state", "other state", "activations, temporaries",
             "workspace", "data batch"]
    missing = [p for p in parts + ["total"] if p not in rows]
    if missing:
        return why + ["the memory section lacks %s" % ", ".join(missing)]
    if sum(rows[p] for p in parts) != rows["total"]:
        why.append("the parts sum to %d, the total is %d" % (sum(rows[p] for p in parts), rows["total"]))
    # fashion_mlp: 784*256 + 256 + 256*128 + 128 + 128*10 + 10 floats; momentum as large; x and y at 64
    nparams = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10
    if rows["parameters"] != 4 * nparams:
        why.append("parameters %d bytes, expected %d" % (rows["parameters"], 4 * nparams))
    if rows["optimizer state"] < 4 * nparams:
        why.append("optimizer state %d bytes, below one momentum buffer per parameter" % rows["optimizer state"])
    if rows["data batch"] != 64 * (784 * 4 + 4):
        why.append("data batch %d bytes, expected %d" % (rows["data batch"], 64 * (784 * 4 + 4)))
    # the gpu programs' plan (--target cuda alone) reports the same way
    w, text = report(ctx, MLP, "--target", "cuda")
    why += w
    g = report_memory(text)
    if not text.startswith("mlc report: FashionMLP") or "gpu programs" not in text.splitlines()[0]:
        why.append("--target cuda: the header does not say the gpu programs")
    if any(v < 0 for v in g.values()) or sum(g.get(p, 0) for p in parts) != g.get("total"):
        why.append("--target cuda: parts %s" % g)
    return why


def case_report_fit(ctx):
    why = []
    for size, limit in (("64M", 64 << 20), ("1G", 1 << 30)):
        w, text = report(ctx, MLP, "--max-memory", size)
        why += w
        m = re.search(r"^largest batch within ([\d,]+) bytes: (\d+) \(peak ([\d,]+); batch (\d+) needs ([\d,]+)\)$",
                      text, re.M)
        if not m:
            why.append("--max-memory %s: no 'largest batch' line" % size)
            continue
        if int(m.group(1).replace(",", "")) != limit:
            why.append("--max-memory %s read as %s bytes" % (size, m.group(1)))
        b = int(m.group(2))
        peaks = {}
        for x in (b, b + 1):
            w, t = report(ctx, MLP, "--batch", str(x))
            why += w
            peaks[x] = report_memory(t).get("total", -1)
        if not peaks[b] <= limit < peaks[b + 1]:
            why.append("--max-memory %s: batch %d peaks at %d, batch %d at %d" % (size, b, peaks[b], b + 1, peaks[b + 1]))
        if peaks[b] != int(m.group(3).replace(",", "")) or peaks[b + 1] != int(m.group(5).replace(",", "")):
            why.append("the fit line's peaks differ from --batch's totals")
    return why


def case_report_file(ctx):
    d = ctx.scratch("report")
    path = os.path.join(d, "r.txt")
    rc, out, err, _ = ctx.run(["build", SMALL, "--emit", "kir", "-o", "-", "--report=" + path])
    why = []
    expect_rc(why, rc, 0, err)
    if not out.decode().startswith("program "):
        why.append("--report=FILE --emit kir: stdout is not the kernel IR")
    if not os.path.exists(path) or "peak memory of training" not in open(path).read():
        why.append("--report=FILE wrote no report")
    return why


CSV_MODEL = """model Net {
  fc = Linear(2, 1)
  loss(x: f32[B, 2], y: f32[B, 1]) -> f32 {
    return mse(fc(x), y)
  }
}
train Net {
  batch 2
  optimizer sgd(lr = 0.1)
  train_data {
    x = csv("t.csv", cols = [0, 1]%s)
    y = csv("t.csv", cols = [2]%s)
  }
}
"""


def case_csv_numeric_header(ctx):
    """A first row of numbers read as the default header is warned about, with its line."""
    why = []
    d = ctx.scratch("csvhdr")
    runs = [("0.5,1.5,2\n1,2,3\n", "", True),          # data in the header row: warn
            ("0,1,2\n1,2,3\n", "", False),              # pandas' names of unnamed columns
            ("a,b,c\n1,2,3\n", "", False),              # a real header
            ("0.5,1.5,2\n1,2,3\n", ", header = true", False)]  # said explicitly
    for text, arg, warn in runs:
        with open(os.path.join(d, "t.csv"), "w") as f:
            f.write(text)
        m = os.path.join(d, "m.model")
        with open(m, "w") as f:
            f.write(CSV_MODEL % (arg, arg))
        rc, _, err, _ = ctx.run(["check", m])
        expect_rc(why, rc, 0, err)
        got = ("m.model:11:13: warning: the first row of " in err
               and "t.csv is read as its header" in err and "header = false" in err)
        if got != warn:
            why.append("%r%s: warning %s expected; stderr: %s"
                       % (text, arg, "was" if warn else "was not", err.strip()[:300]))
    return why


def scaler_state(ctx, why, model, *extra):
    """The loss scaler's state in `--emit optim` of model: none, or its scale's line."""
    rc, out, err, _ = ctx.run(["build", model, "--emit", "optim"] + list(extra))
    expect_rc(why, rc, 0, err)
    return re.findall(r"^optstate opt\.scaler\.scale : f32$", out.decode(), re.M)


def case_precision_scaler(ctx):
    """--precision f16 brings the dynamic loss scale that `precision f16` in the
    recipe implies, --precision f32 drops an implied one, and a loss_scale the
    recipe writes stays whatever the precision."""
    why = []
    d = ctx.scratch("scaler")
    text = open(MLP).read()
    implied = os.path.join(d, "implied.model")
    with open(implied, "w") as f:
        f.write(text.replace("metric accuracy", "metric accuracy\n  precision f16"))
    written = os.path.join(d, "written.model")
    with open(written, "w") as f:
        f.write(text.replace("metric accuracy", "metric accuracy\n  precision f16\n  loss_scale 128"))
    for model, extra, want in ((MLP, [], False), (MLP, ["--precision", "f16"], True),
                               (MLP, ["--precision", "bf16"], False), (implied, [], True),
                               (implied, ["--precision", "f32"], False), (written, ["--precision", "f32"], True)):
        got = bool(scaler_state(ctx, why, model, *extra))
        if got != want:
            why.append("%s %s: loss scaler %s" % (os.path.basename(model), " ".join(extra) or "(no flag)",
                                                  "present" if got else "missing"))
    if "precision f16" not in open(implied).read():
        why.append("the test's recipe edit did not apply")
    return why


def cases(ctx):
    for s in GRAPH_STAGES + ["kir", "schedule", "memplan", "glue", "ir", "dot"]:
        yield "--emit %s prints its text form" % s, lambda s=s: case_emit(ctx, s, MLP)
    for s in ("codegen", "llvm", "asm"):
        yield "--emit %s prints its text form" % s, lambda s=s: case_emit(ctx, s, SMALL)
    for s in GRAPH_STAGES + ["kir", "schedule", "memplan", "glue"]:
        yield "--dump-after=%s dumps the same text to stderr" % s, lambda s=s: case_dump(ctx, s, MLP)
    yield "--dump-after=codegen dumps the LLVM module", lambda: case_dump(ctx, "codegen", SMALL)
    yield "--dump-after=lower,optim,kir", lambda: case_dump_list(ctx)
    yield "train_step results: printed = kernel IR = linked glue", lambda: case_step_results(ctx)
    yield "accumulate 2: no forward output", lambda: case_accumulate(ctx)
    for args, cmd, text in USAGE_CASES:
        yield "usage error: mlc %s" % " ".join(a.replace("\n", "\\n") for a in args), \
            lambda a=args, c=cmd, t=text: case_usage(ctx, a, c, t)
    yield "usage error: mlc itself", lambda: case_usage_top(ctx)
    for cmd in ("check", "dump-tokens", "dump-ast", "build", "run", "help", "version"):
        yield "mlc %s --help lists only options it accepts" % cmd, lambda c=cmd: case_help(ctx, c)
    yield "-o - is standard output", lambda: case_stdout(ctx)
    yield "/dev/full: exit 1", lambda: case_dev_full(ctx)
    yield "-o onto the input is refused", lambda: case_onto_input(ctx)
    yield "unusable output folders are refused before any stage", lambda: case_bad_dirs(ctx)
    yield "--emit lib: a failed ar or write leaves no archive", lambda: case_lib_failures(ctx)
    yield "--emit lib: a newline in the name reaches no ar script", lambda: case_lib_name(ctx)
    yield "exe, obj, lib: whole files, right modes, no temporaries", lambda: case_binary_outputs(ctx)
    yield "an interrupted build leaves nothing next to its output", lambda: case_interrupted(ctx)
    yield "--verify-each runs the verifiers", lambda: case_verify(ctx)
    yield "-v times every stage", lambda: case_times(ctx)
    yield "mlc run --interp reads .npy with the runtime's reader", lambda: case_run_npy(ctx)
    yield "--report lists every kernel with lines of the file", lambda: case_report_kernels(ctx)
    yield "--report: matmul FLOPs are 2*M*N*K at --batch", lambda: case_report_flops(ctx)
    yield "--report: the peak is the sum of its parts", lambda: case_report_peak(ctx)
    yield "--report --max-memory: peak(B) <= SIZE < peak(B+1)", lambda: case_report_fit(ctx)
    yield "--report=FILE writes it next to the emission", lambda: case_report_file(ctx)
    yield "--conv winograd: which convolutions, -v and --report", lambda: case_conv_winograd(ctx)
    yield "csv: a header row of numbers is warned about", lambda: case_csv_numeric_header(ctx)
    yield "--precision f16 implies the dynamic loss scale, as the recipe's does", \
        lambda: case_precision_scaler(ctx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlc", required=True)
    ap.add_argument("--ir-check", required=True)
    ap.add_argument("--build-type", default="")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("filters", nargs="*", metavar="FILTER")
    opts = ap.parse_args()
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory(prefix="mlc-driver-") as tmp:
        ctx = Ctx(os.path.abspath(opts.mlc), os.path.abspath(opts.ir_check), opts.build_type, opts.timeout, tmp)
        for name, fn in cases(ctx):
            if opts.filters and not any(f in name for f in opts.filters):
                continue
            t0 = time.monotonic()
            try:
                why = fn()
            except Skip as e:
                skipped += 1
                print("[SKIP] %s: %s" % (name, e))
                continue
            if why:
                failed += 1
                print("[FAIL] %s" % name)
                for w in why:
                    print("    " + w)
            else:
                passed += 1
                print("[PASS] %s (%.2f s)" % (name, time.monotonic() - t0))
    if passed + failed + skipped == 0:
        print("[FAIL] no case matches the filter")
        failed = 1
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
