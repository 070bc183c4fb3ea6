"""Model averaging ops: what ``ModelAverage`` and ``ExponentialMovingAverage`` run after each
update. Both read the parameters as the update left them, so they carry the registry fact
``after_update``: wherever the updates run (on pservers), these stay with the trainer, after the
parameters are received. Their state is updated in place."""
import numpy as np

from ..framework.op_role import OpRole
from ..framework.registry import no_infer, register_op

# sums are restarted into sum_2 every this many accumulations, so float sums keep their precision
MAX_NUM_ACCUMULATES = 16384


@register_op("average_accumulates",
             inputs=["param", "in_sum_1", "in_sum_2", "in_sum_3", "in_num_accumulates", "in_old_num_accumulates",
                     "in_num_updates"],
             outputs=["out_sum_1", "out_sum_2", "out_sum_3", "out_num_accumulates", "out_old_num_accumulates",
                      "out_num_updates"],
             attrs={"average_window": 0.0, "max_average_window": 10000, "min_average_window": 10000},
             infer=no_infer, role=OpRole.Optimize, after_update=True)
def average_accumulates(ctx, ins, attrs):
    """Paddle's sliding-window sums of a parameter (``ModelAverage``)::

        num_updates += 1; num_accumulates += 1; sum_1 += param
        if num_updates % 16384 == 0: sum_2 += sum_1; sum_1 = 0
        if num_accumulates >= min_average_window and
           num_accumulates >= min(max_average_window, num_updates * average_window):
            sum_3 = sum_1 + sum_2; sum_1 = sum_2 = 0
            old_num_accumulates = num_accumulates; num_accumulates = 0

    The average is then ``(sum_1 + sum_2 + sum_3) / (num_accumulates + old_num_accumulates)``."""
    lo, hi = int(attrs["min_average_window"]), int(attrs["max_average_window"])
    if lo > hi:
        raise ValueError("average_accumulates: min_average_window %d > max_average_window %d" % (lo, hi))
    p = ins["param"]
    s1, s2, s3 = ins["in_sum_1"], ins["in_sum_2"], ins["in_sum_3"]
    n_acc, n_old, n_upd = ins["in_num_accumulates"], ins["in_old_num_accumulates"], ins["in_num_updates"]
    for name, s in (("in_sum_1", s1), ("in_sum_2", s2), ("in_sum_3", s3)):
        if tuple(s.shape) != tuple(p.shape):
            raise ValueError("average_accumulates: %s %r has shape %s but param %r has %s"
                             % (name, ctx.op.inputs[name][0], list(s.shape), ctx.op.inputs["param"][0], list(p.shape)))
    n_upd += 1
    n_acc += 1
    s1 += p
    updates, accumulates = int(n_upd.reshape(-1)[0]), int(n_acc.reshape(-1)[0])
    if updates % MAX_NUM_ACCUMULATES == 0:
        s2 += s1
        s1[...] = 0
    if accumulates >= lo and accumulates >= min(hi, updates * float(attrs["average_window"])):
        s3[...] = s1 + s2
        s1[...] = 0
        s2[...] = 0
        n_old[...] = n_acc
        n_acc[...] = 0
    return {"out_sum_1": s1, "out_sum_2": s2, "out_sum_3": s3, "out_num_accumulates": n_acc,
            "out_old_num_accumulates": n_old, "out_num_updates": n_upd}


@register_op("exponential_moving_average", host_inputs=("ThresSteps",), inputs=["Param", "Ema", "Decay", "ThresSteps?", "Step?"],
             outputs=["EmaOut", "DecayOut", "StepOut?"], attrs={"decay": 0.999},
             infer=no_infer, role=OpRole.Optimize, after_update=True)
def exponential_moving_average(ctx, ins, attrs):
    """One step of ``ExponentialMovingAverage``: ``ema = decay * ema + (1 - decay) * param``.

    ``decay`` is the attr, or with ``ThresSteps`` (a step count) ``min(decay, (t + 1) / (t + 10))``;
    the value used is written to ``Decay`` (the apply program's bias correction reads it). ``Step``,
    given to one op of the optimizer, counts the updates (Paddle's ``@EMA_STEP_COUNTER@``)."""
    p, ema, decay_var = ins["Param"], ins["Ema"], ins["Decay"]
    decay = float(attrs["decay"])
    if ins.get("ThresSteps") is not None:
        t = float(np.asarray(ins["ThresSteps"]).reshape(-1)[0])
        decay = min(decay, (t + 1.0) / (t + 10.0))
    decay_var[...] = decay
    d = ema.dtype.type(decay)
    ema *= d
    ema += (1 - d) * p
    out = {"EmaOut": ema, "DecayOut": decay_var}
    step = ins.get("Step")
    if step is not None:
        step += 1
        out["StepOut"] = step
    return out
