// dims.c — symbolic dimensions: the Dim algebra declared in types.h.
//
// A Dim is a polynomial with int64 coefficients over symbols, kept in one
// normal form so that structural equality is semantic equality:
//   - a term is coef * s1^p1 * s2^p2 * ..., factors sorted by symbol id, every
//     power >= 1, coef != 0;
//   - terms are sorted by the graded-lexicographic monomial order (higher
//     total degree first; then, on the symbol with the smallest id, the higher
//     power first), so the constant term is last and no monomial repeats;
//   - zero is the polynomial with no terms.
// Because the order is a true monomial order, exact division by any
// polynomial is the textbook division algorithm: it succeeds with a zero
// remainder iff the divisor divides the dividend.
//
// Dims are immutable and arena-allocated; terms and factor arrays may be
// shared between dims.
//
// Overflow: every coefficient operation is checked with __builtin_*_overflow.
// On overflow dim_add/dim_sub/dim_mul/dim_div/dim_subst/dim_set return NULL
// (dim_div also returns NULL when the division is not exact). Every function
// accepts NULL operands and propagates them (dim_eq is false, dim_str prints
// "?"), so a caller can compute a whole expression and test once; callers
// report a NULL from add/sub/mul as "dimension too large".
#include "types.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct Factor {
  Sym *sym;
  int pow; // >= 1
} Factor;

typedef struct Term {
  int64_t coef; // != 0
  int nf;       // number of factors; 0 for the constant term
  const Factor *f;
} Term;

struct Dim {
  int nt; // 0: the zero polynomial
  const Term *t;
};

// ---- symbols --------------------------------------------------------------------
// Ids only need to be unique and increasing within one compilation; a
// process-wide counter gives that (and stays unique across compilations).
static atomic_int next_sym_id = 1;

Sym *sym_new(Arena *a, const char *name, Span span, bool opaque) {
  Sym *s = arena_alloc(a, sizeof *s);
  s->name = name;
  s->id = atomic_fetch_add(&next_sym_id, 1);
  s->span = span;
  s->opaque = opaque;
  return s;
}

// ---- monomials ------------------------------------------------------------------
static int term_degree(const Term *t) {
  int d = 0;
  for (int i = 0; i < t->nf; i++) d += t->f[i].pow;
  return d;
}

// Graded lex: negative if a's monomial comes first (is greater).
static int mono_cmp(const Term *a, const Term *b) {
  int da = term_degree(a), db = term_degree(b);
  if (da != db) return da > db ? -1 : 1;
  for (int i = 0; i < a->nf && i < b->nf; i++) {
    const Factor *fa = &a->f[i], *fb = &b->f[i];
    if (fa->sym != fb->sym) return fa->sym->id < fb->sym->id ? -1 : 1;
    if (fa->pow != fb->pow) return fa->pow > fb->pow ? -1 : 1;
  }
  return 0; // equal degree and equal prefix: same monomial
}

static int term_qsort_cmp(const void *x, const void *y) {
  return mono_cmp(x, y);
}

// Product of two monomials' factor lists (merge by symbol id). False on
// power overflow.
static bool mono_mul(Arena *a, const Term *x, const Term *y, Term *out) {
  Factor *f = arena_alloc(a, sizeof(Factor) * (size_t)(x->nf + y->nf + 1));
  int i = 0, j = 0, n = 0;
  while (i < x->nf || j < y->nf) {
    if (j >= y->nf || (i < x->nf && x->f[i].sym->id < y->f[j].sym->id)) {
      f[n++] = x->f[i++];
    } else if (i >= x->nf || y->f[j].sym->id < x->f[i].sym->id) {
      f[n++] = y->f[j++];
    } else {
      f[n] = x->f[i];
      if (__builtin_add_overflow(x->f[i].pow, y->f[j].pow, &f[n].pow))
        return false;
      n++, i++, j++;
    }
  }
  out->nf = n;
  out->f = f;
  return true;
}

// Does monomial d divide monomial t? If so, *q = t / d (monomial part only).
static bool mono_div(Arena *a, const Term *t, const Term *d, Term *q) {
  Factor *f = arena_alloc(a, sizeof(Factor) * (size_t)(t->nf + 1));
  int n = 0, j = 0;
  for (int i = 0; i < t->nf; i++) {
    Factor fi = t->f[i];
    if (j < d->nf && d->f[j].sym == fi.sym) {
      if (d->f[j].pow > fi.pow) return false;
      fi.pow -= d->f[j].pow;
      j++;
    } else if (j < d->nf && d->f[j].sym->id < fi.sym->id) {
      return false; // d has a symbol t lacks
    }
    if (fi.pow > 0) f[n++] = fi;
  }
  if (j < d->nf) return false;
  q->nf = n;
  q->f = f;
  return true;
}

