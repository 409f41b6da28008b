// parser.y — the grammar of the .model language (bison, pure, %locations).
//
// Actions only build AST nodes (compiler/front/ast.c); every meaning is assigned
// by sema. Error recovery is by line: a bad statement, member, setting or
// top-level line is skipped up to its end (the lexer stops hiding newlines
// inside brackets once an error is seen, so an unclosed '(' cannot swallow
// the file). A bad block/method/train header is skipped up to its '{', and
// the body is parsed as usual. A '}' or end of file that only looks wrong
// because of an earlier error is not reported again.
%define api.pure full
%define api.prefix {mlc_}
%define api.location.type {Loc}
%define parse.error custom
%locations
%expect 0
%param {Lexer *lx}

%code requires {
#include "front/ast.h"
#include "types/types.h"
typedef struct Lexer Lexer;
// Byte offsets [off, end) into the file being parsed.
typedef struct Loc { uint32_t off, end; } Loc;
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                    \
  do {                                                                 \
    if (N) { (Cur).off = YYRHSLOC(Rhs, 1).off;                         \
             (Cur).end = YYRHSLOC(Rhs, N).end; }                       \
    else   { (Cur).off = (Cur).end = YYRHSLOC(Rhs, 0).end; }           \
  } while (0)
#define YYMAXDEPTH 2000
}

%code provides {
void mlc_error(MLC_LTYPE *loc, Lexer *lx, const char *msg);
}

%code {
#include "front/lexer.h"
#include <string.h>

#define SP(loc) lex_span(lx, (loc))
#define A (lx->arena)
#define OK() (lx->syntax_reported = false)

static Expr *binary(Lexer *lx, int op, Expr *l, Expr *r, Span sp) {
  Expr *e = ast_expr(lx->arena, EX_BINARY, sp);
  e->op = op;
  e->lhs = l;
  e->rhs = r;
  return e;
}

static Expr *unary(Lexer *lx, int op, Expr *x, Span sp) {
  Expr *e = ast_expr(lx->arena, EX_UNARY, sp);
  e->op = op;
  e->lhs = x;
  return e;
}

// The span from the start of `a` to the end of `b` (rules that end in NL use
// it so that a caret never runs on over a trailing comment).
static Span range(Lexer *lx, Loc a, Loc b) {
  return (Span){lx->file, a.off, b.end - a.off};
}

// One element of a list of instances, named by its position ("0", "1", ...).
static Member *inst_elem(Lexer *lx, int pos, const char *block, Span block_sp, Vec args, Span sp) {
  Member *m = arena_alloc(lx->arena, sizeof(Member));
  m->kind = MB_INSTANCE;
  m->span = m->name_span = sp;
  m->name = arena_printf(lx->arena, "%d", pos);
  m->block_name = block;
  m->block_span = block_sp;
  m->args = args;
  return m;
}

// `for x in ...`: `in` is a word, not a keyword (Linear(in, out) uses it as a
// name), so the loop's second word is checked here.
static void expect_in(Lexer *lx, const char *word, Loc at) {
  if (strcmp(word, "in") != 0)
    diag_error(lx->diags, lex_span(lx, at), "expected 'in' after the loop variable, got '%s'", word);
}

static Vec vec1(Lexer *lx, void *x) {
  Vec v = {0};
  vec_push(lx->arena, &v, x);
  return v;
}
}

%union {
  const char *str;
  int dtype;
  Expr *expr;
  Arg *arg;
  Vec vec;
  TypeExpr *type;
  Stmt *stmt;
  Func *func;
  Member *member;
  Item *item;
  Setting *setting;
  BlockParam *bparam;
  Param *param;
  bool flag;
}

