"""The predictor: a saved inference model loaded into a scope of its own, run by fluidist's Executor."""
import numpy as np

from ..device.places import CPUPlace, CUDAPlace
from ..core.scope import Scope, scope_guard
from ..core.tensor import LoDTensor
from ..executor.executor import Executor
from ..io import load_inference_model
from .tensor import PaddleTensor, ZeroCopyTensor


class PaddlePredictor:
    """Runs the model of a config: ``run([PaddleTensor, ...])`` returns the outputs as PaddleTensors, in
    the order of the model's fetch targets; inputs are matched to the model's feed names in order (or by
    name, when the config says ``specify_input_name`` or every tensor is named)."""

    def __init__(self, config):
        self._config = config
        use_gpu, device = config._gpu()
        self._place = CUDAPlace(device) if use_gpu else CPUPlace()
        self._scope = Scope()
        self._executor = Executor(self._place)
        dirname, model_filename, params_filename = config._model_location()
        with scope_guard(self._scope):
            self._program, self._feed_names, self._fetch_vars = load_inference_model(
                dirname, self._executor, model_filename=model_filename, params_filename=params_filename)
        self._fetch_names = [v.name for v in self._fetch_vars]
        self._inputs, self._lods, self._shapes, self._outputs = {}, {}, {}, {}

    # ------------------------------------------------------------------ run with PaddleTensors
    def run(self, inputs):
        if not isinstance(inputs, (list, tuple)) or not all(isinstance(t, PaddleTensor) for t in inputs):
            raise TypeError("PaddlePredictor.run takes a list of PaddleTensor")
        by_name = getattr(self._config, "specify_input_name", False)
        by_name = by_name() if callable(by_name) else by_name
        if by_name or (inputs and all(t.name for t in inputs)):
            unknown = [t.name for t in inputs if t.name not in self._feed_names]
            if unknown:
                raise ValueError("PaddlePredictor.run: inputs %s are not inputs of the model (its inputs: %s)"
                                 % (unknown, self._feed_names))
            named = {t.name: t for t in inputs}
        else:
            if len(inputs) != len(self._feed_names):
                raise ValueError("PaddlePredictor.run: the model takes %d inputs %s, got %d"
                                 % (len(self._feed_names), self._feed_names, len(inputs)))
            named = dict(zip(self._feed_names, inputs))
        feed = {}
        for name, t in named.items():
            value = t.as_ndarray()
            feed[name] = _with_lod(value, t.lod)
        values, lods = self._execute(feed)
        out = []
        for name in self._fetch_names:
            t = PaddleTensor(values[name], name=name)
            t.lod = lods.get(name, [])
            out.append(t)
        return out

    def _run_named(self, feed):
        """``run`` with a dict of {input name: array}."""
        return self.run([PaddleTensor(np.asarray(value), name=name) for name, value in feed.items()])

    # ------------------------------------------------------------------ zero copy
    def get_input_names(self):
        return list(self._feed_names)

    def get_output_names(self):
        return list(self._fetch_names)

    def get_input_tensor(self, name):
        if name not in self._feed_names:
            raise ValueError("get_input_tensor: %r is not an input of the model (its inputs: %s)"
                             % (name, self._feed_names))
        return ZeroCopyTensor(self, name, True)

    def get_output_tensor(self, name):
        if name not in self._fetch_names:
            raise ValueError("get_output_tensor: %r is not an output of the model (its outputs: %s)"
                             % (name, self._fetch_names))
        return ZeroCopyTensor(self, name, False)

    def zero_copy_run(self):
        missing = [n for n in self._feed_names if n not in self._inputs]
        if missing:
            raise ValueError("zero_copy_run: inputs %s were not given (get_input_tensor(name).copy_from_cpu)"
                             % missing)
        feed = {n: _with_lod(self._inputs[n], self._lods.get(n)) for n in self._feed_names}
        self._outputs, self._output_lods = self._execute(feed)

    def _value_of(self, name, is_input):
        store = self._inputs if is_input else self._outputs
        if name not in store:
            raise ValueError("%r holds no value yet (%s)" % (name, "copy_from_cpu it" if is_input
                                                              else "call zero_copy_run first"))
        return store[name]

    def _lod_of(self, name, is_input):
        return list(self._lods.get(name, [])) if is_input else list(getattr(self, "_output_lods", {}).get(name, []))

    # ------------------------------------------------------------------ the rest
    def _execute(self, feed):
        with scope_guard(self._scope):
            results = self._executor.run(self._program, feed=feed, fetch_list=self._fetch_vars,
                                         scope=self._scope, return_numpy=False)
        values = {n: np.array(r) for n, r in zip(self._fetch_names, results)}
        lods = {n: r.lod() if isinstance(r, LoDTensor) else []
                for n, r in zip(self._fetch_names, results)}
        return values, lods

    def clone(self):
        """A predictor of the same model with a scope of its own."""
        return type(self)(self._config)

    def get_serialized_program(self):
        """The loaded program in fluidist's JSON form."""
        return self._program.to_json()


class NativePaddlePredictor(PaddlePredictor):
    """The predictor of a NativeConfig."""


class AnalysisPredictor(PaddlePredictor):
    """The predictor of an AnalysisConfig."""


def create_paddle_predictor(config):
    """A predictor over the model ``config`` names (a NativeConfig or an AnalysisConfig)."""
    make = getattr(config, "_create_predictor", None)
    if make is None:
        raise TypeError("create_paddle_predictor takes a NativeConfig or an AnalysisConfig, got %r"
                        % type(config).__name__)
    return make()


def _with_lod(value, lod):
    """``value`` as a feed: an array, or a LoDTensor when ``lod`` (offsets per level, as Paddle's
    inference API gives LoD) is given."""
    if not lod:
        return value
    t = LoDTensor(np.asarray(value))
    t.set_lod(lod)
    return t