// ---- normal form ---------------------------------------------------------------------
// Sorts terms, merges equal monomials and drops zero coefficients. `ts` is
// scratch owned by the caller and reordered in place. NULL on overflow.
static Dim *normalize(Arena *a, Term *ts, int n) {
  if (n > 1) qsort(ts, (size_t)n, sizeof(Term), term_qsort_cmp);
  Term *out = arena_alloc(a, sizeof(Term) * (size_t)(n ? n : 1));
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m > 0 && mono_cmp(&out[m - 1], &ts[i]) == 0) {
      if (__builtin_add_overflow(out[m - 1].coef, ts[i].coef, &out[m - 1].coef))
        return NULL;
      if (out[m - 1].coef == 0) m--;
    } else if (ts[i].coef != 0) {
      out[m++] = ts[i];
    }
  }
  Dim *d = arena_alloc(a, sizeof *d);
  d->nt = m;
  d->t = out;
  return d;
}

Dim *dim_const(Arena *a, int64_t v) {
  Term t = {v, 0, NULL};
  return normalize(a, &t, 1);
}

Dim *dim_sym(Arena *a, Sym *s) {
  Factor *f = arena_alloc(a, sizeof *f);
  f->sym = s;
  f->pow = 1;
  Term t = {1, 1, f};
  return normalize(a, &t, 1);
}

// ---- arithmetic -------------------------------------------------------------------------
// x + sign*y, sign = +1 or -1.
static Dim *add_signed(Arena *a, const Dim *x, const Dim *y, int sign) {
  if (!x || !y) return NULL;
  int n = x->nt + y->nt;
  Term *ts = arena_alloc(a, sizeof(Term) * (size_t)(n ? n : 1));
  memcpy(ts, x->t, sizeof(Term) * (size_t)x->nt);
  for (int i = 0; i < y->nt; i++) {
    ts[x->nt + i] = y->t[i];
    if (sign < 0 && __builtin_sub_overflow((int64_t)0, y->t[i].coef,
                                           &ts[x->nt + i].coef))
      return NULL;
  }
  return normalize(a, ts, n);
}

Dim *dim_add(Arena *a, const Dim *x, const Dim *y) {
  return add_signed(a, x, y, 1);
}

Dim *dim_sub(Arena *a, const Dim *x, const Dim *y) {
  return add_signed(a, x, y, -1);
}

Dim *dim_mul(Arena *a, const Dim *x, const Dim *y) {
  if (!x || !y) return NULL;
  int n = x->nt * y->nt;
  Term *ts = arena_alloc(a, sizeof(Term) * (size_t)(n ? n : 1));
  int k = 0;
  for (int i = 0; i < x->nt; i++)
    for (int j = 0; j < y->nt; j++, k++) {
      if (__builtin_mul_overflow(x->t[i].coef, y->t[j].coef, &ts[k].coef))
        return NULL;
      if (!mono_mul(a, &x->t[i], &y->t[j], &ts[k])) return NULL;
    }
  return normalize(a, ts, n);
}

// Division algorithm with one divisor: repeatedly cancel the remainder's
// leading term with (lead(rem) / lead(y)) * y. Exact iff the remainder
// reaches zero; any leading term that does not divide means "not a
// multiple". The step cap only guards against pathological inputs.
Dim *dim_div(Arena *a, const Dim *x, const Dim *y) {
  if (!x || !y || y->nt == 0) return NULL;
  const Term *ly = &y->t[0];
  Dim *rem = (Dim *)x, *q = dim_const(a, 0);
  for (int steps = 0; rem && rem->nt > 0; steps++) {
    if (steps > 4096) return NULL;
    const Term *lr = &rem->t[0];
    if (ly->coef == -1 && lr->coef == INT64_MIN) return NULL;
    if (lr->coef % ly->coef != 0) return NULL;
    Term qt;
    if (!mono_div(a, lr, ly, &qt)) return NULL;
    qt.coef = lr->coef / ly->coef;
    Dim *qd = normalize(a, &qt, 1);
    q = dim_add(a, q, qd);
    rem = dim_sub(a, rem, dim_mul(a, qd, y));
  }
  return rem ? q : NULL;
}

// ---- queries -------------------------------------------------------------------------------
bool dim_eq(const Dim *x, const Dim *y) {
  if (!x || !y) return false;
  if (x == y) return true;
  if (x->nt != y->nt) return false;
  for (int i = 0; i < x->nt; i++) {
    const Term *a = &x->t[i], *b = &y->t[i];
    if (a->coef != b->coef || a->nf != b->nf) return false;
    for (int j = 0; j < a->nf; j++)
      if (a->f[j].sym != b->f[j].sym || a->f[j].pow != b->f[j].pow)
        return false;
  }
  return true;
}

