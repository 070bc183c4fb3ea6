"""DistributeTranspilerConfig: every field of Paddle 1.x's, validated with errors that name the field."""
from __future__ import annotations

import difflib
import numbers
from typing import Any

from .details import check_bool, check_int
from .dispatcher import HashName, PSDispatcher, RoundRobin

MODES = ("pserver", "nccl2", "collective")
COLLECTIVE_MODES = (None, "grad_allreduce", "local_sgd", "single_process_multi_thread")


class DistributedMode:
    SYNC = 0
    ASYNC = 1
    HALF_ASYNC = 2
    GEO = 3


class DistributeTranspilerConfig:
    """The options of ``DistributeTranspiler.transpile``: every field of Paddle 1.8's, with its
    defaults; set them as attributes.

    Parameter-server mode (``mode = "pserver"``): ``slice_var_up`` (split large parameters into
    blocks of at least ``min_block_size`` elements over the pservers), ``split_method``
    (``RoundRobin`` or ``HashName``: how blocks go to pservers), ``sync_mode`` (False:
    asynchronous), ``runtime_split_send_recv`` (async with the communicator), ``half_async``,
    ``completely_not_async``, ``geo_sgd_mode`` / ``geo_sgd_need_push_nums`` (GEO-SGD: push
    parameter deltas every that many steps), ``wait_port``, ``print_log``.
    Collective modes (``"nccl2"``, ``"collective"``): ``nccl_comm_num``, ``collective_mode``
    (``"grad_allreduce"`` or ``"local_sgd"``), ``local_sgd_steps``,
    ``use_hierarchical_allreduce``, ``hierarchical_allreduce_inter_nranks``.

    Flags are taken for their truth value, as in Paddle (None is False). Paddle 1.8 difference:
    setting a field that does not exist (``slice_var_ups``) is an AttributeError naming the nearest
    field, not a silent new attribute; ``validate()`` (called by ``transpile``) names the first bad
    value; ``enable_dc_asgd`` is refused.

    Examples:
        >>> config = fluid.DistributeTranspilerConfig()
        >>> config.slice_var_up = False
        >>> config.sync_mode = False
        >>> config.validate().sync_mode
        False
        >>> config.slice_var_ups = True
        Traceback (most recent call last):
        ...
        AttributeError: DistributeTranspilerConfig has no field 'slice_var_ups' (did you mean 'slice_var_up'?); ...
    """

    slice_var_up = True
    split_method = None
    min_block_size = 8192
    enable_dc_asgd = False
    mode = "pserver"
    print_log = False
    wait_port = True
    half_async = False
    completely_not_async = False
    geo_sgd_mode = False
    geo_sgd_need_push_nums = 100
    nccl_comm_num = 1
    use_hierarchical_allreduce = False
    hierarchical_allreduce_inter_nranks = 0
    collective_mode = None
    local_sgd_steps = 1

    def __init__(self) -> None:
        self._sync_mode = True
        self._runtime_split_send_recv = False

    def __setattr__(self, name: str, value: Any) -> None:
        """Only Paddle's fields: a misspelt one (``slice_var_ups``) is an error naming the nearest field,
        not an attribute that silently changes nothing."""
        if not name.startswith("_") and not hasattr(type(self), name):
            near = difflib.get_close_matches(name, FIELDS, n=1)
            raise AttributeError("DistributeTranspilerConfig has no field %r%s; its fields: %s"
                                 % (name, " (did you mean %r?)" % near[0] if near else "", ", ".join(FIELDS)))
        object.__setattr__(self, name, value)

    @property
    def sync_mode(self) -> bool:
        """Synchronous training (the default): each step's gradients from every trainer are summed
        before the update. Cannot be True with ``runtime_split_send_recv``."""
        return self._sync_mode

    @sync_mode.setter
    def sync_mode(self, value: bool) -> None:
        if value is None:
            raise ValueError("DistributeTranspilerConfig.sync_mode must be True or False, got None")
        if value and self._runtime_split_send_recv:
            raise ValueError("DistributeTranspilerConfig.sync_mode cannot be True while "
                             "runtime_split_send_recv is True")
        self._sync_mode = bool(value)

    @property
    def runtime_split_send_recv(self) -> bool:
        """Asynchronous training through the communicator (split and merge at run time); needs
        ``sync_mode = False`` first."""
        return self._runtime_split_send_recv

    @runtime_split_send_recv.setter
    def runtime_split_send_recv(self, value: bool) -> None:
        if value is None:
            raise ValueError("DistributeTranspilerConfig.runtime_split_send_recv must be True or False, got None")
        if value and self._sync_mode:
            raise ValueError("DistributeTranspilerConfig.runtime_split_send_recv cannot be True while "
                             "sync_mode is True: set sync_mode = False first")
        self._runtime_split_send_recv = bool(value)

    def validate(self) -> DistributeTranspilerConfig:
        """Raise ValueError (TypeError for a value of the wrong type) naming the first misconfigured
        field; returns the config."""
        for field in _BOOL_FIELDS:
            check_bool(getattr(self, field), "DistributeTranspilerConfig.%s" % field)
        if self.geo_sgd_mode:       # as in Paddle, the mode-specific numbers are read only in their mode
            check_int(self.geo_sgd_need_push_nums, "DistributeTranspilerConfig.geo_sgd_need_push_nums", minimum=1)
        if self.use_hierarchical_allreduce:
            check_int(self.hierarchical_allreduce_inter_nranks,
                      "DistributeTranspilerConfig.hierarchical_allreduce_inter_nranks")
        if self.mode not in MODES:
            raise ValueError("DistributeTranspilerConfig.mode must be one of %s, got %r" % (MODES, self.mode))
        if self.collective_mode not in COLLECTIVE_MODES:
            raise ValueError("DistributeTranspilerConfig.collective_mode must be one of %s, got %r"
                             % (COLLECTIVE_MODES, self.collective_mode))
        if isinstance(self.min_block_size, bool) or not isinstance(self.min_block_size, numbers.Real) \
                or self.min_block_size < 8192:
            raise ValueError("DistributeTranspilerConfig.min_block_size must be a number >= 8192 (elements), got %r"
                             % (self.min_block_size,))
        method = self.split_method or RoundRobin
        if not (isinstance(method, type) and issubclass(method, PSDispatcher)):
            raise ValueError("DistributeTranspilerConfig.split_method must be RoundRobin or HashName "
                             "(a PSDispatcher class), got %r" % (method,))
        if self.enable_dc_asgd:
            raise ValueError("DistributeTranspilerConfig.enable_dc_asgd: delay-compensated async SGD is not "
                             "supported by fluidist's transpiler")
        check_int(self.nccl_comm_num, "DistributeTranspilerConfig.nccl_comm_num", minimum=1)
        check_int(self.local_sgd_steps, "DistributeTranspilerConfig.local_sgd_steps", minimum=1)
        return self

    def distributed_mode(self) -> int:
        """The ``DistributedMode`` these fields select: GEO, SYNC, ASYNC or HALF_ASYNC."""
        if self.geo_sgd_mode:
            return DistributedMode.GEO      # GEO-SGD is asynchronous whatever sync_mode says, as in Paddle
        if self.sync_mode or self.completely_not_async:
            return DistributedMode.SYNC
        if self.runtime_split_send_recv:
            return DistributedMode.ASYNC
        return DistributedMode.HALF_ASYNC


