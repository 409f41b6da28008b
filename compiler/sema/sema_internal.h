// sema_internal.h — the data semantic analysis builds, shared by its files:
//
//   sema.c          entry point, the global item table, diagnostics with
//                   de-duplication and instantiation context, block
//                   instantiation, members (types, inits), signatures, and
//                   the call-graph pass (recursion, total FLOPs)
//   sema_expr.c     scopes, name lookup, expression evaluation to Values,
//                   calls of user code and argument unification
//   sema_body.c     type expressions, statements, bodies, gradients
//   sema_train.c    train recipes
//   sema_explain.c  the --explain report
//
// Shape of the result. Every block is checked through its instantiations: an
// Inst is one (block, argument values) pair, checked once however many
// members name it. An Inst owns one MInfo per member (a param's constant
// type, an instance's child Inst, a method's Sig and Body). A Body is one
// function body checked in one context (a method of one Inst, or a fn item);
// its CallEdges (callee Body + symbol substitution) form the call graph that
// the final pass walks for recursion and FLOP totals. A model is an Inst
// without arguments.
#ifndef MLC_SEMA_INTERNAL_H
#define MLC_SEMA_INTERNAL_H

#include "builtins.h"
#include "checked.h"
#include "sema.h"

typedef struct Inst Inst;
typedef struct MInfo MInfo;
typedef struct Body Body;
typedef struct ItemInfo ItemInfo;
typedef struct Scope Scope;

// Deepest expression nesting sema evaluates before reporting an error (the
// evaluator recurses on the C stack), deepest block nesting, and the longest
// chain of calls of user code (lowering inlines each call on the C stack).
#define SEMA_MAX_DEPTH 500
#define SEMA_MAX_INST_DEPTH 64
#define SEMA_MAX_CALL_DEPTH 200
// Most elements a list of instances may have, and most iterations one body's
// loops unroll to, all loops together (each iteration is a copy of the loop
// body in the graph).
#define SEMA_MAX_LIST 1024
#define SEMA_MAX_UNROLL 4096

// ---- a small string map (open addressing, arena-backed) ----------------------------
typedef struct SMap {
  const char **keys;
  void **vals;
  int cap, len;
} SMap;
void *sema_map_get(const SMap *m, const char *key);
// Inserts or replaces; returns the previous value (NULL if none).
void *sema_map_put(Arena *a, SMap *m, const char *key, void *val);

// ---- signatures and bodies ------------------------------------------------------------
// Sig (a signature in one context) is in checked.h: lowering reads it too.

// One call of user code inside a body.
typedef struct CallEdge {
  Body *callee;
  DimSubst subst; // callee symbol -> dim at the call site
  Span span;      // the call expression
} CallEdge;

// One `name = value` of a body, kept for --explain.
typedef struct Binding {
  const char *name;
  Span span;
  Value *value; // NULL after an error
  bool is_return;
} Binding;

typedef enum { BODY_NEW, BODY_BUSY, BODY_DONE } BodyState;

struct Body {
  Func *fn;
  Inst *inst;        // the instantiation of the enclosing block/model; NULL for fns
  MInfo *member;     // the method member (NULL for fns)
  ItemInfo *item;    // the fn item (NULL for methods)
  Sig *sig;
  const char *label; // "Linear(784, 256).forward", "binarize"
  const char *short_label; // "Linear.forward" (arity messages)
  BodyState state;
  Dim *own_flops;    // FLOPs of the builtin calls in this body (over sig symbols)
  Vec calls;         // CallEdge*
  Vec bindings;      // Binding*
  Dim *flops;        // own + callees', after sema_finish_calls
  int color;         // call-graph walk: 0 new, 1 on the stack, 2 finished
  int height;        // after the walk: the longest chain of calls from here (1: none)
  CkFunc *ck;        // what lowering inlines: filled as the body is checked
};

// ---- instantiations and their members -------------------------------------------------
struct MInfo {
  Member *m;
  int idx;          // position in the item's member list
  Type *type;       // MB_PARAM/MB_BUFFER: constant type; NULL after an error
  const char *init; // MB_PARAM/MB_BUFFER: resolved init, for --explain
  bool init_default; // the init was not written (zeros, or kaiming for rank >= 2)
  IrInit init_ir;   // MB_PARAM/MB_BUFFER: the resolved init, for lowering
  Inst *child;      // MB_INSTANCE: the instantiation; NULL after an error
  Sig *sig;         // MB_METHOD: computed on first need
  Body *body;       // MB_METHOD (NULL for a generic one: see specs)
  Vec specs;        // MB_METHOD with `...`: Body* per number of leading dims
  // MB_INSTANCE, for --explain: calls of it from this Inst's bodies, and
  // reads of each of its params/buffers (path below it -> count). It is
  // used calls + (the most any one param is read) times.
  int calls;
  SMap reads;
  bool failed;      // the member had an error (uses are silent)
};

