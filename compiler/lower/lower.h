// lower.h — from the checked program to graph IR entry points.
//
// Input: a Sema result (sema_analyze) and a model name. Output: one IrModule
// holding the model's parameters and buffers (by path: "fc1.w",
// "bn1.running_mean"; trainable or frozen; with their initialisers) and these
// functions, every call of user code inlined:
//   forward(<forward's params>) -> (out)        train mode (dropout on,
//                                                batch norm on batch stats)
//   loss(<loss's params>) -> (loss)             train mode; running-stat
//                                                updates as state stores
//   eval(<loss's params>) -> (loss, out)        eval mode (dropout off, batch
//                                                norm on running stats); `out`
//                                                is the forward output, when
//                                                loss calls forward
//   predict(<forward's params>) -> (out)        eval mode
// Nodes carry the span of the source expression that produced them.
#ifndef MLC_LOWER_H
#define MLC_LOWER_H

#include "graph/ir.h"
#include "sema/sema.h"

typedef struct LowerResult {
  IrModule *module;
  IrFunc *forward, *loss, *eval, *predict; // NULL where the model lacks the method
  IrNode *loss_out; // in loss: the model's forward output (eval's second result);
                    // NULL when loss does not call forward
} LowerResult;

// Returns false after reporting to `d` (an unknown model, or a construct the
// lowering does not support yet: the message says which).
bool lower_model(Arena *a, DiagSink *d, Sema *S, const char *model,
                 LowerResult *out);

// "kaiming_uniform": the name of an initialiser kind (IrParam.init).
const char *lower_init_name(IrInitKind k);

#endif
