"""The trainer's background communicators against a real pserver (a thread serving over 127.0.0.1):
how the async one merges what it queued (summed for SGD, else averaged, as Paddle's MergeVars), the
half-async barrier, fake_rpc, failures; and the flags."""
import threading
import time

import numpy as np
import pytest

import fluidist as fluid
from fluidist.core.tensor import SelectedRows
from fluidist.distributed import communicator, rpc
from fluidist.distributed.communicator import AsyncCommunicator, CommunicatorError, HalfAsyncCommunicator
from fluidist.distributed.communicator_flags import CommunicatorFlags, merge_values
from test_rpc_ops import LR, endpoints, init_values, serve_in_thread

pytestmark = pytest.mark.timeout(90)
SHAPE = (4, 3)


# ------------------------------------------------------------------------------- merging and flags
def test_merge_dense_sums_or_averages():
    a, b, c = (np.full((2, 2), v, dtype=np.float32) for v in (1.0, 2.0, 6.0))
    np.testing.assert_array_equal(merge_values([a, b, c], True), np.full((2, 2), 9.0))
    np.testing.assert_array_equal(merge_values([a, b, c], False), np.full((2, 2), 3.0))
    assert merge_values([a], False) is a
    with pytest.raises(ValueError, match="shapes"):
        merge_values([a, np.zeros(3, np.float32)], True)


def test_merge_rows_by_id_divided_by_the_number_of_values():
    """Paddle's MergeAdd / MergeAverage: one sorted row per id; the average divides every row by how
    many values were merged, not by how many held the row."""
    x = SelectedRows(np.array([5, 1, 5]), np.array([[1.0], [2.0], [3.0]], np.float32), 8)
    y = SelectedRows(np.array([1]), np.array([[4.0]], np.float32), 8)
    added = merge_values([x, y], True)
    assert added.rows.tolist() == [1, 5] and added.value.ravel().tolist() == [6.0, 4.0] and added.height == 8
    averaged = merge_values([x, y], False)
    assert averaged.rows.tolist() == [1, 5] and averaged.value.ravel().tolist() == [3.0, 2.0]
    with pytest.raises(TypeError, match="row-sparse and dense"):
        merge_values([x, np.zeros((1, 1), np.float32)], True)


def test_flags_from_dict_environment_and_defaults(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "3")
    monkeypatch.setenv("FLAGS_communicator_send_wait_times", "7")
    monkeypatch.delenv("FLAGS_communicator_max_merge_var_num", raising=False)
    f = CommunicatorFlags({"communicator_thread_pool_size": "2", "FLAGS_communicator_fake_rpc": "1",
                           "rpc_deadline": "5000"})
    assert (f.thread_pool_size, f.fake_rpc, f.send_wait_times, f.max_merge_var_num) == (2, True, 7, 3)
    assert f.independent_recv_thread and f.is_sgd_optimizer and f.merge_sparse_grad
    with pytest.raises(ValueError, match="FLAGS_communicator_max_merge_var_num must be an integer"):
        CommunicatorFlags({"communicator_max_merge_var_num": "many"})
    with pytest.raises(ValueError, match="FLAGS_communicator_send_queue_size must be >= 1"):
        CommunicatorFlags({"communicator_send_queue_size": 0})
    with pytest.raises(ValueError, match="unknown communicator flag"):
        CommunicatorFlags({"communicator_merge_everything": 1})


# ------------------------------------------------------------------------------- against a pserver
def trainer_program(ep, sparse=False):
    """send w@GRAD (a gradient send: op_role_var) to ``ep``, recv w from it."""
    prog = fluid.Program()
    gb = prog.global_block()
    gb.create_var(name="w", shape=SHAPE, dtype="float32", persistable=True)
    gb.create_var(name="w@GRAD", shape=SHAPE, dtype="float32", type="SELECTED_ROWS" if sparse else "LOD_TENSOR")
    send = gb.append_op("send", inputs={"X": ["w@GRAD"]}, outputs={},
                        attrs={"epmap": [ep], "trainer_id": 0, "op_role_var": ["w", "w@GRAD"]})
    gb.append_op("recv", inputs={"X": []}, outputs={"Out": ["w"]}, attrs={"epmap": [ep], "trainer_id": 0})
    return prog, send


@pytest.fixture
def async_pserver():
    started = []

    def start(sparse=False):
        (ep,) = endpoints(1)
        server, scope = serve_in_thread(ep, 1, mode=1, params={"w": SHAPE}, sparse=("w",) if sparse else ())
        started.append((ep, server))
        return ep, server, scope
    yield start
    for ep, server in started:
        rpc.call_all([(ep, dict(kind="complete", trainer=0))])
        server.result(timeout=20)