typedef enum { INST_NEW, INST_BUSY, INST_DONE } InstState;

struct Inst {
  Item *item;       // IT_BLOCK or IT_MODEL
  int nargs;
  Value **args;     // one per block parameter: V_DIM constant, V_FLOAT, V_BOOL, V_STR
  const char *label; // "Linear(784, 256)", or the model's name
  Span site;        // where it was first instantiated (the model: its name)
  Span site_name;   // the member name at that site
  InstState state;
  bool sig_only;    // a block checked without arguments: signatures only
  bool is_list;     // a list of instances (sema_lists.c): members "0", "1", ...
  MInfo **members;  // parallel to item->members
  SMap by_name;     // member name -> MInfo*
  Vec frozen;       // model only: paths ("fc1", "fc1.w") a train recipe freezes
  CkInst *ck;       // the product for lowering (sema_product, after the checks)
};

// Per global item (block, model, fn, train).
struct ItemInfo {
  Item *item;
  Vec insts;        // Inst*: instantiations of a block
  SMap by_args;     // argument key -> Inst* (sema.c inst_key)
  Inst *model;      // IT_MODEL: its one instantiation
  CkModel *ck;      // IT_MODEL of the user: the product for lowering
  Recipe recipe;    // IT_MODEL: its train block as data (the defaults without one)
  Sig *fn_sig;      // IT_FN
  Body *fn_body;    // IT_FN (NULL for a generic one: see specs)
  Vec specs;        // IT_FN with `...`: Body* per number of leading dims
  bool checked;
};

// ---- the whole analysis -----------------------------------------------------------------
typedef struct Sema {
  Arena *arena;
  DiagSink *diags;
  Program *prog;
  const SemaOptions *opt;
  SMap items;        // name -> ItemInfo* (a user item shadows the prelude's)
  Vec item_infos;    // ItemInfo*, in program order
  SMap by_item;      // "%p" of an Item -> its ItemInfo
  Vec bodies;        // Body*, in creation order
  Vec models;        // Inst* of the user's models, in order
  Vec inst_stack;    // Inst* being instantiated, outermost first
  Vec trains;        // TrainInfo* (sema_train.c), in order
  Inst *ctx;         // the instantiation whose members/bodies are being checked
  // Diagnostics: duplicates (same span and text, e.g. one error seen through
  // several instantiations) are dropped with their notes.
  SMap seen;
  bool dropping;     // the last error was a duplicate: drop its notes
  Vec *pending_ctx;  // Inst*: the parametric blocks the last error was found in,
                     // innermost first; their notes follow the error's own
  Vec loops;         // LoopFrame*: the unrolled loop iterations being checked,
                     // outermost first (sema_lists.c)
  Vec *pending_loops; // LoopFrame*: those of the last error, noted before its
                     // instantiation context
  int nerrors;
  // While quiet > 0 errors are only counted (quiet_errors), not reported:
  // used to probe an expression whose failure is not the user's problem.
  int quiet, quiet_errors;
  // > 0 while the items of a list literal are evaluated: sizes ([B, 32 / 5]),
  // where a division that is not exact has no float reading
  int in_list;
} Sema;