%token <str> IDENT "identifier"
%token <expr> INT "integer" FLOAT "number" STRING "string"
%token <dtype> DTYPE "dtype"
%token NL "end of line"
%token KW_BLOCK "'block'" KW_MODEL "'model'" KW_FN "'fn'" KW_PARAM "'param'"
%token KW_BUFFER "'buffer'" KW_FROZEN "'frozen'" KW_INIT "'init'"
%token KW_RETURN "'return'" KW_GRAD "'grad'" KW_TRAIN "'train'"
%token KW_TRUE "'true'" KW_FALSE "'false'" KW_AND "'and'" KW_OR "'or'"
%token KW_NOT "'not'" KW_FOR "'for'"
%token ARROW "'->'" LE "'<='" GE "'>='" EQ "'=='" NE "'!='" POW "'**'"
%token FLOORDIV "'//'" ELLIPSIS "'...'"

%type <item> item block model fnitem train
%type <vec> members bparams bparams_opt params params_opt stmts args args_opt
%type <vec> exprs exprs_opt dims indices settings bindings insts results names
%type <member> member inst
%type <func> method
%type <stmt> stmt binding
%type <type> type
%type <expr> expr postfix primary index sopt init_opt dim
%type <arg> arg
%type <setting> setting
%type <bparam> bparam
%type <param> param result
%type <flag> frozen_opt

%left KW_OR
%left KW_AND
%precedence KW_NOT
%nonassoc EQ NE '<' LE '>' GE
%left '+' '-'
%left '*' '/' '@' FLOORDIV
%precedence NEG
%right POW

%%

program
  : %empty                { lx->prog = arena_alloc(A, sizeof(Program));
                            lx->prog->file = lx->file; }
  | program item          { vec_push(A, &lx->prog->items, $2); OK(); }
  | program NL
  | program error NL      { yyerrok; OK(); }
  ;

item
  : block | model | fnitem | train
  ;

// block Linear(in, out) { members }
block
  : KW_BLOCK IDENT '(' bparams_opt ')' '{' members '}'
      { $$ = arena_alloc(A, sizeof(Item)); $$->kind = IT_BLOCK; $$->span = SP(@$);
        $$->name = $2; $$->name_span = SP(@2); $$->bparams = $4; $$->members = $7; }
  | KW_BLOCK error '{' { OK(); } members '}'
      { $$ = arena_alloc(A, sizeof(Item)); $$->kind = IT_BLOCK; $$->span = SP(@$);
        $$->name = "<error>"; $$->members = $5; }
  | KW_BLOCK IDENT '(' error '{' { OK(); } members '}'
      { $$ = arena_alloc(A, sizeof(Item)); $$->kind = IT_BLOCK; $$->span = SP(@$);
        $$->name = $2; $$->name_span = SP(@2); $$->members = $7; }
  ;

bparams_opt : %empty { $$ = (Vec){0}; } | bparams ;
bparams
  : bparam                { $$ = vec1(lx, $1); }
  | bparams ',' bparam    { $$ = $1; vec_push(A, &$$, $3); }
  ;
bparam
  : IDENT                 { $$ = arena_alloc(A, sizeof(BlockParam)); $$->span = SP(@$); $$->name = $1; }
  | IDENT '=' expr        { $$ = arena_alloc(A, sizeof(BlockParam)); $$->span = SP(@$); $$->name = $1; $$->deflt = $3; }
  ;

// model FashionMLP { members }
model
  : KW_MODEL IDENT '{' members '}'
      { $$ = arena_alloc(A, sizeof(Item)); $$->kind = IT_MODEL; $$->span = SP(@$);
        $$->name = $2; $$->name_span = SP(@2); $$->members = $4; }
  | KW_MODEL error '{' { OK(); } members '}'
      { $$ = arena_alloc(A, sizeof(Item)); $$->kind = IT_MODEL; $$->span = SP(@$);
        $$->name = "<error>"; $$->members = $5; }
  ;

// fn ste(x: f32[N]) -> f32[N] { ... } grad(dy) { ... }
fnitem
  : KW_FN method
      { $$ = arena_alloc(A, sizeof(Item)); $$->kind = IT_FN; $$->span = SP(@$);
        $$->name = $2->name; $$->name_span = $2->name_span; $$->fn = $2; }
  ;