def grads(n, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.randn(*SHAPE).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("is_sgd,combine", [(1, np.sum), (0, np.mean)])
def test_async_merges_what_it_queued_into_one_update(async_pserver, is_sgd, combine):
    """Three gradients queued before the send thread starts, max_merge_var_num 3: the pserver applies
    one SGD update with their sum (is_sgd_optimizer) or their mean; stop() receives the result."""
    ep, server, ps_scope = async_pserver()
    prog, send = trainer_program(ep)
    scope = fluid.Scope()
    comm = AsyncCommunicator(prog, scope, {"communicator_max_merge_var_num": 3, "communicator_send_queue_size": 3,
                                           "communicator_is_sgd_optimizer": is_sgd})
    gs = grads(3)
    for g in gs:
        comm.push(send, [g], scope)
    comm.start()
    assert communicator.active() is comm
    comm.stop()
    assert communicator.active() is None and not comm.is_running()
    want = init_values({"w": SHAPE})["w"] - np.float32(LR) * combine(np.stack(gs), axis=0)
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), want, rtol=1e-6)


def test_async_sparse_gradients_merge_by_row(async_pserver):
    ep, server, _ = async_pserver(sparse=True)
    prog, send = trainer_program(ep, sparse=True)
    scope = fluid.Scope()
    comm = AsyncCommunicator(prog, scope, {"communicator_max_merge_var_num": 2, "communicator_send_queue_size": 2})
    g1 = SelectedRows(np.array([0, 2]), np.ones((2, 3), np.float32), SHAPE[0])
    g2 = SelectedRows(np.array([2]), np.full((1, 3), 2.0, np.float32), SHAPE[0])
    comm.push(send, [g1], scope)
    comm.push(send, [g2], scope)
    comm.start()
    comm.stop()
    want = init_values({"w": SHAPE})["w"]
    want[0] -= np.float32(LR) * 1.0
    want[2] -= np.float32(LR) * 3.0
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), want, rtol=1e-6)


def test_half_async_barrier_waits_for_the_step_to_go_out_and_come_back(async_pserver):
    """Each barrier returns once the step's gradients were sent and the parameters received; what
    several steps queued before one barrier is averaged."""
    ep, server, _ = async_pserver()
    prog, send = trainer_program(ep)
    scope = fluid.Scope()
    comm = HalfAsyncCommunicator(prog, scope, {"communicator_max_merge_var_num": 4,
                                               "communicator_send_queue_size": 2})
    comm.start()
    g1, g2, g3 = grads(3, seed=1)
    w = init_values({"w": SHAPE})["w"]
    comm.push(send, [g1], scope)
    comm.barrier()
    w = w - np.float32(LR) * g1
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), w, rtol=1e-6)
    comm.push(send, [g2], scope)
    comm.push(send, [g3], scope)
    comm.barrier()
    w = w - np.float32(LR) * ((g2 + g3) / np.float32(2))
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), w, rtol=1e-6)
    comm.stop()
    comm.barrier()          # stopped: nothing to wait for


def test_half_async_barrier_blocks_until_the_round(async_pserver):
    ep, server, _ = async_pserver()
    prog, send = trainer_program(ep)
    scope = fluid.Scope()
    comm = HalfAsyncCommunicator(prog, scope)
    comm.barrier_trigger_reset(2)           # two trainer threads reach each barrier
    comm.start()
    done = []
    t = threading.Thread(target=lambda: (comm.barrier(), done.append(1)), daemon=True)
    t.start()
    time.sleep(0.3)
    assert not done, "one of two trainer threads at the barrier: no round yet"
    comm.barrier_trigger_decrement()        # the other finished
    t.join(10)
    assert done
    comm.stop()


def test_fake_rpc_sends_nothing(async_pserver):
    ep, server, ps_scope = async_pserver()
    prog, send = trainer_program(ep)
    scope = fluid.Scope()
    comm = AsyncCommunicator(prog, scope, {"communicator_fake_rpc": 1})
    comm.start()
    comm.push(send, grads(1)[0:1], scope)
    comm.stop()
    np.testing.assert_array_equal(np.array(ps_scope.find_var("w").get_tensor()), init_values({"w": SHAPE})["w"])


def test_a_failed_send_is_raised_on_the_trainer(async_pserver):
    """The pserver refuses a variable it does not receive: the send thread fails, and the trainer
    hears it (the next push or stop) with the pserver's reason."""
    ep, server, _ = async_pserver()
    prog, send = trainer_program(ep)
    send._set_attr("send_varnames", ["v@GRAD"])
    scope = fluid.Scope()
    comm = AsyncCommunicator(prog, scope, {"communicator_send_wait_times": 0})
    comm.start()
    comm.push(send, grads(1), scope)
    with pytest.raises(CommunicatorError, match="does not receive 'v@GRAD'"):
        for _ in range(100):
            time.sleep(0.05)
            comm.push(send, grads(1), scope)
    with pytest.raises(CommunicatorError):
        comm.stop()
    assert communicator.active() is None


def test_one_communicator_per_process(async_pserver):
    ep, server, _ = async_pserver()
    prog, _ = trainer_program(ep)
    first, second = AsyncCommunicator(prog, fluid.Scope()), AsyncCommunicator(prog, fluid.Scope())
    first.start()
    with pytest.raises(RuntimeError, match="already running in this process"):
        second.start()
    first.stop()
    with pytest.raises(RuntimeError, match="cannot start again"):
        first.start()
