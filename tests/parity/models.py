"""models.py — PyTorch twins of the example models (examples/*.model) and of
the parity-only models in tests/parity/*.model.

Each module is written with torch.nn.functional, step for step like the
.model source, and its parameters carry the same paths as mlc's
(fc1.w, layer1.attn.query.w, ln_f.weight, ...) so one safetensors file
of weights loads into both. Parameter layouts follow compiler/sema/prelude.model:
Linear.w is [out, in] and y = x @ w.T + b; Conv2d.w is [cout, cin, k, k];
LayerNorm has weight/bias; Embedding.w is [n, d].

A model whose PRECISIONS lists 16-bit dtypes is also run with
model.prec = each of them: its products then round both operands of every
forward and backward matmul and convolution to that dtype (RoundedMatmul,
RoundedConv2d), as mlc's `precision bf16 | f16` does; gen.py writes those
results as bf16/... and f16/....

A model's FROZEN names the parameter paths (or path prefixes) that mlc does
not train; gen.py writes no gradient for them. A model whose loss returns
(loss, aux, ..) names the auxiliary values in AUX, as the .model names its
loss's other results; gen.py writes them as f64/aux/NAME and f32/aux/NAME.

EXAMPLES maps each example file name to (model class name, constructor,
make_batch), where make_batch(generator) returns the inputs of `loss` in
signature order as a list of (name, tensor) with the dtypes the .model
signature declares (f32 / i32 / i64). An example is examples/<name>.model
unless SOURCES names another file (the parity cases of tests/parity/cases/,
which exercise one language feature each).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


# ---- prelude blocks -------------------------------------------------------------

class Linear(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.w = nn.Parameter(torch.empty(fout, fin))
        self.b = nn.Parameter(torch.empty(fout))
        nn.init.kaiming_uniform_(self.w, a=math.sqrt(5))
        bound = 1 / math.sqrt(fin)
        nn.init.uniform_(self.b, -bound, bound)

    def forward(self, x):
        return x @ self.w.T + self.b


class Conv2d(nn.Module):
    def __init__(self, cin, cout, k, stride=1, padding=0, dilation=1, groups=1, bias=True):
        super().__init__()
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.w = nn.Parameter(torch.empty(cout, cin // groups, k, k))
        nn.init.kaiming_uniform_(self.w, a=math.sqrt(5))
        self.b = None
        if bias:  # bias=False: bn_cnn's ConvNoBias block
            self.b = nn.Parameter(torch.empty(cout))
            bound = 1 / math.sqrt(cin // groups * k * k)
            nn.init.uniform_(self.b, -bound, bound)

    def forward(self, x):
        return F.conv2d(x, self.w, self.b, stride=self.stride, padding=self.padding,
                        dilation=self.dilation, groups=self.groups)


class LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.d, self.eps = d, eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return F.layer_norm(x, (self.d,), self.weight, self.bias, self.eps)


class BatchNorm2d(nn.Module):
    """Training mode (batch statistics), as mlc's loss computes it."""

    def __init__(self, c, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.register_buffer("running_mean", torch.zeros(c))
        self.register_buffer("running_var", torch.ones(c))

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=True, momentum=self.momentum, eps=self.eps)


class Embedding(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, d))

    def forward(self, idx):
        return F.embedding(idx, self.w)


# ---- precision: products of rounded operands -------------------------------------

def _round(x, dt):
    """x rounded to dtype dt (ties to even) and back: the operand a product reads."""
    return x.to(dt).to(x.dtype)


class RoundedMatmul(torch.autograd.Function):
    """a @ b with a and b rounded to dt; the backward products g @ b^T and
    a^T @ g round their operands (g too) the same way."""

    @staticmethod
    def forward(ctx, a, b, dt):
        ctx.save_for_backward(a, b)
        ctx.dt = dt
        return _round(a, dt) @ _round(b, dt)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        dt = ctx.dt
        gr = _round(g, dt)
        return gr @ _round(b, dt).transpose(-1, -2), _round(a, dt).transpose(-1, -2) @ gr, None


