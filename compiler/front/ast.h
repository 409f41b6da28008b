// ast.h — the abstract syntax tree the parser builds and sema annotates.
//
// Every node carries a Span. Grammar actions only construct nodes (ast.c);
// all meaning is assigned by sema, which fills the `type`/`cval` slots of
// expressions. Lists are Vec fields whose comment names the element type.
//
// The surface language (docs/language.md):
//   program   := item*
//   item      := block | model | fn | train
//   block     := 'block' NAME '(' [bparam {',' bparam}] ')' '{' member* '}'
//   model     := 'model' NAME '{' member* '}'
//   member    := ['frozen'] 'param' NAME ':' type ['init' expr]
//              | 'buffer' NAME ':' type ['init' expr]
//              | NAME '=' NAME '(' args ')'          (a block instance)
//              | NAME '=' '[' inst {',' inst} ']'   (a list of block instances)
//              | NAME '=' '[' inst 'for' NAME 'in' expr ']'
//              | method
//   method    := NAME '(' params ')' '->' result '{' stmt* '}' [grad]
//   result    := type | '(' [NAME ':'] type {',' [NAME ':'] type} ')'
//   fn        := 'fn' method
//   grad      := 'grad' '(' NAME ')' '{' stmt* '}'
//   stmt      := NAME [':' type] '=' expr | 'return' expr
//              | 'for' NAME 'in' expr '{' stmt* '}'
//   train     := 'train' NAME '{' setting* '}'
#ifndef MLC_AST_H
#define MLC_AST_H

#include "base/common.h"

typedef struct Type Type; // types.h; filled in by sema
typedef struct Expr Expr;
typedef struct TypeExpr TypeExpr;

// ---- expressions ---------------------------------------------------------------
typedef enum {
  EX_INT,    // 42           .ival
  EX_FLOAT,  // 1e-3         .fval (text kept in .name for printing)
  EX_BOOL,   // true/false   .ival (0/1)
  EX_STR,    // "path"       .name (unescaped contents)
  EX_NAME,   // x            .name
  EX_DTYPE,  // f32 (as an argument, e.g. cast(x, f16))  .dtype
  EX_UNARY,  // -x, not x    .op ('-' or '!'), .lhs
  EX_BINARY, // x + y        .op (see BinOp), .lhs, .rhs
  EX_CALL,   // f(a, k = v)  .lhs = callee (EX_NAME or EX_MEMBER), .args
  EX_MEMBER, // x.name       .lhs, .name (x.T is transpose of last two dims)
  EX_INDEX,  // x[i, a:b]    .lhs, .args (Arg*, each value an expr or EX_SLICE)
  EX_SLICE,  // a:b:c        .lhs = start, .rhs = stop, .step (each may be NULL)
  EX_LIST,   // [a, b, c]    .args (Arg*, positional)
  EX_ELLIPSIS, // ...        (a dim of a type only: any number of leading dims)
} ExprKind;

typedef enum {
  OP_ADD = '+', OP_SUB = '-', OP_MUL = '*', OP_DIV = '/', OP_MATMUL = '@',
  OP_LT = '<', OP_GT = '>',
  OP_LE = 256, OP_GE, OP_EQ, OP_NE, OP_POW, // <= >= == != **
  OP_AND, OP_OR,                            // and or
  OP_FLOORDIV,                              // //  (sizes only)
  OP_NEG = '-' + 512, OP_NOT = '!' + 512,   // unary (stored in .op of EX_UNARY)
} BinOp;

// A call or index argument: positional (name == NULL) or named (k = v).
// `unit` is an optional trailing word on a named argument: warmup = 1 epoch.
typedef struct Arg {
  Span span;
  const char *name; // NULL for positional
  Span name_span;
  Expr *value;
  const char *unit; // NULL, or "epoch"/"epochs"/"step"/"steps"/...
  Span unit_span;
} Arg;

struct Expr {
  ExprKind kind;
  Span span;
  int op;            // BinOp for EX_UNARY/EX_BINARY
  int64_t ival;      // EX_INT, EX_BOOL
  double fval;       // EX_FLOAT
  const char *name;  // EX_NAME, EX_MEMBER, EX_STR, EX_FLOAT (source text)
  int dtype;         // EX_DTYPE: a DType (types.h)
  Expr *lhs, *rhs;   // operands / callee / object / slice start,stop
  Expr *step;        // EX_SLICE
  Vec args;          // Arg*: EX_CALL, EX_INDEX, EX_LIST
  // Filled by sema:
  Type *type;        // inferred tensor type (NULL for non-tensor values)
};

// ---- types as written ------------------------------------------------------------
// f32           -> rank 0 (has_dims = false)
// f32[B, 784]   -> dims are expressions over integers, symbols and block params
struct TypeExpr {
  Span span;
  int dtype;     // DType
  Span dtype_span;
  bool has_dims; // false for scalars
  Vec dims;      // Expr*: EX_INT, EX_NAME, EX_BINARY(+,-,*,/), EX_UNARY(-),
                 // EX_ELLIPSIS (f32[..., d])
};

// ---- statements ------------------------------------------------------------------
typedef enum {
  ST_LET,    // name [: type] = value;  a, b = value (names: each result of a call)
  ST_RETURN, // return value (an EX_LIST for return a, b)
  ST_FOR,    // for name in value { body }: unrolled at compile time
} StmtKind;

