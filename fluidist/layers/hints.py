"""Type aliases used in fluidist's signatures (what an argument accepts, in one name).

They are plain ``typing`` aliases: ``Shape`` is any sequence of ints (``None`` or ``-1`` for a size
known only at run time), ``DType`` a NumPy dtype or its name, ``ParamAttrLike`` what a layer's
``param_attr`` / ``bias_attr`` accepts."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

import numpy as np

if TYPE_CHECKING:
    from ..initializer import Initializer
    from ..param_attr import ParamAttr
    from ..passes.regularizer import WeightDecayRegularizer

#: A shape: a list or tuple of ints; -1 (or None in ``fluid.data``) marks a size known at run time.
Shape = Sequence[Optional[int]]
#: A dtype: a name (``"float32"``, ``"int64"``, ...), a NumPy dtype or a NumPy scalar type.
DType = Union[str, "np.dtype[Any]", type]
#: What ``param_attr`` / ``bias_attr`` accept: a ParamAttr, a parameter name, an initializer, a
#: regularizer, ``False`` for no parameter (bias only) or ``None`` for the defaults.
ParamAttrLike = Union["ParamAttr", str, "Initializer", "WeightDecayRegularizer", bool, None]
#: An axis or a list of axes.
Axes = Union[int, Sequence[int]]

__all__ = ["Shape", "DType", "ParamAttrLike", "Axes"]
