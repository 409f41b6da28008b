// memplan.c — the memory-plan pass (kir_plan_memory, memplan.h): every
// temporary of a program gets its byte offset in the scratch block, the
// program the block's size. Backends print the offsets; the verifier checks
// them against the temporaries' lifetimes (kir_verify.c).
//
// Liveness: a temporary is live from the first kernel that takes it to the
// last (kernels run one after another; the statements that run at once
// inside a kernel are all inside that range). Two temporaries live at once
// get disjoint bytes; others may share. Every size is a multiple of 64
// bytes, align64(bytes(t)) (align64(x) = ((x + 63) / 64) * 64), and so is
// every offset.
//
// Sizes are polynomials over the syms, and one plan serves every value of
// them, so offsets are polynomials too: terms coef * atom * atom..., atoms
// being syms or opaque subexpressions (a floor division, an alignment that
// does not fold), all of them >= 0. They are written back in a canonical
// order, so `B*1024 + B*512` reads `(B * 1536)`. A size whose every
// coefficient is a multiple of 64 needs no rounding; others get an align64
// atom A, known to lie in [x, x + 63] for its x.
//
// The placement is greedy by size (largest first at a reference point,
// every sym 64), as best-fit planners for fixed sizes are, made valid for
// every value of the syms. An offset is the max of a few polynomials
// (MaxSet). Each temporary t finds the lowest gap, at the reference point,
// between the placed temporaries live with it (its conflicts); the ones
// below the gap make its offset, the max of their ends, which covers them
// for every value of the syms by construction. A conflict above must be
// provably at or above t's end; one that is not joins those below (t moves
// up), until every conflict is below or provably above. Proofs: p <= q
// when q - p, with each align64 atom replaced by the bound that makes its
// term smallest, has no negative coefficient (atoms being >= 0); they are
// tried at four points first (every sym 64, 1, 1000, and distinct small
// values), and skipped where an order is known already: a conflict whose
// end another conflict below t covers adds nothing to t's offset, and a
// conflict above one proved above t is above t too. A set that grows past
// MP_MAX_SET elements merges the two whose coefficient-wise max (at least
// each of them) grows least. The scratch size is the max of every end.
//
// What it gives at the reference point (docs/design/kir.md, "The memory
// plan", has the table): within 2 % of the most bytes live at one kernel
// for fashion_mlp's and fashion_cnn's train_step, 7 % for char_transformer's
// (two syms, B and T, whose polynomials compare less often).
//
// Input: a KirProgram (normally scheduled: recipes add temporaries). Output:
// KirBuf.offset of every temporary and KirProgram.scratch.
#include "memplan.h"

#include <stdlib.h>
#include <string.h>

enum { MP_MAX_DEGREE = 8, MP_POINTS = 4 };

typedef struct Term {
  int64_t coef;
  int n;                    // atoms in the product; 0: the constant term
  int atom[MP_MAX_DEGREE];  // ascending atom ids
} Term;

typedef struct Poly {
  int n, cap;
  Term *t;
  bool cached;             // v holds its values at the plan's points
  int64_t v[MP_POINTS];
} Poly;

typedef struct Plan {
  KirProgram *p;
  Vec atoms;                // KExpr*: atom id -> its expression (syms as KE_SYM)
  Vec lo;                   // Poly*: atom id -> x of an align64 atom (in [x, x + 63]); NULL: none
  Vec ref;                  // int64_t[MP_POINTS] boxed: atom id -> its values at the points
  int64_t *syms[MP_POINTS]; // the points: [0] the reference, every argument-bound sym 64
  bool have[MP_POINTS];
  struct Poly zero;         // 0, shared (never changed)
  // place()'s work arrays, one per temporary
  struct Temp **w_cs, **w_up;
  bool *w_below;
  uint64_t *w_proved;
} Plan;

