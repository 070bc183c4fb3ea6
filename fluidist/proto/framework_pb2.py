"""``paddle.fluid.proto.framework_pb2``: Paddle's framework.proto messages (``OpProto``, ``OpDesc``,
``ProgramDesc``, ...). It is ``fluidist.paddle_format.framework_pb2`` itself, so that a message made
through either path is the same class."""
import sys

from ..paddle_format import framework_pb2

sys.modules[__name__] = framework_pb2