members
  : %empty                { $$ = (Vec){0}; }
  | members member        { $$ = $1; vec_push(A, &$$, $2); OK(); }
  | members NL            { $$ = $1; }
  | members error NL      { $$ = $1; yyerrok; OK(); }
  ;

member
  : frozen_opt KW_PARAM IDENT ':' type init_opt NL
      { $$ = arena_alloc(A, sizeof(Member)); $$->kind = MB_PARAM; $$->span = range(lx, $1 ? @1 : @2, @6);
        $$->frozen = $1; $$->name = $3; $$->name_span = SP(@3); $$->type = $5; $$->init = $6; }
  | KW_BUFFER IDENT ':' type init_opt NL
      { $$ = arena_alloc(A, sizeof(Member)); $$->kind = MB_BUFFER; $$->span = range(lx, @1, @5);
        $$->name = $2; $$->name_span = SP(@2); $$->type = $4; $$->init = $5; }
  | IDENT '=' IDENT '(' args_opt ')' NL
      { $$ = arena_alloc(A, sizeof(Member)); $$->kind = MB_INSTANCE; $$->span = range(lx, @1, @6);
        $$->name = $1; $$->name_span = SP(@1); $$->block_name = $3; $$->block_span = SP(@3);
        $$->args = $5; }
  | IDENT '=' '[' insts ']' NL
      { $$ = arena_alloc(A, sizeof(Member)); $$->kind = MB_INSTANCE_LIST; $$->span = range(lx, @1, @5);
        $$->name = $1; $$->name_span = SP(@1); $$->elems = $4; }
  | IDENT '=' '[' inst KW_FOR IDENT IDENT expr ']' NL
      { expect_in(lx, $7, @7);
        $$ = arena_alloc(A, sizeof(Member)); $$->kind = MB_INSTANCE_LIST; $$->span = range(lx, @1, @9);
        $$->name = $1; $$->name_span = SP(@1); $$->elems = vec1(lx, $4);
        $$->loop_var = $6; $$->loop_span = SP(@6); $$->loop_iter = $8; }
  | method
      { $$ = arena_alloc(A, sizeof(Member)); $$->kind = MB_METHOD; $$->span = SP(@$);
        $$->name = $1->name; $$->name_span = $1->name_span; $$->method = $1; }
  ;

// [Linear(784, 256), Linear(256, 10)]: the elements are named 0, 1, ...
insts
  : inst                  { $$ = vec1(lx, $1); }
  | insts ',' inst        { $$ = $1; $3->name = arena_printf(A, "%d", $1.len); vec_push(A, &$$, $3); }
  ;
inst
  : IDENT '(' args_opt ')' { $$ = inst_elem(lx, 0, $1, SP(@1), $3, SP(@$)); }
  ;

frozen_opt : %empty { $$ = false; } | KW_FROZEN { $$ = true; } ;
init_opt   : %empty { $$ = NULL; } | KW_INIT expr { $$ = $2; } ;

method
  : IDENT '(' params_opt ')' ARROW type '{' stmts '}'
      { $$ = arena_alloc(A, sizeof(Func)); $$->span = SP(@$); $$->name = $1;
        $$->name_span = SP(@1); $$->params = $3; $$->ret = $6; $$->body = $8; }
  | IDENT '(' params_opt ')' ARROW '(' results ')' '{' stmts '}'
      { $$ = arena_alloc(A, sizeof(Func)); $$->span = SP(@$); $$->name = $1;
        $$->name_span = SP(@1); $$->params = $3; $$->body = $10;
        $$->ret = ((Param *)$7.data[0])->type;
        if ($7.len > 1) $$->results = $7; }
  | IDENT '(' error '{' { OK(); } stmts '}'
      { $$ = arena_alloc(A, sizeof(Func)); $$->span = SP(@$); $$->name = $1;
        $$->name_span = SP(@1); $$->body = $6; }
  | method KW_GRAD '(' IDENT ')' '{' stmts '}'
      { $$ = $1; $$->has_grad = true; $$->grad_span = span_join(SP(@2), SP(@8));
        $$->grad_name = $4; $$->grad_name_span = SP(@4); $$->grad_body = $7; }
  ;