// ---- polynomials -----------------------------------------------------------------------------------
static int atom_id(Plan *pl, KExpr *e) {
  for (int i = 0; i < pl->atoms.len; i++)
    if (kir_expr_equal(VEC_AT(pl->atoms, KExpr, i), e)) return i;
  vec_push(pl->p->arena, &pl->atoms, e);
  vec_push(pl->p->arena, &pl->lo, NULL);
  int64_t *v = arena_alloc(pl->p->arena, sizeof *v * MP_POINTS);
  for (int k = 0; k < MP_POINTS; k++)
    if (!pl->have[k] || !kir_eval_i64(e, pl->syms[k], &v[k])) v[k] = 0;
  vec_push(pl->p->arena, &pl->ref, v);
  return pl->atoms.len - 1;
}

static inline bool same_monomial(const Term *a, const Term *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->atom[i] != b->atom[i]) return false;
  return true;
}

// Adds coef * (the monomial of m) to p, merging like terms.
static void poly_addterm(Plan *pl, Poly *p, const Term *m, int64_t coef) {
  p->cached = false;
  for (int i = 0; i < p->n; i++)
    if (same_monomial(&p->t[i], m)) {
      p->t[i].coef += coef;
      return;
    }
  if (p->n == p->cap) {
    Term *t = arena_alloc(pl->p->arena, sizeof(Term) * (size_t)(p->cap * 2 + 4));
    if (p->n) memcpy(t, p->t, sizeof(Term) * (size_t)p->n);
    p->t = t, p->cap = p->cap * 2 + 4;
  }
  p->t[p->n] = *m;
  p->t[p->n++].coef = coef;
}

static Poly poly_const(Plan *pl, int64_t v) {
  Poly p = {0};
  Term one = {0};
  poly_addterm(pl, &p, &one, v);
  return p;
}

static Poly poly_atom(Plan *pl, KExpr *e) {
  Poly p = {0};
  Term m = {.n = 1, .atom = {atom_id(pl, e)}};
  poly_addterm(pl, &p, &m, 1);
  return p;
}

static void poly_add(Plan *pl, Poly *p, const Poly *q, int64_t scale) {
  for (int i = 0; i < q->n; i++) poly_addterm(pl, p, &q->t[i], q->t[i].coef * scale);
}

// The product of two monomials (atoms merged in order), or false when the
// degree would pass MP_MAX_DEGREE.
static bool mono_mul(const Term *a, const Term *b, Term *out) {
  if (a->n + b->n > MP_MAX_DEGREE) return false;
  int i = 0, j = 0;
  out->n = 0;
  while (i < a->n || j < b->n)
    out->atom[out->n++] = j >= b->n || (i < a->n && a->atom[i] <= b->atom[j]) ? a->atom[i++] : b->atom[j++];
  return true;
}

static bool poly_mul(Plan *pl, const Poly *a, const Poly *b, Poly *out) {
  *out = (Poly){0};
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++) {
      Term m;
      if (!mono_mul(&a->t[i], &b->t[j], &m)) return false;
      poly_addterm(pl, out, &m, a->t[i].coef * b->t[j].coef);
    }
  return true;
}

// An i64 expression as a polynomial: + - * of constants and syms expand,
// anything else is an atom.
static Poly poly_of(Plan *pl, KExpr *e) {
  if (e->kind == KE_CONST) return poly_const(pl, e->i);
  if (e->kind == KE_BINARY && (e->bin == KB_ADD || e->bin == KB_SUB || e->bin == KB_MUL)) {
    Poly a = poly_of(pl, e->a), b = poly_of(pl, e->b), r;
    if (e->bin != KB_MUL) {
      poly_add(pl, &a, &b, e->bin == KB_ADD ? 1 : -1);
      return a;
    }
    if (poly_mul(pl, &a, &b, &r)) return r;
  }
  return poly_atom(pl, e);
}

static KExpr *term_expr(Plan *pl, const Term *m, int64_t coef) {
  KExpr *e = NULL;
  for (int i = 0; i < m->n; i++) {
    KExpr *a = VEC_AT(pl->atoms, KExpr, m->atom[i]);
    e = e ? kir_bin(pl->p, KB_MUL, e, a) : a;
  }
  return e ? kir_bin(pl->p, KB_MUL, e, kir_idx(pl->p, coef)) : kir_idx(pl->p, coef);
}