class RoundedConv2d(torch.autograd.Function):
    """conv2d(x, w) (no bias) with x and w rounded to dt; its input and weight
    gradients round dy, w and x the same way."""

    @staticmethod
    def forward(ctx, x, w, stride, padding, dt):
        ctx.save_for_backward(x, w)
        ctx.conf = (stride, padding, dt)
        return F.conv2d(_round(x, dt), _round(w, dt), None, stride=stride, padding=padding)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        stride, padding, dt = ctx.conf
        gr = _round(g, dt)
        gx = torch.nn.grad.conv2d_input(x.shape, _round(w, dt), gr, stride=stride, padding=padding)
        gw = torch.nn.grad.conv2d_weight(_round(x, dt), w.shape, gr, stride=stride, padding=padding)
        return gx, gw, None, None, None


# ---- tests/parity/cases/mixed_precision.model -----------------------------------------

class MixedPrecision(nn.Module):
    PRECISIONS = (torch.bfloat16, torch.float16)

    def __init__(self):
        super().__init__()
        self.prec = None  # None: f32 products; torch.bfloat16 / torch.float16: rounded
        self.conv1 = Conv2d(1, 4, 3, padding=1)
        self.conv2 = Conv2d(4, 8, 3, stride=2, padding=1)
        self.fc1, self.fc2 = Linear(8 * 7 * 7, 32), Linear(32, 10)

    def conv(self, c, x):
        if self.prec is None:
            return c(x)
        y = RoundedConv2d.apply(x, c.w, c.stride, c.padding, self.prec)
        return y + c.b.reshape(1, -1, 1, 1)

    def linear(self, f, x):
        if self.prec is None:
            return f(x)
        return RoundedMatmul.apply(x, f.w.T, self.prec) + f.b

    def forward(self, x):
        h = F.relu(self.conv(self.conv1, x))
        h = F.relu(self.conv(self.conv2, h))
        h = F.relu(self.linear(self.fc1, h.reshape(h.shape[0], -1)))
        return self.linear(self.fc2, h)

    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y.long())


# ---- fashion_mlp.model ----------------------------------------------------------

class FashionMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = Linear(784, 256), Linear(256, 128), Linear(128, 10)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        return self.fc3(h)

    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y.long())


# ---- fashion_cnn.model ----------------------------------------------------------

class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv2d(1, 32, 3, padding=1)
        self.conv2 = Conv2d(32, 64, 3, padding=1)
        self.fc = Linear(64 * 7 * 7, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc(h.reshape(h.shape[0], -1))

    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y.long())


# ---- tests/parity/cases/bn_cnn.model ---------------------------------------------------

class BnCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = Conv2d(1, 8, 3, padding=1, bias=False), BatchNorm2d(8)
        self.conv2, self.bn2 = Conv2d(8, 16, 3, stride=2, padding=1, bias=False), BatchNorm2d(16)
        self.fc = Linear(16 * 3 * 3, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        h = F.avg_pool2d(F.relu(self.bn2(self.conv2(h))), 2)
        return self.fc(h.reshape(h.shape[0], -1))

    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y.long())


# ---- tests/parity/cases/conv_options.model ------------------------------------------

class ConvOptions(nn.Module):
    def __init__(self):
        super().__init__()
        self.grouped = Conv2d(4, 8, 3, stride=2, padding=2, dilation=2, groups=2)
        self.depthwise = Conv2d(8, 8, 3, padding=1, groups=8)
        self.pointwise = Conv2d(8, 6, 1)
        self.fc = Linear(6 * 3 * 3, 5)

    def forward(self, x):
        h = F.relu(self.grouped(x))
        h = torch.tanh(self.depthwise(h)) + h
        h = F.max_pool2d(F.relu(self.pointwise(h)), 2)
        return self.fc(h.reshape(h.shape[0], -1))

    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y.long())


# ---- tests/parity/cases/shape_ops.model ---------------------------------------------

class ShapeOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = Linear(12, 12), Linear(12, 12)
        self.ln = LayerNorm(12)
        self.head = Linear(30, 4)

    def forward(self, x):
        h = self.ln(x)
        u = F.softplus(self.a(h), beta=2.0)
        v = torch.tanh(self.b(h))
        s = torch.softmax(u @ v.transpose(1, 2) / 3.0, dim=-1)
        z = torch.cat([s @ v, u[:, :, 1:12:2], s[:, :, 0:1]], dim=2)
        z = z - z.mean(dim=(1, 2), keepdim=True)
        z = z / torch.sqrt((z * z).mean(dim=2, keepdim=True) + 1e-5)
        p = z.permute(0, 2, 1)
        m = torch.cat([p.max(dim=2).values, p.sum(dim=2)[:, 0:11] * 0.1], dim=1)
        return self.head(F.silu(m))

    def loss(self, x, y):
        o = self.forward(x)
        return (F.binary_cross_entropy_with_logits(o, y)
                + 0.5 * F.mse_loss(torch.sigmoid(o), y))