// -> (f32[B, 10], aux: f32): several results, each optionally named
results
  : result                { $$ = vec1(lx, $1); }
  | results ',' result    { $$ = $1; vec_push(A, &$$, $3); }
  ;
result
  : type                  { $$ = arena_alloc(A, sizeof(Param)); $$->span = SP(@$); $$->type = $1; }
  | IDENT ':' type        { $$ = arena_alloc(A, sizeof(Param)); $$->span = SP(@$);
                            $$->name = $1; $$->name_span = SP(@1); $$->type = $3; }
  ;

params_opt : %empty { $$ = (Vec){0}; } | params ;
params
  : param                 { $$ = vec1(lx, $1); }
  | params ',' param      { $$ = $1; vec_push(A, &$$, $3); }
  ;
param
  : IDENT ':' type        { $$ = arena_alloc(A, sizeof(Param)); $$->span = SP(@$);
                            $$->name = $1; $$->name_span = SP(@1); $$->type = $3; }
  ;

// f32 | f32[B, 784] | f32[B*7*7]
type
  : DTYPE                 { $$ = arena_alloc(A, sizeof(TypeExpr)); $$->span = SP(@$);
                            $$->dtype = $1; $$->dtype_span = SP(@1); }
  | DTYPE '[' dims ']'    { $$ = arena_alloc(A, sizeof(TypeExpr)); $$->span = SP(@$);
                            $$->dtype = $1; $$->dtype_span = SP(@1); $$->has_dims = true; $$->dims = $3; }
  ;
dims
  : dim                   { $$ = vec1(lx, $1); }
  | dims ',' dim          { $$ = $1; vec_push(A, &$$, $3); }
  ;
// `...`: any number of leading dims (sema allows it first, in signatures)
dim
  : expr
  | ELLIPSIS              { $$ = ast_expr(A, EX_ELLIPSIS, SP(@$)); }
  ;

stmts
  : %empty                { $$ = (Vec){0}; }
  | stmts stmt            { $$ = $1; vec_push(A, &$$, $2); OK(); }
  | stmts NL              { $$ = $1; }
  | stmts error NL        { $$ = $1; yyerrok; OK(); }
  ;

stmt
  : binding
  | names '=' expr NL
      { $$ = arena_alloc(A, sizeof(Stmt)); $$->kind = ST_LET; $$->span = range(lx, @1, @3);
        $$->names = $1; $$->name = ((Param *)$1.data[0])->name;
        $$->name_span = ((Param *)$1.data[0])->name_span; $$->value = $3; }
  | IDENT ':' type '=' expr NL
      { $$ = arena_alloc(A, sizeof(Stmt)); $$->kind = ST_LET; $$->span = range(lx, @1, @5);
        $$->name = $1; $$->name_span = SP(@1); $$->type = $3; $$->value = $5; }
  | KW_FOR IDENT IDENT expr '{' stmts '}'
      { expect_in(lx, $3, @3);
        $$ = arena_alloc(A, sizeof(Stmt)); $$->kind = ST_FOR; $$->span = SP(@$);
        $$->name = $2; $$->name_span = SP(@2); $$->value = $4; $$->body = $6; }
  | KW_RETURN exprs NL
      { $$ = arena_alloc(A, sizeof(Stmt)); $$->kind = ST_RETURN; $$->span = range(lx, @1, @2);
        if ($2.len == 1) $$->value = $2.data[0];
        else { $$->value = ast_expr(A, EX_LIST, SP(@2));
               for (int i = 0; i < $2.len; i++)
                 vec_push(A, &$$->value->args, ast_arg(A, ((Expr *)$2.data[i])->span, NULL, $2.data[i])); } }
  ;