// Terms in order of their first atom ids (the constant last); negative
// coefficients as subtractions.
static int term_cmp(const void *x, const void *y) {
  const Term *a = x, *b = y;
  if (!a->n || !b->n) return !a->n - !b->n;
  for (int i = 0; i < a->n && i < b->n; i++)
    if (a->atom[i] != b->atom[i]) return a->atom[i] - b->atom[i];
  return a->n - b->n;
}

static KExpr *poly_expr(Plan *pl, Poly *p) {
  qsort(p->t, (size_t)p->n, sizeof(Term), term_cmp);
  KExpr *e = NULL;
  for (int i = 0; i < p->n; i++) {
    const Term *m = &p->t[i];
    if (!m->coef) continue;
    if (!e) e = term_expr(pl, m, m->coef);
    else if (m->coef < 0) e = kir_bin(pl->p, KB_SUB, e, term_expr(pl, m, -m->coef));
    else e = kir_bin(pl->p, KB_ADD, e, term_expr(pl, m, m->coef));
  }
  return e ? e : kir_idx(pl->p, 0);
}

// align64(bytes): bytes itself when every coefficient is a multiple of 64.
static Poly align64(Plan *pl, Poly bytes) {
  bool aligned = true;
  for (int i = 0; i < bytes.n; i++) aligned &= bytes.t[i].coef % 64 == 0;
  if (aligned) return bytes;
  KirProgram *p = pl->p;
  KExpr *x = kir_bin(p, KB_ADD, poly_expr(pl, &bytes), kir_idx(p, 63));
  KExpr *up = kir_bin(p, KB_MUL, kir_bin(p, KB_DIV, x, kir_idx(p, 64)), kir_idx(p, 64));
  if (up->kind == KE_CONST) return poly_const(pl, up->i);
  Poly a = poly_atom(pl, up);
  Poly *lo = arena_alloc(p->arena, sizeof *lo);
  *lo = bytes;
  pl->lo.data[a.t[0].atom[0]] = lo;
  return a;
}

static int64_t poly_at(const Plan *pl, const Poly *p, int k);
// ---- proofs and the reference point ----------------------------------------------------------------
enum { MP_MAX_TERMS = 256 };

// A polynomial under construction on the stack (the proofs make millions).
typedef struct Acc {
  int n;
  bool full; // more than MP_MAX_TERMS: not provable
  Term t[MP_MAX_TERMS];
} Acc;

static void acc_add(Acc *a, const Term *m, int64_t coef) {
  if (!coef) return;
  for (int i = 0; i < a->n; i++)
    if (same_monomial(&a->t[i], m)) {
      a->t[i].coef += coef;
      return;
    }
  if (a->n == MP_MAX_TERMS) {
    a->full = true;
    return;
  }
  a->t[a->n] = *m;
  a->t[a->n++].coef = coef;
}

// q - p - r >= 0 for every value of the syms (r may be NULL): each term
// c * A of an align64 atom A in [x, x + 63] becomes c * x (c > 0) or
// c * (x + 63) (c < 0), which is no larger; then every coefficient must be
// >= 0, all atoms being >= 0.
static bool provably_ge(const Plan *pl, const Poly *q, const Poly *p, const Poly *r) {
  for (int k = 0; k < MP_POINTS; k++) // a value that refutes it, first (cheap)
    if (pl->have[k] && poly_at(pl, q, k) < poly_at(pl, p, k) + (r ? poly_at(pl, r, k) : 0)) return false;
  Acc a, b;
  a.n = b.n = 0, a.full = b.full = false;
  for (int i = 0; i < q->n; i++) acc_add(&a, &q->t[i], q->t[i].coef);
  for (int i = 0; i < p->n; i++) acc_add(&a, &p->t[i], -p->t[i].coef);
  for (int i = 0; r && i < r->n; i++) acc_add(&a, &r->t[i], -r->t[i].coef);
  for (int i = 0; i < a.n; i++) {
    const Term *m = &a.t[i];
    const Poly *lo = m->n == 1 ? VEC_AT(pl->lo, Poly, m->atom[0]) : NULL;
    if (!m->coef) continue;
    if (!lo) {
      acc_add(&b, m, m->coef);
      continue;
    }
    for (int j = 0; j < lo->n; j++) acc_add(&b, &lo->t[j], lo->t[j].coef * m->coef);
    if (m->coef < 0) acc_add(&b, &(Term){0}, 63 * m->coef);
  }
  if (a.full || b.full) return false;
  for (int i = 0; i < b.n; i++)
    if (b.t[i].coef < 0) return false;
  return true;
}