// ---- diagnostics (sema.c) ---------------------------------------------------------------
bool sema_error(Sema *S, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sema_note(Sema *S, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sema_flush_context(Sema *S);
// True once the sink drops further errors (past its max_errors): callers
// skip the work of building suggestions.
bool sema_quiet(const Sema *S);
// "; did you mean 'x'?" or "" (arena string).
const char *sema_suggest(Sema *S, const char *name, Vec *cands);

// ---- argument binding (sema.c) ---------------------------------------------------------
// Call arguments bound to named parameters, as blocks, initialisers,
// hyperparameters and user functions all bind them: positional ones in
// order, then named ones, each parameter at most once. (Builtins bind their
// evaluated Values the same way in builtins.c's bi_bind.)
typedef struct ArgBind {
  const char *owner;        // names the callee in messages: "block 'Linear'", "sgd"
  int n;                    // its parameters
  const char *const *names;
  bool report_extra;        // report too many positional arguments ("too many
                            // arguments: sgd takes 5"); else the caller does
  Arg **arg;                // out, n of them: the argument of each (NULL: not given)
  int npos;                 // out: positional arguments in the call
  Arg *extra;               // out: the first positional argument past n (not bound)
} ArgBind;

// Fills b->arg; false after reporting an unknown parameter name (with a
// suggestion), a parameter given twice, or a positional argument after a
// named one. Too many positional arguments are reported when report_extra
// is set, else left to the caller (extra), whose message can say more.
bool sema_bind_args(Sema *S, Vec *args, ArgBind *b);

// ---- items and instantiation (sema.c) -------------------------------------------------
ItemInfo *sema_find_item(Sema *S, const char *name);
// Binds `args` (Arg*) to the block's parameters, evaluating them in `sc`.
// Returns the argument values, or NULL after reporting an error.
Value **sema_bind_block_args(Sema *S, Scope *sc, Item *blk, Vec *args,
                             Span call);
Inst *sema_instantiate(Sema *S, Item *blk, Value **args, Span site,
                       Span site_name);
// The scope an instance member's arguments are evaluated in (constants,
// the block parameters, members declared before position `visible`).
void sema_member_scope(Scope *sc, Sema *S, Inst *I, int visible);
// The instantiation an instance member (MB_INSTANCE) names, its arguments
// evaluated in sc; NULL after an error, and in a signature-only check.
Inst *sema_member_inst(Sema *S, Scope *sc, Member *m);
Sig *sema_method_sig(Sema *S, Inst *I, MInfo *mi);
Sig *sema_fn_sig(Sema *S, ItemInfo *ii);
Body *sema_fn_body(Sema *S, ItemInfo *ii);
// The body of a generic method of I (mi) or fn item (ii) with `...` standing
// for k dims: made on first need (its leading symbols named after `lead`,
// the first call's dims, where they are plain symbols), checked with the
// leftovers.
Body *sema_generic_body(Sema *S, Inst *I, MInfo *mi, ItemInfo *ii, int k, Dim *const *lead);
MInfo *sema_member(Inst *I, const char *name);
// The model's instantiation (instantiated on first need).
Inst *sema_model_inst(Sema *S, ItemInfo *ii);
// Stable text of a constant value: 784, 0.5, true, "s".
const char *sema_const_str(Sema *S, const Value *v);

// ---- scopes and evaluation (sema_expr.c, sema_body.c) -----------------------------------------------
typedef struct Local {
  const char *name;
  Span span;
  Value *value; // NULL: poisoned by an earlier error (uses stay silent)
  int slot;     // inside a body: its slot (CK_LOCAL)
} Local;

typedef enum {
  TM_MEMBER,    // param/buffer type: only block parameters
  TM_SIG_PARAM, // a parameter type: free names become fresh symbols
  TM_SIG_RET,   // the return type: only symbols the parameters bound
  TM_LOCAL,     // an annotation in a body: locals, symbols, block parameters
} TypeMode;

struct Scope {
  Sema *S;
  Inst *inst;       // the enclosing instantiation (NULL inside fn items)
  int visible;      // members with idx < visible may be used
  Item *bitem;      // whose block parameters are in scope (may be partial)
  Value **bargs;    // their values
  int nbargs;       // how many are bound (defaults see only earlier ones)
  Sig *sig;         // the signature whose symbols are in scope (NULL: none)
  Body *body;       // the body being checked (NULL: a constant context)
  SMap locals;      // name -> Local*: the latest binding of each name
  int depth;        // current expression nesting
  bool too_deep;    // "nested too deeply" was reported (once per scope)
  bool const_only;  // member types/inits/instance arguments
  bool lenient;     // signature-only check of a block without arguments
  bool in_grad;     // checking a grad body (calls are not recorded)
  int nslots;       // inside a body: slots handed out (parameters first)
  int unrolled;     // loop iterations unrolled so far in this body
  int arg_depth;    // instance members' scopes: the path segments of the member
                    // (blocks.3: 2), what an instance argument is seen from below
  Expr *tuple_site; // the call whose several results a, b = ... binds
  Vec *lets;        // inside a body: where non-constant bindings go (CkLet*)
};

void sema_scope_init(Scope *sc, Sema *S, Inst *I, int visible);
// What `fc1`, `enc.fc1`, `blocks[2]`, a loop variable or a block parameter
// given an instance names when it is a block instance: the member its uses
// are counted on (the element, for a list member of its own), the
// instantiation it reaches and where it is (`up` segments above the
// scope's instance, then `path`: "blocks.2.attn"). Nothing is set when `e`
// names no instance; `err` after a reported error.
typedef struct InstRef {
  MInfo *top;
  Inst *inst;
  const char *path;
  bool err;
  int up;          // path segments above the scope's instance (a block argument)
} InstRef;
InstRef sema_resolve_instance(Scope *sc, Expr *e);
// A block parameter given an instance (Head(tok)) used as a number or a
// tensor: one error at the instantiation (however many uses), a note at
// the use.
void sema_instance_as_value(Scope *sc, const char *name, const Value *v, Span use);
const char *sema_join_path(Sema *S, const char *base, const char *name);
Local *sema_find_local(Scope *sc, const char *name);
void sema_bind_local(Scope *sc, const char *name, Span sp, Value *v);
// Names a value could have been ("did you mean"): locals, visible members,
// block parameters, signature symbols.
Vec sema_value_names(Scope *sc);
// Index of a block parameter in scope: -1 if none, -2 if it is declared
// after the one whose default is being evaluated.
int sema_scope_bparam(Scope *sc, const char *name);
Sym *sema_sig_sym(Scope *sc, const char *name);
const char *sema_param_name(Sig *g, int i);
Value *sema_eval(Scope *sc, Expr *e);
Type *sema_eval_type(Scope *sc, TypeExpr *te, TypeMode mode);
// Checks one body (a method of an Inst or a fn item).
void sema_check_body(Sema *S, Body *b);
Value *sema_new_value(Sema *S, ValKind k, Span sp);
// dim_str, parenthesised when it is a sum: "(H - 1)".
const char *sema_dim_operand(Arena *a, const Dim *d);
// True if v is a compile-time number (an integer constant or a float).
bool sema_const_num(const Value *v, double *out);

// ---- lists of instances and loops (sema_lists.c) ---------------------------------------
// One iteration of a loop being checked: where the loop is and what its
// variable is bound to ("b = blocks.2"), for the note after an error.
typedef struct LoopFrame {
  Span at;
  const char *what;
} LoopFrame;
// blocks = [Block(d) for i in range(6)] or [Linear(4, 8), Linear(8, 2)]:
// instantiates every element; mi->child becomes the list (Inst.is_list).
void sema_check_list_member(Sema *S, Inst *I, MInfo *mi);
// "6 x Block(64, 4)", "list of 3": how a list shows in messages.
const char *sema_list_desc(Sema *S, Inst *list);
// The values a loop runs over, in order: the elements of a list of
// instances (V_INST), the integers of range(n), range(a, b) or
// range(a, b, step), or the items of a constant list. False after an error.
bool sema_loop_values(Scope *sc, Expr *e, Vec *out);
// Brackets the check of one iteration, so errors name it.
void sema_loop_enter(Sema *S, Span at, const char *var, const Value *v);
void sema_loop_leave(Sema *S);

// ---- the product for lowering (sema_ck.c) ------------------------------------------------
// How a value is computed, for CkExpr args: v->ck, or a CK_CONST of v.
CkExpr *sema_ck_of(Sema *S, Value *v);
CkExpr *sema_ck_new(Sema *S, CkKind k, Span sp, Type *t);
// v (a copy) computed by ck.
Value *sema_with_ck(Sema *S, Value *v, CkExpr *ck);
// A builtin call's CK_OP from the call's recorded binding (builtins.h):
// args are the values given, in source order.
CkExpr *sema_ck_op(Sema *S, const BuiltinCall *c, Value **args, Type *t);
// After every check: CkInst trees, CkModels. Only without errors.
void sema_product(Sema *S);

// ---- train recipes, entry points and the report ---------------------------------------
void sema_check_train(Sema *S, Item *it);
// The documented defaults of a train block (docs/language.md).
void sema_recipe_defaults(Recipe *r, const char *model);
// What a compiled program needs of a model with forward and loss (the ABI
// of runtime/include/mlc_model.h), checked at the signatures (sema_entry.c).
void sema_check_entries(Sema *S, Inst *model);
// Once forward's and loss's calls are inlined: every slice start is a
// constant, every slice in range and no value empty (sema_entry.c).
void sema_check_inlined(Sema *S, Inst *model);
void sema_explain(Sema *S, FILE *out);
// Parameter element counts of an instantiation (recursively).
typedef struct ParamCount {
  int64_t trainable, frozen, buffers;
} ParamCount;
// `path` is I's path in its model ("" at the top) and `frozen` the model's
// frozen paths, so a shared instantiation counts per use site.
ParamCount sema_count_params(Sema *S, Inst *I, const char *path,
                             const Vec *frozen);

#endif