binding
  : IDENT '=' expr NL
      { $$ = arena_alloc(A, sizeof(Stmt)); $$->kind = ST_LET; $$->span = range(lx, @1, @3);
        $$->name = $1; $$->name_span = SP(@1); $$->value = $3; }
  ;

// logits, aux = forward(x): one name per result of a call
names
  : IDENT ',' IDENT
      { Param *a = arena_alloc(A, sizeof(Param)), *b = arena_alloc(A, sizeof(Param));
        a->name = $1; a->span = a->name_span = SP(@1); b->name = $3; b->span = b->name_span = SP(@3);
        $$ = vec1(lx, a); vec_push(A, &$$, b); }
  | names ',' IDENT
      { Param *c = arena_alloc(A, sizeof(Param)); c->name = $3; c->span = c->name_span = SP(@3);
        $$ = $1; vec_push(A, &$$, c); }
  ;

// train FashionMLP { batch 64  epochs 5  optimizer sgd(lr = 0.05) ... }
train
  : KW_TRAIN IDENT '{' settings '}'
      { $$ = arena_alloc(A, sizeof(Item)); $$->kind = IT_TRAIN; $$->span = SP(@$);
        $$->name = $2; $$->name_span = SP(@2); $$->settings = $4; }
  | KW_TRAIN error '{' { OK(); } settings '}'
      { $$ = arena_alloc(A, sizeof(Item)); $$->kind = IT_TRAIN; $$->span = SP(@$);
        $$->name = "<error>"; $$->settings = $5; }
  ;

settings
  : %empty                { $$ = (Vec){0}; }
  | settings setting      { $$ = $1; vec_push(A, &$$, $2); OK(); }
  | settings NL           { $$ = $1; }
  | settings error NL     { $$ = $1; yyerrok; OK(); }
  ;

setting
  : IDENT expr
      { $$ = arena_alloc(A, sizeof(Setting)); $$->span = SP(@$); $$->key = $1;
        $$->key_span = SP(@1); $$->value = $2; }
  | IDENT IDENT '=' expr
      { $$ = arena_alloc(A, sizeof(Setting)); $$->span = SP(@$); $$->key = $1;
        $$->key_span = SP(@1); $$->sub_key = $2; $$->sub_span = SP(@2); $$->value = $4; }
  | IDENT '{' bindings '}'
      { $$ = arena_alloc(A, sizeof(Setting)); $$->span = SP(@$); $$->key = $1;
        $$->key_span = SP(@1); $$->has_bindings = true; $$->bindings = $3; }
  ;

bindings
  : %empty                { $$ = (Vec){0}; }
  | bindings binding      { $$ = $1; vec_push(A, &$$, $2); OK(); }
  | bindings NL           { $$ = $1; }
  | bindings error NL     { $$ = $1; yyerrok; OK(); }
  ;

expr
  : expr KW_OR expr       { $$ = binary(lx, OP_OR, $1, $3, SP(@$)); }
  | expr KW_AND expr      { $$ = binary(lx, OP_AND, $1, $3, SP(@$)); }
  | KW_NOT expr           { $$ = unary(lx, OP_NOT, $2, SP(@$)); }
  | expr EQ expr          { $$ = binary(lx, OP_EQ, $1, $3, SP(@$)); }
  | expr NE expr          { $$ = binary(lx, OP_NE, $1, $3, SP(@$)); }
  | expr '<' expr         { $$ = binary(lx, OP_LT, $1, $3, SP(@$)); }
  | expr LE expr          { $$ = binary(lx, OP_LE, $1, $3, SP(@$)); }
  | expr '>' expr         { $$ = binary(lx, OP_GT, $1, $3, SP(@$)); }
  | expr GE expr          { $$ = binary(lx, OP_GE, $1, $3, SP(@$)); }
  | expr '+' expr         { $$ = binary(lx, OP_ADD, $1, $3, SP(@$)); }
  | expr '-' expr         { $$ = binary(lx, OP_SUB, $1, $3, SP(@$)); }
  | expr '*' expr         { $$ = binary(lx, OP_MUL, $1, $3, SP(@$)); }
  | expr '/' expr         { $$ = binary(lx, OP_DIV, $1, $3, SP(@$)); }
  | expr FLOORDIV expr    { $$ = binary(lx, OP_FLOORDIV, $1, $3, SP(@$)); }
  | expr '@' expr         { $$ = binary(lx, OP_MATMUL, $1, $3, SP(@$)); }
  | '-' expr %prec NEG    { $$ = unary(lx, OP_NEG, $2, SP(@$)); }
  | expr POW expr         { $$ = binary(lx, OP_POW, $1, $3, SP(@$)); }
  | postfix
  ;

