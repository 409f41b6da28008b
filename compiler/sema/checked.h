// checked.h — what sema hands on: every model as it resolved it, so that
// lowering is a straight walk with no lookups, no argument binding and no
// constant evaluation of its own.
//
// Shape of the data (all in the analysis's arena):
//   CkModel   a user model: its instance tree, its forward and loss bodies,
//             the paths its train recipe freezes, and the recipe itself
//             (recipe.h: the train block's numbers, defaults without one)
//   CkInst    one instantiation of a block (the model: the root): its params,
//             buffers and child instances in declaration order, each param
//             and buffer with its constant type and resolved initialiser
//   CkFunc    one body checked in one context (a method of one CkInst, or a
//             fn item): its signature, its statements as resolved
//             expressions, and its user-declared gradient if it has one
//   CkExpr    one expression of a body, resolved: a constant sema folded, a
//             local, a state read by path, a call of user code with its
//             arguments bound to the callee's parameters, a builtin with its
//             arguments bound to the op's parameters and the IR attributes
//             its rule computed, or an index
//
// Dims in a body's types and constants are over its signature's symbols
// (B, T of its parameter types); a call records the substitution of the
// callee's symbols (CkExpr.subst), so an inliner composes them down the
// call chain. Since sema checks each body once per instantiation, each
// CkFunc is one (body, instantiation) pair: what lowering inlines.
#ifndef MLC_CHECKED_H
#define MLC_CHECKED_H

#include "front/ast.h"
#include "graph/ir.h"
#include "recipe.h"
#include "value.h"

typedef struct CkExpr CkExpr;
typedef struct CkFunc CkFunc;
typedef struct CkInst CkInst;

// A function's signature in one context: parameter types with fresh symbols
// for the free dim names (B, T, ...), and the return type over them.
// A signature whose types start with `...` (f32[..., in]) is generic: its
// form with `...` standing for no dims is what callers see first
// (`ellipsis`, `lead`), and each call is checked against, and inlines, the
// specialisation for the number of dims the argument has there (`nlead`
// fresh symbols, first in `syms`, shown as `...`).
typedef struct Sig {
  Func *fn;
  int nparams;
  Type **params; // one per parameter; NULL where that type had an error
  Type *ret;     // the (first) result; NULL after an error
  int nrets;     // results: 1, or the tuple's length (-> (f32[B, 2], aux: f32))
  Type **rets;   // nrets of them (rets[0] is ret); NULL entries after errors
  const char **ret_names; // nrets: each result's name, NULL where unnamed
  Vec syms;      // Sym*: the symbols the parameter types introduced
  bool ok;       // every type evaluated
  bool ellipsis; // some parameter type starts with `...`
  bool *lead;    // per parameter: its type starts with `...`
  int nlead;     // a specialisation: the dims `...` stands for (the leading syms)
} Sig;

// ---- expressions -------------------------------------------------------------------------
typedef enum {
  CK_CONST, // .value: a compile-time constant (integer dims over the body's symbols)
  CK_LOCAL, // .slot: a parameter or a let binding of the body
  CK_STATE, // a param/buffer read: .path below the body's instance ("w", "enc.fc1.w"),
            // .up segments above it first
  CK_CALL,  // user code: .callee at .path below the body's instance ("" for its own
            // methods and fn items), .args one per callee parameter, .subst
  CK_OP,    // a builtin: .op (BuiltinOp, as the rule resolved it), .args one per op
            // parameter (NULL: a default the rule applied), .attrs, .slices (slice)
  CK_INDEX, // x[...]: .args[0] the tensor, .slices one per index, .drop
  CK_LIST,  // [a, b] with tensor items: .args
  CK_ITEM,  // result .slot of a call of several results: .args[0] (a CK_LOCAL of the call)
} CkKind;

// One narrowed dim of a slice or index: elements start, start + step, ...
// (len of them) of a dim of size n; all over the body's symbols.
typedef struct CkSlice {
  int dim;
  Dim *start;
  Dim *len;
  int64_t step;
  Dim *n; // the size of the dim sliced
} CkSlice;