// The value at point k (0 where an atom does not evaluate); point 0 is the
// reference point.
static int64_t poly_at(const Plan *pl, const Poly *cp, int k) {
  Poly *p = (Poly *)cp; // the cache only
  if (!p->cached) {
    for (int q = 0; q < MP_POINTS; q++) {
      int64_t v = 0;
      for (int i = 0; i < p->n; i++) {
        int64_t x = p->t[i].coef;
        for (int j = 0; j < p->t[i].n; j++) x *= VEC_AT(pl->ref, int64_t, p->t[i].atom[j])[q];
        v += x;
      }
      p->v[q] = v;
    }
    p->cached = true;
  }
  return p->v[k];
}

static int64_t poly_ref(const Plan *pl, const Poly *p) { return poly_at(pl, p, 0); }

static Poly poly_copy(Plan *pl, const Poly *q) {
  Poly p = {0};
  poly_add(pl, &p, q, 1);
  return p;
}

static bool poly_has(const Poly *p, const Term *m) {
  for (int i = 0; i < p->n; i++)
    if (same_monomial(&p->t[i], m)) return true;
  return false;
}

// The coefficient-wise max of p and q: at least each of them, every
// monomial being >= 0 (and a multiple of 64 when they are).
static Poly poly_cmax(Plan *pl, const Poly *p, const Poly *q) {
  Poly r = poly_copy(pl, p);
  for (int j = 0; j < q->n; j++) {
    bool found = false;
    for (int i = 0; i < r.n && !found; i++)
      if (same_monomial(&r.t[i], &q->t[j])) {
        found = true;
        if (q->t[j].coef > r.t[i].coef) r.t[i].coef = q->t[j].coef;
      }
    if (!found && q->t[j].coef > 0) poly_addterm(pl, &r, &q->t[j], q->t[j].coef);
  }
  for (int i = 0; i < r.n; i++)
    if (r.t[i].coef < 0 && !poly_has(q, &r.t[i])) r.t[i].coef = 0;
  r.cached = false;
  return r;
}

static int64_t mono_ref(const Plan *pl, const Term *m) {
  int64_t x = 1;
  for (int j = 0; j < m->n; j++) x *= VEC_AT(pl->ref, int64_t, m->atom[j])[0];
  return x;
}

// poly_cmax(p, q) at the reference point, without making it.
static int64_t cmax_ref(const Plan *pl, const Poly *p, const Poly *q) {
  int64_t v = 0;
  for (int i = 0; i < p->n; i++) {
    int64_t c = 0; // q's coefficient (0: none)
    for (int j = 0; j < q->n; j++)
      if (same_monomial(&p->t[i], &q->t[j])) {
        c = q->t[j].coef;
        break;
      }
    if (p->t[i].coef > c) c = p->t[i].coef;
    v += c * mono_ref(pl, &p->t[i]);
  }
  for (int j = 0; j < q->n; j++)
    if (!poly_has(p, &q->t[j]) && q->t[j].coef > 0) v += q->t[j].coef * mono_ref(pl, &q->t[j]);
  return v;
}

