// memplan.c — the memory-plan pass (kir_plan_memory, memplan.h): every
// temporary of a program gets its byte offset in the scratch block, the
// program the block's size. Backends print the offsets; the verifier checks
// them against the temporaries' lifetimes (kir_verify.c), so a later plan
// that reuses bytes of dead temporaries (issue: liveness, in-place) only
// has to write other offsets.
//
// The first plan lays the temporaries end to end in order of first use,
// each at a multiple of 64 bytes: off(t) = sum of align64(bytes(u)) over
// the temporaries u before t (align64(x) = ((x + 63) / 64) * 64). Sizes are
// polynomials over the syms, so offsets are too: they are kept as
// polynomials (terms coef * atom * atom..., atoms being syms or opaque
// subexpressions such as a floor division or an alignment that does not
// fold) and written back in a canonical order, so `B*1024 + B*512` reads
// `(B * 1536)`. A size whose every coefficient is a multiple of 64 needs no
// rounding; others get an opaque align64 atom.
//
// Input: a KirProgram (normally scheduled: recipes add temporaries). Output:
// KirBuf.offset of every temporary and KirProgram.scratch.
#include "memplan.h"

#include <stdlib.h>
#include <string.h>

enum { MP_MAX_DEGREE = 8 };

typedef struct Term {
  int64_t coef;
  int n;                    // atoms in the product; 0: the constant term
  int atom[MP_MAX_DEGREE];  // ascending atom ids
} Term;

typedef struct Poly {
  int n, cap;
  Term *t;
} Poly;

typedef struct Plan {
  KirProgram *p;
  Vec atoms;                // KExpr*: atom id -> its expression (syms as KE_SYM)
} Plan;

// ---- polynomials -----------------------------------------------------------------------------------
static int atom_id(Plan *pl, KExpr *e) {
  for (int i = 0; i < pl->atoms.len; i++)
    if (kir_expr_equal(VEC_AT(pl->atoms, KExpr, i), e)) return i;
  vec_push(pl->p->arena, &pl->atoms, e);
  return pl->atoms.len - 1;
}

static bool same_monomial(const Term *a, const Term *b) {
  return a->n == b->n && !memcmp(a->atom, b->atom, sizeof(int) * (size_t)a->n);
}

// Adds coef * (the monomial of m) to p, merging like terms.
static void poly_addterm(Plan *pl, Poly *p, const Term *m, int64_t coef) {
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
  return up->kind == KE_CONST ? poly_const(pl, up->i) : poly_atom(pl, up);
}

// ---- the plan ---------------------------------------------------------------------------------------
typedef struct Order {
  int buf, first; // first: index of the first kernel that takes it (INT32_MAX: none)
} Order;

static int order_cmp(const void *x, const void *y) {
  const Order *a = x, *b = y;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  return a->buf - b->buf;
}

// The temporaries in order of first use.
static int temp_order(const KirProgram *p, Order *out) {
  int n = 0;
  for (int b = 0; b < p->bufs.len; b++)
    if (kir_buf(p, b)->kind == KBUF_TEMP) out[n++] = (Order){b, INT32_MAX};
  for (int i = 0; i < n; i++)
    for (int k = 0; k < p->kernels.len && out[i].first == INT32_MAX; k++) {
      const KirKernel *kn = VEC_AT(p->kernels, KirKernel, k);
      for (int j = 0; j < kn->params.len; j++)
        if (kir_param(kn, j) == out[i].buf) out[i].first = k;
    }
  qsort(out, (size_t)n, sizeof *out, order_cmp);
  return n;
}

bool kir_plan_memory(KirProgram *p, DiagSink *d) {
  if (p->scratch) {
    diag_error(d, (Span){0}, "kir: program %s has a memory plan already", p->name);
    return false;
  }
  Plan pl = {.p = p};
  Order *order = arena_alloc(p->arena, sizeof(Order) * (size_t)(p->bufs.len + 1));
  int n = temp_order(p, order);
  Poly off = poly_const(&pl, 0);
  for (int i = 0; i < n; i++) {
    KirBuf *b = kir_buf(p, order[i].buf);
    b->offset = poly_expr(&pl, &off);
    Poly bytes, size = poly_const(&pl, dtype_size(b->dtype)), numel = poly_of(&pl, b->numel);
    if (!poly_mul(&pl, &numel, &size, &bytes)) bytes = poly_atom(&pl, kir_bin(p, KB_MUL, b->numel, kir_idx(p, dtype_size(b->dtype))));
    Poly up = align64(&pl, bytes);
    poly_add(&pl, &off, &up, 1);
  }
  p->scratch = poly_expr(&pl, &off);
  return true;
}
