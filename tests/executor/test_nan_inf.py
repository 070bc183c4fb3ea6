"""FLAGS_check_nan_inf (Paddle 1.8.5's check_nan_inf_base.py: the first op writing nan or inf raises
core.EnforceNotMet naming it; PADDLE_INF_NAN_SKIP_OP / _ROLE / _VAR leave ops out)."""
import numpy as np
import pytest

import fluidist as fluid


def _net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], dtype="float32")
        h = fluid.layers.fc(x, 4, act="sigmoid", param_attr=fluid.initializer.Constant(0.1))
        loss = fluid.layers.mean(fluid.layers.log(h))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, loss


BAD = np.array([[1.0, np.nan, 2.0], [0.5, 0.5, 0.5]], "float32")


@pytest.fixture
def check_on(monkeypatch):
    for k in ("PADDLE_INF_NAN_SKIP_OP", "PADDLE_INF_NAN_SKIP_ROLE", "PADDLE_INF_NAN_SKIP_VAR"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("FLAGS_check_nan_inf", "1")
    return monkeypatch


def test_the_first_op_writing_nan_raises_enforce_not_met(check_on):
    main, exe, scope, loss = _net()
    out, = exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[loss], scope=scope)
    assert np.isfinite(out).all()
    with pytest.raises(fluid.core.EnforceNotMet, match=r"find nan or inf in 'fc_0.tmp_0', an output of op 'mul'") as e:
        exe.run(main, feed={"x": BAD}, fetch_list=[loss], scope=scope)
    assert type(e.value) is fluid.core.EnforceNotMet


def test_skips_by_op_role_and_variable(check_on):
    check_on.setenv("PADDLE_INF_NAN_SKIP_OP", "mul")
    check_on.setenv("PADDLE_INF_NAN_SKIP_VAR", "elementwise_add:fc_0.tmp_1")
    main, exe, scope, loss = _net()
    with pytest.raises(fluid.core.EnforceNotMet, match="'fc_0.tmp_2', an output of op 'sigmoid'"):
        exe.run(main, feed={"x": BAD}, fetch_list=[loss], scope=scope)
    check_on.setenv("PADDLE_INF_NAN_SKIP_ROLE", "backward,optimize")
    check_on.setenv("PADDLE_INF_NAN_SKIP_OP", "mul,elementwise_add,sigmoid,log,mean")
    exe.run(main, feed={"x": BAD}, fetch_list=[loss], scope=scope)      # every op that sees the nan is left out


def test_set_flags_turns_it_on_and_off(monkeypatch):
    monkeypatch.delenv("FLAGS_check_nan_inf", raising=False)
    main, exe, scope, loss = _net()
    exe.run(main, feed={"x": BAD}, fetch_list=[loss], scope=scope)        # off: nan goes through
    fluid.set_flags({"FLAGS_check_nan_inf": True})
    try:
        with pytest.raises(fluid.core.EnforceNotMet, match="find nan or inf"):
            exe.run(main, feed={"x": BAD}, fetch_list=[loss], scope=scope)
    finally:
        fluid.set_flags({"FLAGS_check_nan_inf": False})
    exe.run(main, feed={"x": BAD}, fetch_list=[loss], scope=scope)