struct CkExpr {
  CkKind kind;
  Span span;
  Type *type;          // tensor values: the type over the body's symbols
  Value *value;        // CK_CONST
  int slot;            // CK_LOCAL
  const char *path;    // CK_STATE, CK_CALL
  int up;              // CK_STATE, CK_CALL: path segments to go up from the body's
                       // instance before .path (an instance a block got as an argument)
  bool buffer;         // CK_STATE: a buffer (else a param)
  CkFunc *callee;      // CK_CALL
  DimSubst subst;      // CK_CALL: callee symbol -> dim over this body's symbols
  int op;              // CK_OP
  IrAttrs attrs;       // CK_OP: the IR attributes the rule resolved
  int nargs;
  CkExpr **args;
  int nslices;         // CK_OP (slice) and CK_INDEX
  CkSlice *slices;
  bool *drop;          // CK_INDEX: per dim of args[0], an integer index removed it
};

// ---- bodies -------------------------------------------------------------------------------------
// `slot = value` of a body whose value is not a constant (constant bindings
// were folded into their uses).
typedef struct CkLet {
  int slot;
  CkExpr *value;
} CkLet;

struct CkFunc {
  Func *fn;            // the AST: names and spans, the grad block's names
  Sig *sig;
  CkInst *inst;        // whose state it reads; NULL for fn items
  const char *label;   // "Linear(784, 256).forward", "binarize"
  bool checked;        // the body was checked (false: never reached, or errors)
  int nslots;          // slots 0..nparams-1 are the parameters
  Vec lets;            // CkLet*, in order
  CkExpr *ret;         // the (first) result
  int nrets;           // results (sig->nrets); rets[0] is ret
  CkExpr **rets;
  // Sizes sema could only name with a fresh symbol (the length of a strided
  // slice of a symbolic extent, shown as ceil(...)), defined here over the
  // body's symbols.
  DimSubst defs;
  // The user-declared gradient, when fn->has_grad: slots 0..nparams-1 are
  // the forward parameters, slot nparams the upstream gradient.
  int grad_nslots;
  Vec grad_lets;       // CkLet*
  CkExpr **grad_rets;  // one per parameter
};

// ---- instances and models ---------------------------------------------------------------------
typedef enum { CKM_PARAM, CKM_BUFFER, CKM_INSTANCE } CkMemberKind;

typedef struct CkMember {
  CkMemberKind kind;
  const char *name;
  Span name_span;
  Type *type;          // CKM_PARAM, CKM_BUFFER: the constant type
  bool frozen;         // CKM_PARAM declared `frozen param`
  IrInit init;         // CKM_PARAM, CKM_BUFFER
  CkInst *child;       // CKM_INSTANCE
} CkMember;

struct CkInst {
  const char *label;   // "Linear(784, 256)", or the model's name
  int nmembers;
  CkMember *members;   // declaration order; methods are not members here
};

typedef struct CkModel {
  const char *name;
  Span name_span;
  CkInst *inst;
  CkFunc *forward, *loss; // NULL where the model lacks the method
  Vec frozen;             // const char*: paths the train recipe freezes ("fc1", "fc1.w")
  Recipe recipe;          // the train block, or the documented defaults
} CkModel;

typedef struct Sema Sema;

// The user model `name` as sema checked it; NULL if there is none. Only a
// program without errors (sema_nerrors) may be lowered.
const CkModel *sema_model(const Sema *S, const char *name);
int sema_nerrors(const Sema *S);
// The recipe of model `name` into *out (the defaults when it has no train
// block); false, with the defaults, when there is no such model.
bool sema_recipe(const Sema *S, const char *name, Recipe *out);
// Sets the recipe's precision (`mlc build --precision P` over the recipe's
// own) with what goes with it: f16 without a loss_scale setting in the
// recipe scales the loss dynamically (GradScaler's defaults), any other
// precision then does not.
void recipe_set_precision(Recipe *r, int precision);
// True if `path` or one of its prefixes ("fc1" of "fc1.w") is in `frozen`.
bool sema_path_frozen(const Vec *frozen, const char *path);

#endif
