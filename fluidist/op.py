"""``fluid.op``: Paddle's factory of operators from C++ op protos (``Operator("mul", X=..., Y=...)``
ran one op eagerly on a scope). fluidist's ops are registry entries appended to programs."""
from .compat import refused, refused_class

__all__ = []

_INSTEAD = ("append the op to a program (block.append_op(type=..., inputs=..., outputs=..., attrs=...)) "
            "and run it with an Executor; fluidist.framework.registry lists the op types")


def is_str(s):
    """True for a str (or bytes, Paddle's Python 2 strings)."""
    return isinstance(s, (str, bytes))


get_all_op_protos = refused("fluid.op.get_all_op_protos", "fluidist.framework.registry.all_op_types() lists "
                            "the op types and registry.get(type) gives an op's slots and attrs")
OpDescCreationMethod = refused_class("fluid.op.OpDescCreationMethod", _INSTEAD)
OpInfo = refused_class("fluid.op.OpInfo", "fluidist.framework.registry.get(type) gives an op's slots and attrs")
create_op_creation_method = refused("fluid.op.create_op_creation_method", _INSTEAD)
OperatorFactory = refused_class("fluid.op.OperatorFactory", _INSTEAD)
Operator = refused_class("fluid.op.Operator", _INSTEAD)
