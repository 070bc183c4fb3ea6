"""Loss layers."""
from .layer_helper import LayerHelper

__all__ = ["square_error_cost"]


def square_error_cost(input, label):
    """``(input - label)^2`` elementwise: ``elementwise_sub`` then ``square``."""
    helper = LayerHelper("square_error_cost")
    minus = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [minus]})
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("square", inputs={"X": [minus]}, outputs={"Out": [out]})
    return out
