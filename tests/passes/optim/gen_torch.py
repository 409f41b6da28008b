#!/usr/bin/python3
"""Reference data for tests/passes/test_optim.c, from torch.optim, torch.optim.lr_scheduler
and torch.nn.utils.clip_grad_norm_ in float64.

Run from the repository root with /usr/bin/python3 (torch 1.13):

    /usr/bin/python3 tests/passes/optim/gen_torch.py

Writes tests/passes/optim/data.txt (initial weights and the batch sequence), one
tests/passes/optim/CASE.txt per optimizer case (the recipe, then the loss, pre-clip
grad norm and lr of every step and the final params) and
tests/passes/optim/plateau.txt. Every line is `key n v1 .. vn` (%.17g), so the C
test reads the recipe from the same file the expectations come from. The
model matches tests/passes/optim/mlp.ir:

    logits = tanh((x * pre.s) @ fc1.w + fc1.b) @ fc2.w + fc2.b   (pre.s frozen)
    loss   = cross_entropy(logits, y)

Parameter groups (recipe.group: the group of each of fc1.w, fc1.b, fc2.w,
fc2.b, -1 for the default; groupK.*: group K's hyper-parameters) become
torch.optim param_groups, the default group first, each group's lr the
optimizer's times its lr_scale. Schedules are composed as docs/design/optim.md says: warmup + cosine/linear
as a LambdaLR over optimizer steps, step/multistep/exponential as StepLR,
MultiStepLR, ExponentialLR stepped once per epoch (every steps_per_epoch
optimizer steps).
"""
import math
import os

import torch

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)))
STEPS, B, D, H, C = 10, 5, 4, 6, 3
OPT = {"sgd": 0, "adam": 1, "adamw": 2}
SCHED = {"constant": 0, "step": 1, "multistep": 2, "exponential": 3, "cosine": 4, "linear": 5,
         "plateau": 6}


def put(f, key, vals):
    vals = [float(v) for v in (vals.flatten().tolist() if torch.is_tensor(vals) else vals)]
    f.write("%s %d %s\n" % (key, len(vals), " ".join("%.17g" % v for v in vals)))


def make_data():
    g = torch.Generator().manual_seed(1234)
    init = {
        "pre.s": 0.5 + torch.rand(D, generator=g),
        "fc1.w": torch.randn(D, H, generator=g) * 0.8,
        "fc1.b": torch.randn(H, generator=g) * 0.1,
        "fc2.w": torch.randn(H, C, generator=g) * 0.8,
        "fc2.b": torch.randn(C, generator=g) * 0.1,
    }
    xs = [torch.randn(B, D, generator=g) * 2 for _ in range(2 * STEPS)]
    ys = [torch.randint(0, C, (B,), generator=g) for _ in range(2 * STEPS)]
    return init, xs, ys


def loss_fn(p, x, y):
    h = torch.tanh((x * p["pre.s"]) @ p["fc1.w"] + p["fc1.b"])
    return torch.nn.functional.cross_entropy(h @ p["fc2.w"] + p["fc2.b"], y)


def schedule(opt, r):
    s = r["sched"]
    if s in ("cosine", "linear"):
        W, N, lr, lo = r["warmup"], r["epochs"] * r["steps_per_epoch"], r["lr"], r["min_lr"]
        T = max(N - W, 1)

        def factor(step):
            if W > 0 and step < W:
                return step / W
            p = min((step - W) / T, 1.0)
            if s == "cosine":
                return (lo + (lr - lo) * (1 + math.cos(math.pi * p)) / 2) / lr
            return (lo + (lr - lo) * (1 - p)) / lr
        return torch.optim.lr_scheduler.LambdaLR(opt, factor), False
    if s == "step":
        return torch.optim.lr_scheduler.StepLR(opt, r["step_size"], r["gamma"]), True
    if s == "multistep":
        return torch.optim.lr_scheduler.MultiStepLR(opt, r["milestones"], r["gamma"]), True
    if s == "exponential":
        return torch.optim.lr_scheduler.ExponentialLR(opt, r["gamma"]), True
    return None, False