# ---- regression.model -----------------------------------------------------------

class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.head = Linear(8, 64), Linear(64, 64), Linear(64, 1)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        return self.head(h)

    def loss(self, x, y):
        return F.mse_loss(self.forward(x), y)


# ---- char_transformer.model -----------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.d, self.heads = d, heads
        self.query, self.key = Linear(d, d), Linear(d, d)
        self.value, self.proj = Linear(d, d), Linear(d, d)

    def forward(self, x):
        B, T, d = x.shape
        hd = d // self.heads
        flat = x.reshape(B * T, d)
        q = self.query(flat).reshape(B, T, self.heads, hd).transpose(1, 2)
        k = self.key(flat).reshape(B, T, self.heads, hd).transpose(1, 2)
        v = self.value(flat).reshape(B, T, self.heads, hd).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = torch.where(mask, att, torch.tensor(-1e9, dtype=att.dtype))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2)
        return self.proj(y.reshape(B * T, d)).reshape(B, T, d)


class FeedForward(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc, self.proj = Linear(d, 4 * d), Linear(4 * d, d)

    def forward(self, x):
        B, T, d = x.shape
        h = F.gelu(self.fc(x.reshape(B * T, d)))
        return self.proj(h).reshape(B, T, d)


class TransformerLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.ln2 = LayerNorm(d)
        self.mlp = FeedForward(d)

    def forward(self, x):
        h = x + self.attn(self.ln1(x))
        return h + self.mlp(self.ln2(h))


class CharGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = Embedding(65, 64)
        self.pos = Embedding(64, 64)
        # blocks = [TransformerLayer(64, 4) for i in range(3)]: the state
        # dict keys blocks.0.ln1.weight, ... are mlc's paths.
        self.blocks = nn.ModuleList([TransformerLayer(64, 4) for _ in range(3)])
        self.ln_f = LayerNorm(64)

    def forward(self, idx):
        B, T = idx.shape
        h = self.tok(idx) + F.embedding(torch.arange(T), self.pos.w)
        for b in self.blocks:
            h = b(h)
        h = self.ln_f(h)
        logits = h.reshape(B * T, 64) @ self.tok.w.T
        return logits.reshape(B, T, 65)

    def loss(self, idx, y):
        B, T = idx.shape
        return F.cross_entropy(self.forward(idx).reshape(B * T, 65), y.reshape(B * T))


# ---- frozen_ste.model -----------------------------------------------------------

class Binarize(torch.autograd.Function):
    """binarize with its declared gradient: dy where |x| <= 1, else 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x >= 0).to(x.dtype) * 2.0 - 1.0

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return torch.where(x.abs() <= 1.0, dy, torch.zeros_like(dy))


class Encoder(nn.Module):
    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.fc1, self.fc2 = Linear(d_in, d_hidden), Linear(d_hidden, d_hidden)

    def forward(self, x):
        return F.relu(self.fc2(F.relu(self.fc1(x))))


class BinaryCodes(nn.Module):
    # Not trained, so no gradient: proj is declared `frozen param`, and the
    # training recipe says `freeze backbone`. The gradient with respect to
    # the input x still flows through binarize's declared backward and the
    # frozen backbone (gen.py records it).
    FROZEN = ("proj", "backbone")

    def __init__(self):
        super().__init__()
        self.backbone = Encoder(784, 256)
        # The model initialises proj with normal(0, 0.0625); the parity
        # weights use std 1 so that the values binarize sees fall on both
        # sides of its gradient window |x| <= 1 (with 0.0625 all are inside,
        # and the window's cut would go untested).
        self.proj = nn.Parameter(torch.randn(256, 64), requires_grad=False)
        self.head = Linear(64, 10)

    def pre_codes(self, x):
        return self.backbone(x) @ self.proj

    def forward(self, x):
        return self.head(Binarize.apply(self.pre_codes(x)))

    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y.long())


# ---- tests/parity/cases/rank_generic.model --------------------------------------

class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up, self.down = Linear(d, 2 * d), Linear(2 * d, d)

    def forward(self, x):  # Dropout(0.0) is the identity
        return self.down(F.gelu(self.up(x)))


def rms(x):
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + 1e-6)


class RankGeneric(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = Embedding(11, 8)
        self.ln = LayerNorm(8)
        self.mlp = MLP(8)
        self.head = Linear(8, 11)
        self.bias = Linear(8, 11)

    def forward(self, idx):
        h = self.ln(self.tok(idx))
        h = h + self.mlp(rms(h))
        first = self.bias(h[0, 0])
        return self.head(h) + first

    def loss(self, idx, y):
        B, T = idx.shape
        return F.cross_entropy(self.forward(idx).reshape(B * T, 11), y.reshape(B * T))


# ---- tests/parity/cases/two_heads.model -----------------------------------------

class Body(nn.Module):
    def __init__(self, d_in, d):
        super().__init__()
        self.fc1, self.fc2 = Linear(d_in, d), Linear(d, d)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(h), h


class TwoHeads(nn.Module):
    # loss returns the total and these auxiliary values, in this order
    AUX = ("ce", "mse")

    def __init__(self):
        super().__init__()
        self.body = Body(8, 16)
        self.cls, self.value = Linear(16, 3), Linear(16, 1)

    def forward(self, x):
        h, skip = self.body(x)
        return self.cls(h), self.value(h + skip)

    def loss(self, x, y, t):
        logits, v = self.forward(x)
        ce = F.cross_entropy(logits, y.long())
        m = F.mse_loss(v, t)
        return ce + 0.5 * m, ce, m


# ---- tests/parity/cases/tied_blocks.model ---------------------------------------

class TiedHead(nn.Module):
    def __init__(self, emb):
        super().__init__()
        self.emb = [emb]  # shared, not a submodule: its params stay under tok.*
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, h):
        return (h @ self.emb[0].w.T) * self.scale


class TiedDecoder(nn.Module):
    def __init__(self, enc, d_in):
        super().__init__()
        self.enc = [enc]
        self.b = nn.Parameter(torch.zeros(d_in))

    def forward(self, z):
        return z @ self.enc[0].w + self.b


class TiedBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = Embedding(11, 8)
        self.enc = Linear(8, 4)
        self.dec = TiedDecoder(self.enc, 8)
        self.head = TiedHead(self.tok)

    def forward(self, idx):
        h = self.tok(idx)
        h = h + self.dec(torch.tanh(self.enc(h)))
        return self.head(h)

    def loss(self, idx, y):
        B, T = idx.shape
        return F.cross_entropy(self.forward(idx).reshape(B * T, 11), y.reshape(B * T))


# ---- tests/parity/cases/masked_losses.model ------------------------------------

class MaskedLosses(nn.Module):
    AUX = ("ce", "pad", "smooth", "masked", "sq", "bce")

    def __init__(self):
        super().__init__()
        self.emb = Embedding(11, 8)
        self.head, self.reg, self.cls = Linear(8, 11), Linear(8, 1), Linear(8, 1)

    def forward(self, idx):
        return self.head(self.emb(idx))

    def loss(self, idx, y, y2, m, t, z):
        B, T = idx.shape
        h = self.emb(idx)
        logits = self.head(h).reshape(B * T, 11)
        ce = F.cross_entropy(logits, y.reshape(B * T), ignore_index=0)
        pad = F.cross_entropy(logits, y2.reshape(B * T), ignore_index=-100)
        smooth = F.cross_entropy(logits, y.reshape(B * T), label_smoothing=0.1, ignore_index=0)
        per = F.cross_entropy(logits, y.reshape(B * T), reduction="none")
        mm = m.reshape(B * T)
        masked = (per * mm).sum() / mm.sum()
        sq = F.mse_loss(self.reg(h).reshape(B, T), t, reduction="sum")
        bce = (F.binary_cross_entropy_with_logits(self.cls(h).reshape(B, T), z, reduction="none")
               * m).sum() / m.sum()
        return ce + pad + smooth + masked + 0.1 * sq + bce, ce, pad, smooth, masked, sq, bce


def _masked_batch(g):
    idx = torch.randint(0, 11, (B, T), generator=g)
    y = torch.randint(1, 11, (B, T), generator=g)
    y[:, -2:] = 0                                   # padding, ignored by ignore_index = 0
    y2 = y.clone()
    y2[0, :3] = -100                                # ignored by ignore_index = -100
    m = (torch.rand(B, T, generator=g) > 0.3).float()
    return [("idx", idx), ("y", y), ("y2", y2), ("m", m), ("t", torch.randn(B, T, generator=g)),
            ("z", (torch.rand(B, T, generator=g) > 0.5).float())]


# ---- batches ----------------------------------------------------------------------

B = 4  # batch size of every parity batch (small: the data files are committed)
T = 8  # context length of the transformer batch
BN_B = 64  # bn_cnn's batch: large enough that its batch statistics test the sums


def _pixels(g, *shape):
    return torch.rand(*shape, generator=g)


def _objects(g, n):
    """Images like Fashion-MNIST's: an object (random pixels, 20x20) on a
    uniform background (half of the image). The background is 0.25, not 0,
    so that a convolution without bias gives one constant over it: a float32
    sum that adds one element at a time rounds the same way again and again
    on such runs, which is how real images made batch statistics drift."""
    x = torch.full((n, 1, 28, 28), 0.25)
    x[:, :, 4:24, 4:24] = torch.rand(n, 1, 20, 20, generator=g)
    return x


def _labels(g, n, dtype=torch.int32, batch=B):
    return torch.randint(0, n, (batch,), generator=g).to(dtype)


EXAMPLES = {
    "fashion_mlp": ("FashionMLP", FashionMLP,
                    lambda g: [("x", _pixels(g, B, 784)), ("y", _labels(g, 10))]),
    "fashion_cnn": ("FashionCNN", FashionCNN,
                    lambda g: [("x", _pixels(g, B, 1, 28, 28)), ("y", _labels(g, 10))]),
    "regression": ("Regressor", Regressor,
                   lambda g: [("x", torch.randn(B, 8, generator=g)),
                              ("y", torch.randn(B, 1, generator=g))]),
    "char_transformer": ("CharGPT", CharGPT,
                         lambda g: [("idx", torch.randint(0, 65, (B, T), generator=g)),
                                    ("y", torch.randint(0, 65, (B, T), generator=g))]),
    "frozen_ste": ("BinaryCodes", BinaryCodes,
                   lambda g: [("x", _pixels(g, B, 784)), ("y", _labels(g, 10))]),
    "bn_cnn": ("BnCNN", BnCNN,
               lambda g: [("x", _objects(g, BN_B)), ("y", _labels(g, 10, batch=BN_B))]),
    "rank_generic": ("RankGeneric", RankGeneric,
                     lambda g: [("idx", torch.randint(0, 11, (B, T), generator=g)),
                                ("y", torch.randint(0, 11, (B, T), generator=g))]),
    "two_heads": ("TwoHeads", TwoHeads,
                  lambda g: [("x", torch.randn(B, 8, generator=g)), ("y", _labels(g, 3)),
                             ("t", torch.randn(B, 1, generator=g))]),
    "tied_blocks": ("TiedBlocks", TiedBlocks,
                    lambda g: [("idx", torch.randint(0, 11, (B, T), generator=g)),
                               ("y", torch.randint(0, 11, (B, T), generator=g))]),
    "masked_losses": ("MaskedLosses", MaskedLosses, _masked_batch),
    "shape_ops": ("ShapeOps", ShapeOps,
                  lambda g: [("x", torch.randn(B, 5, 12, generator=g)),
                             ("y", torch.rand(B, 4, generator=g))]),
    "conv_options": ("ConvOptions", ConvOptions,
                     lambda g: [("x", torch.randn(B, 4, 11, 11, generator=g)), ("y", _labels(g, 5))]),
    "mixed_precision": ("MixedPrecision", MixedPrecision,
                        lambda g: [("x", _pixels(g, B, 1, 14, 14)), ("y", _labels(g, 10))]),
}

SOURCES = {
    "masked_losses": "tests/parity/cases/masked_losses.model",
    "bn_cnn": "tests/parity/cases/bn_cnn.model",
    "tied_blocks": "tests/parity/cases/tied_blocks.model",
    "rank_generic": "tests/parity/cases/rank_generic.model",
    "two_heads": "tests/parity/cases/two_heads.model",
    "mixed_precision": "tests/parity/cases/mixed_precision.model",
    "conv_options": "tests/parity/cases/conv_options.model",
    "shape_ops": "tests/parity/cases/shape_ops.model",
}