_BOOL_FIELDS = ("slice_var_up", "enable_dc_asgd", "print_log", "wait_port", "half_async", "completely_not_async",
                "geo_sgd_mode", "use_hierarchical_allreduce")
FIELDS = ("slice_var_up", "split_method", "min_block_size", "enable_dc_asgd", "mode", "print_log", "wait_port",
          "half_async", "completely_not_async", "geo_sgd_mode", "geo_sgd_need_push_nums", "nccl_comm_num",
          "use_hierarchical_allreduce", "hierarchical_allreduce_inter_nranks", "collective_mode", "local_sgd_steps",
          "sync_mode", "runtime_split_send_recv")


class ServerRuntimeConfig:
    """Paddle's pserver thread counts, read from ``FLAGS_rpc_*_thread_num``: kept for scripts that
    make one. The GEO-SGD transpiler copies them into the pserver's ``listen_and_serv`` attributes,
    which no thread pool reads."""

    def __init__(self) -> None:
        import os
        self._rpc_send_thread_num = int(os.getenv("FLAGS_rpc_send_thread_num", "12"))
        self._rpc_get_thread_num = int(os.getenv("FLAGS_rpc_get_thread_num", "12"))
        self._rpc_prefetch_thread_num = int(os.getenv("FLAGS_rpc_prefetch_thread_num", "12"))


__all__ = ["DistributeTranspilerConfig", "DistributedMode", "ServerRuntimeConfig", "RoundRobin", "HashName"]
