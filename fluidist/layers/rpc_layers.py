"""Paddle 1.8's hand-built RPC layers of ``fluid.layers.io``: ``ListenAndServ`` (a server running one
block of ops on what clients send it), and ``Send`` / ``Recv`` (a client's ``send`` + ``send_barrier``
and ``recv`` + ``fetch_barrier``). The DistributeTranspiler writes the same ops for whole jobs.

::

    with fluid.program_guard(server_main):
        serv = fluid.layers.io.ListenAndServ("127.0.0.1:0", ["X"], optimizer_mode=False)
        with serv.do():
            ...   # the block each round runs (sync mode: once every client sent its barrier)
    fluid.Executor(place).run(server_main)      # serves until its Fanin clients completed
"""
from __future__ import annotations

from typing import Any, List, Sequence, Union

from ..framework.op_role import OP_ROLE_ATTR, OpRole
from ..framework.program import Variable
from ..transpiler.config import DistributedMode
from .block_guard import SubBlockGuard, parent_block
from .layer_helper import LayerHelper


class ListenAndServ:
    """A ``listen_and_serv`` op on ``endpoint`` receiving ``inputs``, whose optimize block is the one
    built under ``with serv.do():``.

    Args:
        endpoint: ``"ip:port"`` to listen on (port 0: any free port; the process writes the port it
            got into ``/tmp/paddle.<pid>.port`` once it serves).
        inputs: the names of the variables clients send.
        fan_in: how many clients take part (each round waits for all of them).
        optimizer_mode: Paddle's switch between a parameter server's block and a plain block;
            both serve the same way here (the block runs once per round).
    """

    def __init__(self, endpoint: str, inputs: Sequence[Any], fan_in: int = 1, optimizer_mode: bool = True) -> None:
        self.helper = LayerHelper("listen_and_serv")
        self.inputs = [v.name if isinstance(v, Variable) else v for v in inputs]
        self.outputs: List[Any] = []
        self.endpoint = endpoint
        self.fan_in = fan_in
        self.optimizer_mode = optimizer_mode

    def do(self) -> "BlockGuardServ":
        """The ``with`` that builds the block each round runs."""
        return BlockGuardServ(self)

    def parent_block(self):
        """The block the ``listen_and_serv`` op goes into."""
        return parent_block(self.helper.main_program)

    def get_params_and_grads(self):
        """(params, grads) of the block built so far: the Param / Grad of its update ops, or in plain
        mode every input of its ops (twice), as Paddle lists them."""
        block = self.helper.main_program.current_block()
        params, grads = [], []
        for op in block.ops:
            if self.optimizer_mode:
                if op.input("Param") and op.input("Grad"):
                    params.append(op.input("Param")[0])
                    grads.append(op.input("Grad")[0])
            else:
                for name in op.input_arg_names:
                    var = self.parent_block()._find_var_recursive(name)
                    params.append(var)
                    grads.append(var)
        return params, grads

    def complete_op(self) -> None:
        """Append the ``listen_and_serv`` op (sync mode, the built block as its one optimize block)."""
        block = self.helper.main_program.current_block()
        self.parent_block().append_op(
            type="listen_and_serv", inputs={"X": list(self.inputs)}, outputs={},
            attrs={"endpoint": self.endpoint, "Fanin": int(self.fan_in), "optimize_blocks": [block],
                   "distributed_mode": DistributedMode.SYNC, "grad_to_block_id": [""]})


class BlockGuardServ(SubBlockGuard):
    """The ``with`` of ``ListenAndServ.do()``: its body builds the served block."""

    def __init__(self, server: ListenAndServ) -> None:
        if not isinstance(server, ListenAndServ):
            raise TypeError("BlockGuardServ takes a ListenAndServ, got %r" % type(server).__name__)
        super().__init__(server.helper.main_program, server.complete_op)
        self.server = server


def _as_list(value, what):
    if value is None:
        return []
    if isinstance(value, Variable):
        return [value]
    if not isinstance(value, list):
        raise TypeError("%s must be a list of Variables, got %r" % (what, type(value).__name__))
    return value


def _rpc_layer(layer, endpoints, variables, what, dummy, dummy_what):
    """``(helper, epmap, endpoints once each, dummy list)`` of a Send / Recv layer, its arguments checked."""
    if not isinstance(variables, list):
        raise TypeError("%s: %s must be a list of Variables, got %r" % (layer, what, type(variables).__name__))
    epmap = endpoints.split(",")
    return LayerHelper(layer), epmap, list(dict.fromkeys(epmap)), _as_list(dummy, "%s: %s" % (layer, dummy_what))


def Send(endpoints: str, send_vars: List[Variable], dummy_output: Union[None, Variable, List[Variable]] = None,
         sync: bool = True) -> None:
    """Send ``send_vars[i]`` to the i-th of the comma-separated ``endpoints``; with ``sync``, then
    a ``send_barrier`` (the server's round runs once every client sent its barrier)."""
    helper, epmap, unique, dummy = _rpc_layer("Send", endpoints, send_vars, "send_vars", dummy_output, "dummy_output")
    helper.append_op(type="send", inputs={"X": send_vars}, outputs={"Out": dummy},
                     attrs={"endpoints": unique, "epmap": epmap, OP_ROLE_ATTR: OpRole.RPC})
    if sync:
        helper.append_op(type="send_barrier", inputs={"X": dummy}, outputs={"Out": []},
                         attrs={"endpoints": unique})


def Recv(endpoints: str, get_vars: List[Variable], dummy_input: Union[None, Variable, List[Variable]] = None,
         sync: bool = True) -> List[Variable]:
    """Receive ``get_vars[i]`` from the i-th of the comma-separated ``endpoints`` (after the round
    the client's barrier completed); with ``sync``, then a ``fetch_barrier``. Returns ``get_vars``."""
    helper, epmap, unique, dummy = _rpc_layer("Recv", endpoints, get_vars, "get_vars", dummy_input, "dummy_input")
    helper.append_op(type="recv", inputs={"X": dummy}, outputs={"Out": get_vars},
                     attrs={"endpoints": unique, "epmap": epmap})
    if sync:
        helper.append_op(type="fetch_barrier", inputs={}, outputs={"Out": get_vars}, attrs={"endpoints": unique})
    return get_vars


__all__ = ["ListenAndServ", "BlockGuardServ", "Send", "Recv"]
