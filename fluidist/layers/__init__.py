"""``fluid.layers``: the layers a script calls to build a program, all reachable as ``fluid.layers.NAME``."""
from typing import TYPE_CHECKING

# ``name as name``: exported to type checkers as well (mypy --strict exports no plain import)
from .io import (create_py_reader_by_data as create_py_reader_by_data, double_buffer as double_buffer,  # noqa: F401
                 layers_data as layers_data, load as load, py_reader as py_reader, read_file as read_file)
from .nn import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .layer_helper import LayerHelper as LayerHelper  # noqa: F401
from .conv import *  # noqa: F401,F403
from .learning_rate_scheduler import *  # noqa: F401,F403
from .control_flow import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .sequence_lod import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .metric_op import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .nn_misc import *  # noqa: F401,F403
from .conv_nd import *  # noqa: F401,F403
from .resize import *  # noqa: F401,F403
from .distance_loss import *  # noqa: F401,F403
from .crf import *  # noqa: F401,F403
from .sequence_loss import *  # noqa: F401,F403
from .sampled_loss import *  # noqa: F401,F403
from .py_func import *  # noqa: F401,F403
from .ops import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .nn_math import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .detection import *  # noqa: F401,F403
from .roi import *  # noqa: F401,F403
from .deformable import *  # noqa: F401,F403
from .distributions import *  # noqa: F401,F403  (refused)
from .refused import *  # noqa: F401,F403  (last: the names fluidist refuses)
from . import collective as collective, device as device  # noqa: F401  (Paddle's module paths)
from . import layer_function_generator as layer_function_generator, utils as utils  # noqa: F401
if TYPE_CHECKING:   # exported to type checkers (an assignment is, a renaming import is not)
    data = layers_data
else:
    from .io import layers_data as data  # noqa: E402,F401  (an import, which the docs render as the function)

from .paddle_modules import place_names as _place_names

_place_names(globals())  # each name also where Paddle 1.8 keeps it: layers.nn.conv2d, layers.loss.nce, ...

from .math_op_patch import monkey_patch_variable as _monkey_patch_variable

_monkey_patch_variable()  # Variable's operators (x + y, x * 2, x < y, ...) build these layers' ops