bool dim_is_const(const Dim *x, int64_t *out) {
  if (!x) return false;
  if (x->nt == 0) {
    if (out) *out = 0;
    return true;
  }
  if (x->nt == 1 && x->t[0].nf == 0) {
    if (out) *out = x->t[0].coef;
    return true;
  }
  return false;
}

Sym *dim_as_sym(const Dim *x) {
  if (!x || x->nt != 1) return NULL;
  const Term *t = &x->t[0];
  if (t->coef != 1 || t->nf != 1 || t->f[0].pow != 1) return NULL;
  return t->f[0].sym;
}

bool dim_nonpositive(const Dim *x) {
  int64_t v;
  return dim_is_const(x, &v) && v <= 0;
}

// ---- printing ------------------------------------------------------------------------------
// Opaque symbols have readable names such as "(H - 3)/2 + 1"; inside a
// product they need parentheses to read right.
static bool name_is_ident(const char *s) {
  for (; *s; s++)
    if (!(*s == '_' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
          (*s >= 'A' && *s <= 'Z')))
      return false;
  return true;
}

static void put_term(StrBuf *b, const Term *t, uint64_t mag) {
  bool alone = t->nf == 1 && t->f[0].pow == 1 && mag == 1;
  bool first = true;
  if (mag != 1 || t->nf == 0) {
    sb_printf(b, "%llu", (unsigned long long)mag);
    first = false;
  }
  for (int i = 0; i < t->nf; i++) {
    const Factor *f = &t->f[i];
    const char *name = f->sym->name ? f->sym->name : "?";
    bool paren = !alone && !name_is_ident(name);
    sb_printf(b, "%s%s%s%s", first ? "" : "*", paren ? "(" : "", name,
              paren ? ")" : "");
    if (f->pow > 1) sb_printf(b, "^%d", f->pow);
    first = false;
  }
}

// 784, B, 49*B, B*T, T^2, 2*B + 1, B - 1, -B
char *dim_str(Arena *a, const Dim *x) {
  if (!x) return arena_strdup(a, "?");
  if (x->nt == 0) return arena_strdup(a, "0");
  StrBuf b = {0};
  for (int i = 0; i < x->nt; i++) {
    const Term *t = &x->t[i];
    bool neg = t->coef < 0;
    uint64_t mag = neg ? (uint64_t)0 - (uint64_t)t->coef : (uint64_t)t->coef;
    if (i == 0)
      sb_puts(&b, neg ? "-" : "");
    else
      sb_puts(&b, neg ? " - " : " + ");
    put_term(&b, t, mag);
  }
  char *s = arena_strdup(a, b.data);
  sb_free(&b);
  return s;
}

// ---- substitution ---------------------------------------------------------------------------
void subst_bind(Arena *a, DimSubst *s, Sym *from, Dim *to) {
  for (int i = 0; i < s->len; i++)
    if (s->from[i] == from) {
      s->to[i] = to;
      return;
    }
  if (s->len == s->cap) {
    int cap = s->cap ? s->cap * 2 : 4;
    Sym **nf = arena_alloc(a, sizeof(Sym *) * (size_t)cap);
    Dim **nt = arena_alloc(a, sizeof(Dim *) * (size_t)cap);
    if (s->len) {
      memcpy(nf, s->from, sizeof(Sym *) * (size_t)s->len);
      memcpy(nt, s->to, sizeof(Dim *) * (size_t)s->len);
    }
    s->from = nf;
    s->to = nt;
    s->cap = cap;
  }
  s->from[s->len] = from;
  s->to[s->len] = to;
  s->len++;
}

Dim *subst_lookup(const DimSubst *s, const Sym *from) {
  if (!s) return NULL;
  for (int i = 0; i < s->len; i++)
    if (s->from[i] == from) return s->to[i];
  return NULL;
}

// ---- floor division ------------------------------------------------------------------------
// Floor atoms are interned per arena: a small chained table in the arena's
// user slot, keyed by the numerator's normal form written with symbol ids
// (names can repeat across functions; ids cannot) and the divisor.
typedef struct FloorEntry {
  struct FloorEntry *next;
  const char *key;
  Sym *sym;
} FloorEntry;