// ---- offsets: maxima of polynomials ------------------------------------------------------------------
// An offset is the max of a few polynomials (a temporary sits above the
// ends of those below it, which need not be comparable for every value of
// the syms); elements another one provably covers are dropped.
enum { MP_MAX_SET = 6 };

typedef struct MaxSet {
  int n;
  Poly p[MP_MAX_SET];
} MaxSet;

static int64_t ms_ref(const Plan *pl, const MaxSet *m) {
  int64_t v = 0;
  for (int i = 0; i < m->n; i++) {
    int64_t x = poly_ref(pl, &m->p[i]);
    if (x > v) v = x;
  }
  return v;
}

// max(a) + s <= max(b) for every value of the syms: each element of a (plus
// s) is below some element of b (s may be NULL).
static bool ms_le(const Plan *pl, const MaxSet *a, const Poly *s, const MaxSet *b) {
  for (int i = 0; i < a->n; i++) {
    bool below = false;
    for (int j = 0; j < b->n && !below; j++) below = provably_ge(pl, &b->p[j], &a->p[i], s);
    if (!below) return false;
  }
  return true;
}

static void ms_add(Plan *pl, MaxSet *m, const Poly *q) {
  for (int i = 0; i < m->n; i++)
    if (provably_ge(pl, &m->p[i], q, NULL)) return;
  int k = 0;
  for (int i = 0; i < m->n; i++)
    if (!provably_ge(pl, q, &m->p[i], NULL)) m->p[k++] = m->p[i];
  m->n = k;
  if (m->n == MP_MAX_SET) {
    // too many: the two whose cmax grows least at the reference point become it
    int a = 0, b = 1;
    int64_t best = INT64_MAX;
    for (int i = 0; i < m->n; i++)
      for (int j = i + 1; j < m->n; j++) {
        int64_t x = poly_ref(pl, &m->p[i]) > poly_ref(pl, &m->p[j]) ? poly_ref(pl, &m->p[i]) : poly_ref(pl, &m->p[j]);
        int64_t c = cmax_ref(pl, &m->p[i], &m->p[j]) - x;
        if (c < best) best = c, a = i, b = j;
      }
    m->p[a] = poly_cmax(pl, &m->p[a], &m->p[b]);
    m->p[b] = m->p[--m->n];
    ms_add(pl, m, q);
    return;
  }
  m->p[m->n++] = *q; // shared: placed polynomials are not changed again (poly_expr only sorts terms)
}

static KExpr *ms_expr(Plan *pl, MaxSet *m) {
  if (!m->n) return kir_idx(pl->p, 0);
  KExpr *e = poly_expr(pl, &m->p[0]);
  for (int i = 1; i < m->n; i++) e = kir_bin(pl->p, KB_MAX, e, poly_expr(pl, &m->p[i]));
  return e;
}

// ---- the plan ---------------------------------------------------------------------------------------
typedef struct Temp {
  int buf, first, last; // live over kernels [first, last]; unused: both the kernel count
  Poly size;            // align64(bytes)
  MaxSet off, end;
  int64_t rsize, roff, rend; // at the reference point
  bool placed;
  uint64_t *covers;     // bit per temporary (ts index) whose end is provably <= this one's offset
} Temp;

static bool live_together(const Temp *a, const Temp *b) { return a->first <= b->last && b->first <= a->last; }

// Largest first at the reference point; then by first use, then buffer.
static int temp_cmp(const void *x, const void *y) {
  const Temp *a = x, *b = y;
  if (a->rsize != b->rsize) return a->rsize > b->rsize ? -1 : 1;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  return a->buf - b->buf;
}

static int end_cmp(const void *x, const void *y) {
  const Temp *a = *(Temp *const *)x, *b = *(Temp *const *)y;
  return (a->rend < b->rend) - (a->rend > b->rend);
}

static int off_cmp(const void *x, const void *y) {
  const Temp *a = *(Temp *const *)x, *b = *(Temp *const *)y;
  return (a->roff > b->roff) - (a->roff < b->roff);
}