typedef struct Stmt {
  StmtKind kind;
  Span span;
  const char *name; // ST_LET; ST_FOR: the loop variable
  Span name_span;
  TypeExpr *type; // ST_LET annotation, may be NULL
  Expr *value;    // ST_FOR: what is iterated (a list of instances, range(n))
  Vec body;       // ST_FOR: Stmt*
  Vec names;      // ST_LET of several results (a, b = f(x)): Param* (name, name_span), in order
} Stmt;

// ---- functions and methods -------------------------------------------------------------
typedef struct Param {
  Span span;
  const char *name;
  Span name_span;
  TypeExpr *type;
} Param;

typedef struct Func {
  Span span;      // whole definition
  const char *name;
  Span name_span;
  Vec params;     // Param*
  TypeExpr *ret;  // the (first) result's type
  // Several results, -> (f32[B, 10], aux: f32): Param* (name may be NULL,
  // type); empty for one result.
  Vec results;
  Vec body;       // Stmt*
  // Optional user-declared gradient: grad(dy) { ... return dx1, ... }
  // `grad_body` sees the forward parameters and `grad_name` (the upstream
  // gradient, typed like the result) and returns one tensor per parameter.
  bool has_grad;
  Span grad_span;
  const char *grad_name;
  Span grad_name_span;
  Vec grad_body;  // Stmt*; its ST_RETURN may return an EX_LIST of gradients
} Func;

// ---- blocks and models --------------------------------------------------------------------
typedef enum {
  MB_PARAM,    // [frozen] param name: type [init expr]
  MB_BUFFER,   // buffer name: type [init expr]   (state, not trained)
  MB_INSTANCE, // name = Block(args)
  MB_INSTANCE_LIST, // name = [Block(a), Block(b)] or [Block(args) for i in range(n)]
  MB_METHOD,   // name(params) -> type { ... }
} MemberKind;

typedef struct Member {
  MemberKind kind;
  Span span;
  const char *name;
  Span name_span;
  bool frozen;     // MB_PARAM
  TypeExpr *type;  // MB_PARAM, MB_BUFFER
  Expr *init;      // MB_PARAM, MB_BUFFER: EX_NAME (zeros) or EX_CALL (normal(std=0.02)); may be NULL
  const char *block_name; // MB_INSTANCE
  Span block_span;
  Vec args;        // MB_INSTANCE: Arg*
  // MB_INSTANCE_LIST: the elements as written (Member*, each MB_INSTANCE
  // named by its position "0", "1", ...). A comprehension has one element,
  // the template, whose arguments may use the loop variable; `loop_iter`
  // is what it runs over (range(n)); NULL for a written list.
  Vec elems;
  const char *loop_var;
  Span loop_span;
  Expr *loop_iter;
  Func *method;    // MB_METHOD
} Member;

// A block parameter: an integer (or float) known at instantiation time.
typedef struct BlockParam {
  Span span;
  const char *name;
  Expr *deflt; // default value, may be NULL
} BlockParam;

// ---- train recipe ------------------------------------------------------------------------
// Each line of a train block is one or more settings:
//   batch 64  epochs 5  seed 0          key + value
//   optimizer adamw(lr = 1e-3)          key + call
//   clip grad_norm = 1.0                key + sub_key = value
//   freeze fc1                          key + name
//   train_data { x = idx("...") }       key + bindings
typedef struct Setting {
  Span span;
  const char *key;
  Span key_span;
  const char *sub_key; // for `key sub = value`, else NULL
  Span sub_span;
  Expr *value;         // NULL for the bindings form
  bool has_bindings;
  Vec bindings;        // Stmt* (ST_LET without type): input = source
} Setting;

// ---- top level ------------------------------------------------------------------------------
typedef enum {
  IT_BLOCK, // block Name(params) { members }
  IT_MODEL, // model Name { members }
  IT_FN,    // fn name(params) -> type { ... } [grad ...]
  IT_TRAIN, // train Model { settings }
} ItemKind;

typedef struct Item {
  ItemKind kind;
  Span span;
  const char *name;
  Span name_span;
  Vec bparams;  // BlockParam*  (IT_BLOCK)
  Vec members;  // Member*      (IT_BLOCK, IT_MODEL)
  Func *fn;     // IT_FN
  Vec settings; // Setting*     (IT_TRAIN)
  bool from_prelude; // defined in the built-in prelude, not by the user
} Item;

typedef struct Program {
  const SrcFile *file;
  Vec items; // Item*
} Program;

// ---- construction (ast.c) ---------------------------------------------------------------------
Expr *ast_expr(Arena *a, ExprKind k, Span sp);
Arg *ast_arg(Arena *a, Span sp, const char *name, Expr *value);

// ---- printing (ast.c) -------------------------------------------------------------------------
// S-expression form used by golden tests (tests/front/parse/*.ast), one item per
// top-level form; `with_spans` adds @line:col to every node.
void ast_print(const Program *p, FILE *out, bool with_spans);
const char *binop_name(int op);
// Comparison operators (< > <= >= == !=) and their value on two numbers, for
// constant folding in sema and lowering.
bool binop_is_compare(int op);
bool binop_compare(int op, double x, double y);

#endif
