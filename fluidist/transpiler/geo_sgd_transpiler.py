"""``fluid.transpiler.geo_sgd_transpiler`` (Paddle 1.8): ``GeoSgdTranspiler``, the DistributeTranspiler
with ``geo_sgd_mode`` always on (see ``transpiler.geo``)."""
from .config import DistributeTranspilerConfig, ServerRuntimeConfig
from .distribute_transpiler import DistributeTranspiler

__all__ = ["GeoSgdTranspiler"]


class GeoSgdTranspiler(DistributeTranspiler):
    """``GeoSgdTranspiler(config=None, server_config=None)``: transpiles for GEO-SGD whatever the
    config's ``geo_sgd_mode`` says (``geo_sgd_need_push_nums`` sets how often trainers push)."""

    def __init__(self, config=None, server_config=None):
        if config is not None and not isinstance(config, DistributeTranspilerConfig):
            raise TypeError("GeoSgdTranspiler(config): config must be a DistributeTranspilerConfig, got %r"
                            % type(config).__name__)
        if server_config is not None and not isinstance(server_config, ServerRuntimeConfig):
            raise TypeError("GeoSgdTranspiler(config, server_config): server_config must be a ServerRuntimeConfig, "
                            "got %r" % type(server_config).__name__)
        config = config if config is not None else DistributeTranspilerConfig()
        config.geo_sgd_mode = True
        super().__init__(config)
        if server_config is not None:
            self._set_server_config(server_config)

    def transpile(self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1, sync_mode=False,
                  startup_program=None, current_endpoint="127.0.0.1:6174"):
        """As ``DistributeTranspiler.transpile``; GEO-SGD is asynchronous (``sync_mode`` is ignored)."""
        return super().transpile(trainer_id, program, pservers, trainers, False, startup_program, current_endpoint)