postfix
  : primary
  | postfix '(' args_opt ')'
      { $$ = ast_expr(A, EX_CALL, SP(@$)); $$->lhs = $1; $$->args = $3; }
  | postfix '.' IDENT
      { $$ = ast_expr(A, EX_MEMBER, SP(@$)); $$->lhs = $1; $$->name = $3; }
  | postfix '.' INT       /* blocks.0: an element of a list of instances */
      { $$ = ast_expr(A, EX_MEMBER, SP(@$)); $$->lhs = $1; $$->name = $3->name; }
  | postfix '[' indices ']'
      { $$ = ast_expr(A, EX_INDEX, SP(@$)); $$->lhs = $1; $$->args = $3; }
  ;

primary
  : INT | FLOAT | STRING
  | KW_TRUE               { $$ = ast_expr(A, EX_BOOL, SP(@$)); $$->ival = 1; }
  | KW_FALSE              { $$ = ast_expr(A, EX_BOOL, SP(@$)); $$->ival = 0; }
  | IDENT                 { $$ = ast_expr(A, EX_NAME, SP(@$)); $$->name = $1; }
  | DTYPE                 { $$ = ast_expr(A, EX_DTYPE, SP(@$)); $$->dtype = $1; }
  | '(' expr ')'          { $$ = $2; $$->span = SP(@$); }
  | '[' exprs_opt ']'
      { $$ = ast_expr(A, EX_LIST, SP(@$));
        for (int i = 0; i < $2.len; i++)
          vec_push(A, &$$->args, ast_arg(A, ((Expr *)$2.data[i])->span, NULL, $2.data[i])); }
  ;

exprs_opt : %empty { $$ = (Vec){0}; } | exprs ;
exprs
  : expr                  { $$ = vec1(lx, $1); }
  | exprs ',' expr        { $$ = $1; vec_push(A, &$$, $3); }
  ;

args_opt : %empty { $$ = (Vec){0}; } | args ;
args
  : arg                   { $$ = vec1(lx, $1); }
  | args ',' arg          { $$ = $1; vec_push(A, &$$, $3); }
  ;
arg
  : expr                  { $$ = ast_arg(A, SP(@$), NULL, $1); }
  | IDENT '=' expr        { $$ = ast_arg(A, SP(@$), $1, $3); $$->name_span = SP(@1); }
  | IDENT '=' expr IDENT  { $$ = ast_arg(A, SP(@$), $1, $3); $$->name_span = SP(@1);
                            $$->unit = $4; $$->unit_span = SP(@4); }
  ;

// x[i, a:b, :, ::2]
indices
  : index                 { $$ = vec1(lx, ast_arg(A, SP(@1), NULL, $1)); }
  | indices ',' index     { $$ = $1; vec_push(A, &$$, ast_arg(A, SP(@3), NULL, $3)); }
  ;