TRAIN = ("fc1.w", "fc1.b", "fc2.w", "fc2.b")
GROUP_KEYS = ("lr_scale", "momentum", "dampening", "weight_decay", "nesterov", "beta1", "beta2", "eps")


def group_of(r, k):
    for i, g in enumerate(r["groups"]):
        if k in g["params"]:
            return i
    return -1


def param_groups(r, p):
    """torch.optim param_groups: the default group (the params no group
    names, the optimizer's hyper-parameters) first, then each group with its
    own; a group's lr is the optimizer's times its lr_scale."""
    default = [p[k] for k in TRAIN if group_of(r, k) < 0]
    out = [{"params": default}] if default else []
    for g in r["groups"]:
        d = {"params": [p[k] for k in TRAIN if k in g["params"]], "lr": r["lr"] * g.get("lr_scale", 1.0)}
        for key in ("momentum", "dampening", "weight_decay", "nesterov"):
            if key in g:
                d[key] = g[key]
        if "beta1" in g or "beta2" in g:
            d["betas"] = (g.get("beta1", r["beta1"]), g.get("beta2", r["beta2"]))
        if "eps" in g:
            d["eps"] = g["eps"]
        out.append(d)
    return out


def base_lr(r, opt):
    """The scheduled lr without a group's multiplier: the default group's."""
    if any(group_of(r, k) < 0 for k in TRAIN):
        return opt.param_groups[0]["lr"]
    return opt.param_groups[0]["lr"] / r["groups"][0].get("lr_scale", 1.0)


def run_case(name, r, init, xs, ys):
    p = {k: v.clone().requires_grad_(k != "pre.s") for k, v in init.items()}
    train = [p[k] for k in TRAIN]
    groups = param_groups(r, p)
    if r["opt"] == "sgd":
        opt = torch.optim.SGD(groups, lr=r["lr"], momentum=r["momentum"], dampening=r["dampening"],
                              nesterov=r["nesterov"], weight_decay=r["weight_decay"], foreach=False)
    else:
        cls = torch.optim.Adam if r["opt"] == "adam" else torch.optim.AdamW
        opt = cls(groups, lr=r["lr"], betas=(r["beta1"], r["beta2"]), eps=r["eps"],
                  weight_decay=r["weight_decay"], foreach=False)
    sched, per_epoch = schedule(opt, r)
    K = r["accumulate"]
    losses, norms, lrs = [], [], []
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for k in range(K):
            loss = loss_fn(p, xs[step * K + k], ys[step * K + k])
            (loss / K).backward()
            total += loss.item()
        losses.append(total / K)
        if r["clip"] > 0:
            norms.append(torch.nn.utils.clip_grad_norm_(train, r["clip"]).item())
        else:
            norms.append(torch.norm(torch.stack([t.grad.norm(2) for t in train]), 2).item())
        lrs.append(base_lr(r, opt))
        opt.step()
        if sched is not None and (not per_epoch or (step + 1) % r["steps_per_epoch"] == 0):
            sched.step()
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        for key in ("lr", "momentum", "dampening", "weight_decay", "beta1", "beta2", "eps", "step_size",
                    "gamma", "warmup", "min_lr", "epochs", "steps_per_epoch", "clip", "accumulate"):
            put(f, "recipe." + key, [r[key]])
        put(f, "recipe.opt", [OPT[r["opt"]]])
        put(f, "recipe.nesterov", [1 if r["nesterov"] else 0])
        put(f, "recipe.sched", [SCHED[r["sched"]]])
        put(f, "recipe.milestones", r["milestones"])
        put(f, "recipe.ngroups", [len(r["groups"])])
        put(f, "recipe.group", [group_of(r, k) for k in TRAIN])
        for i, g in enumerate(r["groups"]):
            for key in GROUP_KEYS:
                v = g.get(key, 1.0 if key == "lr_scale" else r[key])
                put(f, "group%d.%s" % (i, key), [1 if v is True else 0 if v is False else v])
        put(f, "loss", losses)
        put(f, "grad_norm", norms)
        put(f, "lr", lrs)
        for k in ("fc1.w", "fc1.b", "fc2.w", "fc2.b", "pre.s"):
            put(f, "final." + k, p[k].detach())


