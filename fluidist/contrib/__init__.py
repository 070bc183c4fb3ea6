"""``fluid.contrib``: Paddle's contributed extras (mixed precision, slim compression, quantisation, the
old decoder API, contrib layers, HDFS utilities) are not provided. Every module path under
``fluid.contrib`` imports, and each of its names raises NotImplementedError saying what to use."""
from ..compat import refuse_module_tree

_DECODER = ["InitState", "StateCell", "TrainingDecoder", "BeamSearchDecoder"]   # (Paddle's book test star-imports them)

refuse_module_tree(globals(), "fluid.contrib",
                   "fluid.contrib is not provided: train in float32 (no mixed precision or quantisation), "
                   "decode with layers.BeamSearchDecoder and layers.dynamic_decode, use the RNN cells of "
                   "fluid.layers (LSTMCell, GRUCell with layers.rnn) and the regularizers of fluid.regularizer",
                   star_names={"decoder": _DECODER, "decoder.beam_search_decoder": _DECODER})