// The lowest gap at the reference point between the placed temporaries
// live with t (cs[0..nc), sorted here by offset) where t fits: 0 or one of
// their ends.
static int64_t lowest_gap(const Temp *t, Temp **cs, int nc) {
  qsort(cs, (size_t)nc, sizeof *cs, off_cmp);
  int64_t at = 0;
  for (int i = 0; i < nc && cs[i]->roff < at + t->rsize; i++)
    if (cs[i]->rend > at) at = cs[i]->rend;
  return at;
}

// t goes above the conflicts below its gap (its offset: the max of their
// ends); a conflict above that is not provably above t's end joins those
// below, and so does any conflict the higher offset then meets, until every
// conflict is provably below or above.
static void place(Plan *pl, Temp *ts, int n, Temp *t) {
  Temp **cs = pl->w_cs, **up = pl->w_up;
  bool *below = pl->w_below;
  uint64_t *proved = pl->w_proved;
  int nc = 0;
  for (int i = 0; i < n; i++)
    if (ts[i].placed && live_together(&ts[i], t)) cs[nc++] = &ts[i];
  int64_t o = lowest_gap(t, cs, nc);
  // the conflicts by end at the reference point, highest first: the ones
  // added later are mostly covered by an element there already
  qsort(cs, (size_t)nc, sizeof *cs, end_cmp);
  int words = (n + 63) / 64;
  uint64_t *cov = t->covers; // what the ones below cover already: their ends need not be added
  for (int i = 0; i < nc; i++) {
    below[i] = cs[i]->rend <= o;
    for (int w = 0; below[i] && w < words; w++) cov[w] |= cs[i]->covers[w];
  }
  t->off = (MaxSet){.n = 1, .p = {pl->zero}};
  for (int i = 0; i < nc; i++) {
    int ci = (int)(cs[i] - ts);
    if (below[i] && !(cov[ci / 64] >> (ci % 64) & 1))
      for (int j = 0; j < cs[i]->end.n; j++) ms_add(pl, &t->off, &cs[i]->end.p[j]);
  }
  // those above, lowest first: one proved above t proves those that cover it
  int nup = 0;
  for (int i = 0; i < nc; i++)
    if (!below[i]) up[nup++] = cs[i];
  qsort(up, (size_t)nup, sizeof *up, off_cmp);
  for (bool moved = true; moved;) {
    moved = false;
    memset(proved, 0, sizeof(uint64_t) * (size_t)words);
    int64_t r = ms_ref(pl, &t->off);
    for (int i = 0; i < nup; i++) {
      Temp *c = up[i];
      if (!c) continue;
      int ci = (int)(c - ts);
      bool ok = false;
      for (int w = 0; w < words && !ok; w++) ok = (proved[w] & c->covers[w]) != 0;
      if (!ok) ok = c->roff >= r + t->rsize && ms_le(pl, &t->off, &t->size, &c->off);
      if (ok) {
        proved[ci / 64] |= (uint64_t)1 << (ci % 64);
        continue;
      }
      for (int j = 0; j < nc; j++)
        if (cs[j] == c) below[j] = true;
      up[i] = NULL, moved = true;
      for (int j = 0; j < c->end.n; j++) ms_add(pl, &t->off, &c->end.p[j]);
      r = ms_ref(pl, &t->off);
    }
  }
  for (int i = 0; i < nc; i++) {
    int ci = (int)(cs[i] - ts);
    if (!below[i]) continue;
    cov[ci / 64] |= (uint64_t)1 << (ci % 64);
    for (int w = 0; w < words; w++) cov[w] |= cs[i]->covers[w];
  }
  if (!t->off.n) t->off.p[t->off.n++] = poly_const(pl, 0);
  t->end = (MaxSet){0};
  for (int i = 0; i < t->off.n; i++) {
    Poly e = poly_copy(pl, &t->off.p[i]);
    poly_add(pl, &e, &t->size, 1);
    ms_add(pl, &t->end, &e);
  }
  t->roff = ms_ref(pl, &t->off), t->rend = ms_ref(pl, &t->end);
  t->placed = true;

}

