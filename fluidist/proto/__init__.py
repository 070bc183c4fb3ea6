"""``paddle.fluid.proto``: the protobuf messages of Paddle's framework.proto (``framework_pb2``), the
same module as ``fluidist.paddle_format.framework_pb2``."""