def recipe(**kw):
    r = dict(opt="sgd", lr=0.1, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0,
             beta1=0.9, beta2=0.999, eps=1e-8, sched="constant", step_size=1, milestones=[],
             gamma=0.1, warmup=0, min_lr=0.0, epochs=2, steps_per_epoch=5, clip=1.0, accumulate=1,
             groups=[])
    r.update(kw)
    return r


CASES = {
    "sgd_nesterov": recipe(opt="sgd", lr=0.2, momentum=0.9, nesterov=True, weight_decay=1e-4,
                           sched="cosine", warmup=3, min_lr=0.01),
    "adam": recipe(opt="adam", lr=0.05, weight_decay=0.01, sched="cosine", warmup=3),
    "adamw": recipe(opt="adamw", lr=0.05, weight_decay=0.1, beta2=0.99, sched="cosine", warmup=3,
                    min_lr=0.001),
    "accum_sgd_linear": recipe(opt="sgd", lr=0.3, momentum=0.9, dampening=0.1, weight_decay=1e-3,
                               sched="linear", warmup=2, min_lr=0.005, accumulate=2),
    "sgd_step": recipe(opt="sgd", lr=0.3, momentum=0.5, sched="step", step_size=1, gamma=0.5,
                       steps_per_epoch=3, epochs=4),
    "adam_multistep": recipe(opt="adam", lr=0.05, sched="multistep", milestones=[1, 3], gamma=0.3,
                             steps_per_epoch=2, epochs=5, clip=0.5),
    "adamw_exponential": recipe(opt="adamw", lr=0.05, sched="exponential", gamma=0.8,
                                steps_per_epoch=2, epochs=5, clip=0.0),
    "sgd_constant": recipe(opt="sgd", lr=0.1, clip=0.0),
    # parameter groups: no weight decay on the biases, a head with its own
    # lr multiplier and betas (AdamW); SGD groups with their own momentum,
    # dampening, nesterov and weight decay
    "adamw_groups": recipe(opt="adamw", lr=0.05, weight_decay=0.1, sched="cosine", warmup=3,
                           groups=[dict(params=("fc1.b", "fc2.b"), weight_decay=0.0),
                                   dict(params=("fc2.w",), lr_scale=0.5, beta2=0.95, eps=1e-6)]),
    "sgd_groups": recipe(opt="sgd", lr=0.2, momentum=0.9, weight_decay=1e-3, sched="linear",
                         warmup=2, min_lr=0.01,
                         groups=[dict(params=("fc1.w", "fc1.b"), lr_scale=0.25, momentum=0.5,
                                      dampening=0.1),
                                 dict(params=("fc2.b",), momentum=0.8, nesterov=True,
                                      weight_decay=0.0)]),
}


def plateau():
    w = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    sch = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2)
    metrics = [1.0, 0.9, 0.95, 0.9, 0.91, 0.8, 0.85, 0.85, 0.85, 0.7, 0.75, 0.8, 0.9, 0.99]
    lrs = []
    for m in metrics:
        sch.step(m)
        lrs.append(opt.param_groups[0]["lr"])
    with open(os.path.join(OUT, "plateau.txt"), "w") as f:
        put(f, "recipe.lr", [0.1])
        put(f, "recipe.factor", [0.5])
        put(f, "recipe.patience", [2])
        put(f, "metric", metrics)
        put(f, "lr", lrs)


def main():
    init, xs, ys = make_data()
    with open(os.path.join(OUT, "data.txt"), "w") as f:
        for k, v in init.items():
            put(f, "init." + k, v)
        for i in range(2 * STEPS):
            put(f, "x%d" % i, xs[i])
            put(f, "y%d" % i, ys[i])
    for name, r in CASES.items():
        run_case(name, r, init, xs, ys)
    plateau()


if __name__ == "__main__":
    main()
