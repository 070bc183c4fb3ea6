"""The optimizers' constructors take their arguments in Paddle 1.8.5's order, with its defaults (read from
paddlepaddle==1.8.5's own signatures), so a positional call lands where it does in Paddle."""
import inspect

import numpy as np
import pytest

import fluidist as fluid

_REQUIRED = inspect.Parameter.empty
PADDLE_18 = {   # constructor arguments after self: (name, default)
    "SGD": [("learning_rate", _REQUIRED), ("parameter_list", None), ("regularization", None), ("grad_clip", None),
            ("name", None)],
    "Momentum": [("learning_rate", _REQUIRED), ("momentum", _REQUIRED), ("parameter_list", None),
                 ("use_nesterov", False), ("regularization", None), ("grad_clip", None), ("name", None)],
    "LarsMomentum": [("learning_rate", _REQUIRED), ("momentum", _REQUIRED), ("lars_coeff", 0.001),
                     ("lars_weight_decay", 0.0005), ("parameter_list", None), ("regularization", None),
                     ("grad_clip", None), ("name", None)],
    "Adagrad": [("learning_rate", _REQUIRED), ("epsilon", 1e-06), ("parameter_list", None), ("regularization", None),
                ("grad_clip", None), ("name", None), ("initial_accumulator_value", 0.0)],
    "DecayedAdagrad": [("learning_rate", _REQUIRED), ("decay", 0.95), ("epsilon", 1e-06), ("parameter_list", None),
                       ("regularization", None), ("grad_clip", None), ("name", None)],
    "Adam": [("learning_rate", 0.001), ("beta1", 0.9), ("beta2", 0.999), ("epsilon", 1e-08), ("parameter_list", None),
             ("regularization", None), ("grad_clip", None), ("name", None), ("lazy_mode", False)],
    "Adamax": [("learning_rate", 0.001), ("beta1", 0.9), ("beta2", 0.999), ("epsilon", 1e-08), ("parameter_list", None),
               ("regularization", None), ("grad_clip", None), ("name", None)],
    "RMSProp": [("learning_rate", _REQUIRED), ("rho", 0.95), ("epsilon", 1e-06), ("momentum", 0.0), ("centered", False),
                ("parameter_list", None), ("regularization", None), ("grad_clip", None), ("name", None)],
    "Ftrl": [("learning_rate", _REQUIRED), ("l1", 0.0), ("l2", 0.0), ("lr_power", -0.5), ("parameter_list", None),
             ("regularization", None), ("grad_clip", None), ("name", None)],
    "Lamb": [("learning_rate", 0.001), ("lamb_weight_decay", 0.01), ("beta1", 0.9), ("beta2", 0.999), ("epsilon", 1e-06),
             ("parameter_list", None), ("regularization", None), ("grad_clip", None),
             ("exclude_from_weight_decay_fn", None), ("name", None)],
    "Adadelta": [("learning_rate", _REQUIRED), ("epsilon", 1e-06), ("rho", 0.95), ("parameter_list", None),
                 ("regularization", None), ("grad_clip", None), ("name", None)],
    "DpsgdOptimizer": [("learning_rate", 0.001), ("clip", 0.9), ("batch_size", 0.999), ("sigma", 1e-08),
                       ("parameter_list", None)],
    "Optimizer": [("learning_rate", _REQUIRED), ("parameter_list", None), ("regularization", None), ("grad_clip", None),
                  ("name", None)],
}


@pytest.mark.parametrize("name", sorted(PADDLE_18))
def test_constructor_arguments_in_paddle_order_with_its_defaults(name):
    params = list(inspect.signature(getattr(fluid.optimizer, name).__init__).parameters.values())[1:]
    assert [(p.name, p.default) for p in params] == PADDLE_18[name]
    if name not in ("Optimizer", "DpsgdOptimizer"):
        assert getattr(fluid.optimizer, name + "Optimizer") is getattr(fluid.optimizer, name)


def test_a_positional_parameter_list_updates_only_those_parameters():
    x = fluid.data(name="x", shape=[None, 2], dtype="float32")
    h = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w1"), bias_attr=False)
    loss = fluid.layers.mean(fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name="w2"), bias_attr=False))
    fluid.optimizer.SGD(0.5, ["w2"]).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    scope = fluid.global_scope()
    before = {n: np.array(scope.find_var(n).get_tensor()) for n in ("w1", "w2")}
    exe.run(feed={"x": np.ones((3, 2), "float32")}, fetch_list=[loss])
    after = {n: np.array(scope.find_var(n).get_tensor()) for n in ("w1", "w2")}
    np.testing.assert_array_equal(after["w1"], before["w1"])
    assert not np.array_equal(after["w2"], before["w2"])


def test_the_names_paddles_optimizer_module_imports_resolve_there_too():
    """Paddle 1.8's fluid/optimizer.py imports these for itself; scripts import them from it."""
    import fluidist.optimizer as opt
    from fluidist.optimizer import (Constant, GradientClipBase, GradientClipByNorm, LayerHelper,  # noqa: F401
                                    LearningRateDecay, Program, append_backward, defaultdict, program_guard)
    assert Program is fluid.Program and Constant is fluid.initializer.Constant
    assert GradientClipByNorm is fluid.clip.GradientClipByNorm and LayerHelper is fluid.layer_helper.LayerHelper
    assert "Program" not in opt.__all__       # as in Paddle: imported, not exported by a star import
