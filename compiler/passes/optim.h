// optim.h — the training step as one graph IR function (optim.c): loss and
// gradients of K micro-batches, their average, the global gradient norm and
// clipping, the learning rate from the step counter, the optimizer update,
// and `store`s of the new params, optimizer state and step counter.
//
//   func train_step(<loss args of micro-batch 0>, .., <of micro-batch K-1>)
//       -> (loss, grad_norm, lr, aux.., [scale, overflow, skipped])
//   func plateau_update(%metric: F[]) -> (F[])      (plateau schedule only)
//
// loss is the mean of the micro-batch losses, grad_norm the global L2 norm
// of the averaged gradients before clipping, lr the rate this step used,
// aux the loss function's other outputs (its auxiliary values), each the
// mean over the micro-batches like the loss. With loss scaling
// (OptimRecipe.loss_scale) `grad` takes the seed gradient as its last
// argument (ad_grad's seed_arg), and three more results follow: the scale
// the step ran with, 1 when its gradients overflowed and the update was
// skipped (else 0), and the steps skipped so far (all of the loss's dtype).
// With K = 1 the arguments keep the loss function's names; with K > 1 the
// arguments of micro-batch k are named NAME_k. Formulas: docs/design/optim.md.
//
// Optimizer state lives in the module as IRP_OPTSTATE entries:
//   opt.step                     i64[]   optimizer steps taken so far
//   opt.base_lr                  F[]     the recipe's lr (the program's --lr sets it)
//   opt.steps_per_epoch          i64[]   set by the runtime from the data size
//   opt.total_steps              i64[]   epochs * steps_per_epoch (runtime)
//   opt.PATH.momentum_buffer     sgd with momentum > 0
//   opt.PATH.exp_avg, opt.PATH.exp_avg_sq        adam, adamw
//   opt.plateau.scale, opt.plateau.best, opt.plateau.bad (i64)   plateau
//   opt.scaler.scale (F[]), opt.scaler.skipped, opt.scaler.growth_tracker (i64,
//                                dynamic only)                loss scaling
// All start at zero except opt.scaler.scale (init_scale), opt.plateau.scale
// (1), opt.plateau.best (+inf when minimising the metric, -inf when
// maximising) and the two step counts (from the recipe's epochs and
// steps_per_epoch): optim_state_init. opt.step counts every step; with loss
// scaling the optimizer's own count (Adam's t) is opt.step - opt.scaler.skipped.
#ifndef MLC_OPTIM_H
#define MLC_OPTIM_H

#include "graph/ir.h"
#include "sema/recipe.h" // OptimRecipe: sema's output for the train block

// Adds the optimizer state to m and builds train_step from `loss` (whose
// output 0 is the scalar loss, the others auxiliary scalars) and its
// gradient function `grad` from ad_grad (results: loss, then one gradient
// per trainable param read by `loss`, in module declaration order, then
// loss's other outputs: keep_outputs). The recipe is sema's (sema_recipe), checked
// there: a malformed one, or a loss that is not a float scalar, is a
// compiler bug.
IrFunc *optim_build_step(IrModule *m, IrFunc *loss, IrFunc *grad, const OptimRecipe *r);

// plateau_update(%metric: dt[]) -> (scale): torch's ReduceLROnPlateau with
// threshold 1e-4 (relative), no cooldown, min_lr 0 and eps 1e-8; it updates
// opt.plateau.* (which optim_build_step added). Call once per epoch.
IrFunc *optim_build_plateau(IrModule *m, const OptimRecipe *r, DType dt);

// The initial value of every element of optimizer state slot `path`.
double optim_state_init(const OptimRecipe *r, const char *path);

// The learning rate of optimizer step s (0-based) and plateau scale, as the
// graph computes it; used by tests and the runtime's logging.
double optim_lr(const OptimRecipe *r, int64_t s, double plateau_scale);

#endif
