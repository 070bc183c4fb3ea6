"""Paddle 1.x's ``incubate.fleet.base.role_maker``: the role makers of ``fluidist.role_maker``."""
from fluidist.role_maker import *  # noqa: F401,F403
from fluidist.role_maker import (GeneralRoleMaker, MockBarrier, MPIRoleMaker, MPISymetricRoleMaker,  # noqa: F401
                                 PaddleCloudRoleMaker, Role, RoleMakerBase, UserDefinedCollectiveRoleMaker,
                                 UserDefinedRoleMaker)