index
  : expr
  | sopt ':' sopt
      { $$ = ast_expr(A, EX_SLICE, SP(@$)); $$->lhs = $1; $$->rhs = $3; }
  | sopt ':' sopt ':' sopt
      { $$ = ast_expr(A, EX_SLICE, SP(@$)); $$->lhs = $1; $$->rhs = $3; $$->step = $5; }
  ;
sopt : %empty { $$ = NULL; } | expr ;

%%

// True for tokens that are operators: listing them in "expected ..." adds
// noise; a closing bracket or separator is what the user needs to hear.
static bool is_operator(yysymbol_kind_t k) {
  static const int toks[] = {KW_AND, KW_OR, EQ, NE, LE, GE, POW, '<', '>',
                             '+', '-', '*', '/', '@', '.', '(', '[', FLOORDIV};
  for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++)
    if (k == YYTRANSLATE(toks[i])) return true;
  return false;
}

static bool same_line_as_lex_error(const Lexer *lx, uint32_t off) {
  if (!lx->lex_error_at || off + 1 < lx->lex_error_at) return false;
  for (uint32_t i = lx->lex_error_at - 1; i < off && i < lx->file->len; i++)
    if (lx->file->text[i] == '\n') return false;
  return true;
}

// "unexpected ')', expected identifier" — with the offending token's text for
// identifiers and numbers, and the expected tokens when there are few.
static int yyreport_syntax_error(const yypcontext_t *ctx, Lexer *lx) {
  lx->depth = 0; // from here on every line end is a token (see mlc_lex)
  yysymbol_kind_t tok = yypcontext_token(ctx);
  bool cascade = lx->nsyntax > 0 && (tok == YYTRANSLATE('}') || tok == YYSYMBOL_YYEOF);
  const MLC_LTYPE *loc = yypcontext_location(ctx);
  if (lx->syntax_reported || cascade || loc->off == lx->bad_token ||
      same_line_as_lex_error(lx, loc->off))
    return 0;
  lx->syntax_reported = true;
  lx->nsyntax++;
  enum { MAXEXP = 64 };
  yysymbol_kind_t all[MAXEXP], exp[MAXEXP];
  int nall = yypcontext_expected_tokens(ctx, all, MAXEXP), n = 0;
  for (int i = 0; i < nall; i++)
    if (nall <= 4 || !is_operator(all[i])) exp[n++] = all[i];
  StrBuf b = {0};
  Span sp = lex_span(lx, *loc);
  if (tok == YYSYMBOL_IDENT || tok == YYSYMBOL_INT || tok == YYSYMBOL_FLOAT)
    sb_printf(&b, "unexpected %s '%.*s'", yysymbol_name(tok),
              (int)(sp.len > 40 ? 40 : sp.len), lx->file->text + sp.off);
  else
    sb_printf(&b, "unexpected %s", yysymbol_name(tok));
  bool wants_expr = false;
  for (int i = 0; i < nall; i++) wants_expr |= all[i] == YYSYMBOL_INT;
  if (wants_expr && n > 5) {
    sb_puts(&b, ", expected an expression");
  } else if (n > 0 && n <= 5) {
    sb_puts(&b, ", expected ");
    for (int i = 0; i < n; i++) {
      if (i) sb_puts(&b, i == n - 1 ? " or " : ", ");
      sb_puts(&b, yysymbol_name(exp[i]));
    }
  }
  if (n < nall && n <= 5) sb_puts(&b, n ? " or an operator" : ", expected an operator");
  diag_error(lx->diags, sp, "%s", b.data);
  sb_free(&b);
  return 0;
}

void mlc_error(MLC_LTYPE *loc, Lexer *lx, const char *msg) {
  if (strcmp(msg, "memory exhausted") == 0)
    diag_error(lx->diags, lex_span(lx, *loc),
               "nesting is too deep (the parser allows about a thousand levels)");
  else
    diag_error(lx->diags, lex_span(lx, *loc), "%s", msg);
}

const char *lex_token_name(int tok) {
  return yysymbol_name(YYTRANSLATE(tok));
}
