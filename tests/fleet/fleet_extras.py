"""The optimizers and training helpers of issue "readers, ParallelExecutor, optimizers" built the same
way for a fleet worker and for its local reference: ``minimize_for(what, wrap)`` gives the
``minimize(loss)`` that fleet_models.build calls (``wrap`` turns the optimizer into the fleet's
distributed one, or leaves it) and a function naming the state to compare besides the parameters."""
import fluidist as fluid
from fleet_models import base_optimizer

KINDS = ["adadelta", "dpsgd", "lookahead", "ema", "model_average", "recompute", "gradient_merge"]
MERGE_K = 2


def optimizer_for(what):
    if what == "adadelta":
        return fluid.optimizer.Adadelta(learning_rate=0.05, rho=0.9)
    if what == "dpsgd":
        return fluid.optimizer.Dpsgd(learning_rate=0.05, clip=0.05, batch_size=8.0, sigma=0.0)
    if what == "lookahead":
        return fluid.optimizer.LookaheadOptimizer(fluid.optimizer.SGD(0.05), alpha=0.5, k=2)
    if what == "model_average":
        return fluid.optimizer.Momentum(0.05, 0.9)
    if what in ("ema", "recompute", "gradient_merge"):
        return fluid.optimizer.SGD(0.05)
    return base_optimizer(what)


def minimize_for(what, wrap=lambda opt: opt):
    state = []

    def minimize(loss):
        wrap(optimizer_for(what)).minimize(loss)
        if what == "ema":
            ema = fluid.optimizer.ExponentialMovingAverage(0.5)
            ema.update()
            state.extend(v.name for v in ema._ema_vars.values())
        elif what == "model_average":
            avg = fluid.optimizer.ModelAverage(0.5, min_average_window=1, max_average_window=2)
            state.extend(v.name for s in avg._state.values() for v in s.values())
    return minimize, state


def hidden_var(program):
    """The output of the first fc's tanh (a recompute checkpoint)."""
    return next(op.output("Out")[0] for op in program.global_block().ops if op.type == "tanh")