bool kir_plan_memory(KirProgram *p, DiagSink *d) {
  if (p->scratch) {
    diag_error(d, (Span){0}, "kir: program %s has a memory plan already", p->name);
    return false;
  }
  Plan pl = {.p = p};
  // the points where a claimed inequality is tried before it is proved:
  // every sym 64 (the reference), 1, 1000, and distinct small values
  int64_t *args = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->syms.len + 1));
  for (int k = 0; k < MP_POINTS; k++) {
    static const int64_t at[MP_POINTS] = {64, 1, 1000, 0};
    for (int i = 0; i < p->syms.len; i++) args[i] = at[k] ? at[k] : 2 + 5 * i;
    pl.syms[k] = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->syms.len + 1));
    pl.have[k] = kir_bind_syms(p, args, pl.syms[k]);
  }
  Temp *ts = arena_alloc(p->arena, sizeof(Temp) * (size_t)(p->bufs.len + 1));
  int n = 0, *at = arena_alloc(p->arena, sizeof(int) * (size_t)(p->bufs.len + 1));
  for (int b = 0; b < p->bufs.len; b++) {
    at[b] = -1;
    if (kir_buf(p, b)->kind != KBUF_TEMP) continue;
    at[b] = n;
    ts[n++] = (Temp){.buf = b, .first = p->kernels.len, .last = -1};
  }
  for (int k = 0; k < p->kernels.len; k++) {
    const KirKernel *kn = VEC_AT(p->kernels, KirKernel, k);
    for (int j = 0; j < kn->params.len; j++) {
      int i = at[kir_param(kn, j)];
      if (i < 0) continue;
      if (ts[i].first > k) ts[i].first = k;
      ts[i].last = k;
    }
  }
  for (int i = 0; i < n; i++) {
    Temp *t = &ts[i];
    // unused (no kernel takes it: a value a library call does not store,
    // conv2d_pool's y = none): no bytes, live after the last kernel
    bool unused = t->last < 0;
    if (unused) t->last = t->first;
    KirBuf *b = kir_buf(p, t->buf);
    Poly bytes, size = poly_const(&pl, dtype_size(b->dtype)), numel = poly_of(&pl, b->numel);
    if (!poly_mul(&pl, &numel, &size, &bytes)) bytes = poly_atom(&pl, kir_bin(p, KB_MUL, b->numel, kir_idx(p, dtype_size(b->dtype))));
    t->size = unused ? poly_const(&pl, 0) : align64(&pl, bytes);
    t->rsize = poly_ref(&pl, &t->size);
  }
  qsort(ts, (size_t)n, sizeof *ts, temp_cmp);
  for (int i = 0; i < n; i++) ts[i].covers = arena_alloc(p->arena, sizeof(uint64_t) * (size_t)((n + 63) / 64 + 1));
  pl.zero = poly_const(&pl, 0);
  pl.w_cs = arena_alloc(p->arena, sizeof(Temp *) * (size_t)(n + 1));
  pl.w_up = arena_alloc(p->arena, sizeof(Temp *) * (size_t)(n + 1));
  pl.w_below = arena_alloc(p->arena, sizeof(bool) * (size_t)(n + 1));
  pl.w_proved = arena_alloc(p->arena, sizeof(uint64_t) * (size_t)((n + 63) / 64 + 1));
  for (int i = 0; i < n; i++) place(&pl, ts, n, &ts[i]);
  for (int i = 0; i < n; i++) kir_buf(p, ts[i].buf)->offset = ms_expr(&pl, &ts[i].off);
  MaxSet top = {0};
  for (int i = 0; i < n; i++)
    for (int j = 0; j < ts[i].end.n; j++) ms_add(&pl, &top, &ts[i].end.p[j]);
  p->scratch = ms_expr(&pl, &top);
  return true;
}