static void put_key(StrBuf *b, const Dim *x, int64_t k) {
  for (int i = 0; i < x->nt; i++) {
    sb_printf(b, "%lld", (long long)x->t[i].coef);
    for (int j = 0; j < x->t[i].nf; j++)
      sb_printf(b, "*#%d^%d", x->t[i].f[j].sym->id, x->t[i].f[j].pow);
    sb_putc(b, ';');
  }
  sb_printf(b, "/%lld", (long long)k);
}

static Sym *floor_atom(Arena *a, const Dim *x, int64_t k) {
  StrBuf key = {0};
  put_key(&key, x, k);
  FloorEntry **head = (FloorEntry **)arena_user(a);
  for (FloorEntry *e = *head; e; e = e->next)
    if (!strcmp(e->key, key.data)) {
      sb_free(&key);
      return e->sym;
    }
  FloorEntry *e = arena_alloc(a, sizeof *e);
  e->key = arena_strdup(a, key.data);
  sb_free(&key);
  char *num = dim_str(a, x);
  bool simple = x->nt == 1 && x->t[0].coef == 1 && x->t[0].nf == 1;
  e->sym = sym_new(a, arena_printf(a, simple ? "%s // %lld" : "(%s) // %lld", num,
                                   (long long)k),
                   (Span){0}, true);
  e->sym->floor_num = x;
  e->sym->floor_den = k;
  e->next = *head;
  *head = e;
  return e->sym;
}

static int64_t floor_const(int64_t v, int64_t k) {
  int64_t q = v / k;
  return (v % k != 0 && v < 0) ? q - 1 : q;
}

// Symbolic terms whose coefficients k divides leave the floor:
// floor((k*Q + R)/k) = Q + floor(R/k). So (2*T - 1) // 2 is T - 1, and
// (4*B + H) // 2 is 2*B + H // 2; only the rest R becomes an atom.
Dim *dim_floordiv(Arena *a, const Dim *x, int64_t k) {
  if (!x || k <= 0) return NULL;
  int64_t v;
  if (dim_is_const(x, &v)) return dim_const(a, floor_const(v, k));
  Term *q = arena_alloc(a, sizeof(Term) * (size_t)x->nt);
  Term *r = arena_alloc(a, sizeof(Term) * (size_t)x->nt);
  int nq = 0, nr = 0;
  for (int i = 0; i < x->nt; i++) {
    if (x->t[i].nf > 0 && x->t[i].coef % k == 0) {
      q[nq] = x->t[i];
      q[nq++].coef /= k;
    } else {
      r[nr++] = x->t[i];
    }
  }
  Dim *quot = normalize(a, q, nq), *rest = normalize(a, r, nr);
  Dim *fr = dim_is_const(rest, &v) ? dim_const(a, floor_const(v, k))
                                   : dim_sym(a, floor_atom(a, rest, k));
  return dim_add(a, quot, fr);
}

// Each term coef * s1^p1 * ... becomes coef * sub(s1)^p1 * ...; unbound
// symbols stay themselves, except floor atoms, which are re-evaluated over
// their substituted numerator (floor((H - 1)/2) with H = 28 is 13).
Dim *dim_subst(Arena *a, const Dim *x, const DimSubst *s) {
  if (!x) return NULL;
  Dim *sum = dim_const(a, 0);
  for (int i = 0; i < x->nt && sum; i++) {
    const Term *t = &x->t[i];
    Dim *prod = dim_const(a, t->coef);
    for (int j = 0; j < t->nf && prod; j++) {
      Sym *sy = t->f[j].sym;
      Dim *base = subst_lookup(s, sy);
      if (!base && sy->floor_num)
        base = dim_floordiv(a, dim_subst(a, sy->floor_num, s), sy->floor_den);
      if (!base) base = dim_sym(a, sy);
      for (int p = 0; p < t->f[j].pow && prod; p++) prod = dim_mul(a, prod, base);
    }
    sum = dim_add(a, sum, prod);
  }
  return sum;
}

Dim *dim_set(Arena *a, const Dim *x, const Sym *s, int64_t v) {
  if (!x) return NULL;
  // A throwaway arena-free substitution of one entry.
  Sym *from = (Sym *)s;
  Dim *to = dim_const(a, v);
  DimSubst one = {1, 1, &from, &to};
  return dim_subst(a, x, &one);
}

// Evaluates x with s = v; fails if another symbol remains or on overflow.
// Uses a small private arena so that repeated evaluation (per-sample
// figures in reports) does not grow the caller's.
bool dim_eval1(const Dim *x, const Sym *s, int64_t v, int64_t *out) {
  if (!x) return false;
  Arena *tmp = arena_new();
  Dim *d = dim_set(tmp, x, s, v);
  bool ok = dim_is_const(d, out);
  arena_free(tmp);
  return ok;
}
