// lower.h — from the checked program to graph IR entry points.
//
// Input: a Sema result (sema_analyze) without errors and a model name: what
// sema resolved (sema/checked.h), walked straight, every call of user code
// inlined. Output: one IrModule holding the model's parameters and buffers
// (by path: "fc1.w", "bn1.running_mean"; trainable or frozen; with their
// initialisers) and these functions:
//   forward(<forward's params>) -> (out, ..)    train mode (dropout on,
//                                                batch norm on batch stats);
//                                                every result of forward
//   loss(<loss's params>) -> (loss, aux..)      train mode; running-stat
//                                                updates as state stores; the
//                                                loss's other results follow it
//   eval(<loss's params>) -> (loss, out)        eval mode (dropout off, batch
//                                                norm on running stats); `out`
//                                                is the forward output, when
//                                                loss calls forward
//   predict(<forward's params>) -> (out)        eval mode; forward's first result
// plus one function per user-declared gradient. Nodes carry the span of the
// source expression that produced them (the user's call, inside prelude
// blocks).
#ifndef MLC_LOWER_H
#define MLC_LOWER_H

#include "graph/ir.h"
#include "sema/sema.h"

typedef struct LowerResult {
  IrModule *module;
  IrFunc *forward, *loss, *eval, *predict; // NULL where the model lacks the method
  IrNode *loss_out; // in loss: the model's forward output (eval's second result);
                    // NULL when loss does not call forward
  int naux;                 // loss's results after the first: auxiliary values
  const char *const *aux_names; // their names (sema requires them)
  // In loss, where no graph cross_entropy shows them (ignore_index, or a
  // reduction other than the mean): the first cross_entropy's targets and
  // logits, and the target value it ignores; NULL target otherwise.
  IrNode *label_target, *label_logits;
  bool label_ignore;
  int64_t label_ignore_value;
} LowerResult;

// Returns false after reporting to `d`: an unknown model, a program with
// errors, or a node that does not fit the sizes an inlined call gives it
// (reported at the node; sema's walk of the calls catches the known cases).
bool lower_model(Arena *a, DiagSink *d, Sema *S, const char *model, LowerResult *out);

#endif
