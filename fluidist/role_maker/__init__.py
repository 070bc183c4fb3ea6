"""Role makers: who this process is in a distributed job (worker or server, which index) and where
the others are. Paddle 1.x's ``paddle.fluid.incubate.fleet.base.role_maker``.

=================================  =========================================================
``PaddleCloudRoleMaker``            from the variables ``python -m fluidist.distributed.launch`` sets
``UserDefinedRoleMaker``            parameter-server roles stated in code
``UserDefinedCollectiveRoleMaker``  collective roles stated in code
``MPIRoleMaker``                    every ``mpirun`` rank a worker (mpi4py)
``MPISymetricRoleMaker``            ``mpirun`` ranks paired: even ranks servers, odd ranks workers
``GeneralRoleMaker``                launcher variables plus barriers and reductions through a
                                    shared directory
=================================  =========================================================
"""
from .base import MockBarrier, Role, RoleMakerBase
from .env import EnvVarError
from .general import FsGroup, GeneralRoleMaker, RendezvousTimeout
from .mpi import MPIRoleMaker, MPISymetricRoleMaker
from .paddle_cloud import PaddleCloudRoleMaker
from .user_defined import UserDefinedCollectiveRoleMaker, UserDefinedRoleMaker

__all__ = ["Role", "RoleMakerBase", "MPIRoleMaker", "MPISymetricRoleMaker", "UserDefinedRoleMaker",
           "UserDefinedCollectiveRoleMaker", "PaddleCloudRoleMaker", "GeneralRoleMaker", "MockBarrier",
           "EnvVarError", "RendezvousTimeout", "FsGroup"]
