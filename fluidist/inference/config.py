"""``NativeConfig`` and ``AnalysisConfig``: where a predictor finds its model, and the switches of
Paddle's inference engine (recorded; fluidist runs the saved program's ops as they are)."""
import os


class NativeConfig:
    """Paddle's configuration of its native predictor: ``model_dir``, or ``prog_file`` and
    ``param_file``; ``use_gpu`` / ``device`` choose the place."""

    def __init__(self):
        self.model_dir = ""
        self.prog_file = ""
        self.param_file = ""
        self.use_gpu = False
        self.device = 0
        self.fraction_of_gpu_memory = -1.0
        self.specify_input_name = False
        self._threads = 1

    def set_cpu_math_library_num_threads(self, n):
        self._threads = int(n)

    def cpu_math_library_num_threads(self):
        return self._threads

    def _model_location(self):
        return _location(self.model_dir, self.prog_file, self.param_file, "NativeConfig")

    def _gpu(self):
        return bool(self.use_gpu), int(self.device)

    def _create_predictor(self):
        from .predictor import NativePaddlePredictor
        return NativePaddlePredictor(self)


class AnalysisConfig:
    """Paddle's configuration of its analysis predictor: ``AnalysisConfig(model_dir)`` or
    ``AnalysisConfig(prog_file, params_file)``, ``enable_use_gpu(memory_mb, device_id)``, and the
    engine's switches (IR optimisation, feed / fetch ops, MKL-DNN, TensorRT, memory optimisation),
    which are recorded and read back but change nothing here."""

    def __init__(self, model_dir_or_prog_file="", params_file=""):
        self._model_dir, self._prog_file, self._params_file = "", "", ""
        if model_dir_or_prog_file:
            self.set_model(model_dir_or_prog_file, params_file) if params_file else self.set_model(model_dir_or_prog_file)
        self._use_gpu, self._device_id, self._memory_mb = False, 0, 0
        self._switches = {"ir_optim": True, "use_feed_fetch_ops": True, "specify_input_name": False,
                          "memory_optim": False, "mkldnn": False, "tensorrt": False, "profile": False,
                          "glog_info_disabled": False, "lite": False}
        self._threads = 1
        self._deleted_passes = []

    def set_model(self, model_dir_or_prog_file, params_file=None):
        if params_file is None:
            self._model_dir, self._prog_file, self._params_file = str(model_dir_or_prog_file), "", ""
        else:
            self._model_dir, self._prog_file, self._params_file = "", str(model_dir_or_prog_file), str(params_file)

    def set_prog_file(self, path):
        self._prog_file = str(path)

    def set_params_file(self, path):
        self._params_file = str(path)

    def model_dir(self):
        return self._model_dir

    def prog_file(self):
        return self._prog_file

    def params_file(self):
        return self._params_file

    def enable_use_gpu(self, memory_pool_init_size_mb, device_id=0):
        self._use_gpu, self._memory_mb, self._device_id = True, int(memory_pool_init_size_mb), int(device_id)

    def disable_gpu(self):
        self._use_gpu = False

    def use_gpu(self):
        return self._use_gpu

    def gpu_device_id(self):
        return self._device_id

    def memory_pool_init_size_mb(self):
        return self._memory_mb

    def switch_ir_optim(self, x=True):
        self._switches["ir_optim"] = bool(x)

    def ir_optim(self):
        return self._switches["ir_optim"]

    def switch_use_feed_fetch_ops(self, x=True):
        self._switches["use_feed_fetch_ops"] = bool(x)

    def use_feed_fetch_ops_enabled(self):
        return self._switches["use_feed_fetch_ops"]

    def switch_specify_input_names(self, x=True):
        self._switches["specify_input_name"] = bool(x)

    def specify_input_name(self):
        return self._switches["specify_input_name"]

    def enable_memory_optim(self):
        self._switches["memory_optim"] = True

    def enable_mkldnn(self):
        self._switches["mkldnn"] = True

    def mkldnn_enabled(self):
        return self._switches["mkldnn"]

    def enable_tensorrt_engine(self, *args, **kwargs):
        self._switches["tensorrt"] = True

    def tensorrt_engine_enabled(self):
        return self._switches["tensorrt"]

    def enable_profile(self):
        self._switches["profile"] = True

    def disable_glog_info(self):
        self._switches["glog_info_disabled"] = True

    def glog_info_disabled(self):
        return self._switches["glog_info_disabled"]

    def switch_ir_debug(self, x=True):
        pass

    def delete_pass(self, name):
        self._deleted_passes.append(str(name))

    def set_cpu_math_library_num_threads(self, n):
        self._threads = int(n)

    def cpu_math_library_num_threads(self):
        return self._threads

    def to_native_config(self):
        native = NativeConfig()
        native.model_dir, native.prog_file, native.param_file = self._model_dir, self._prog_file, self._params_file
        native.use_gpu, native.device = self._use_gpu, self._device_id
        native.specify_input_name = self.specify_input_name()
        native.set_cpu_math_library_num_threads(self._threads)
        return native

    def _model_location(self):
        return _location(self._model_dir, self._prog_file, self._params_file, "AnalysisConfig")

    def _gpu(self):
        return self._use_gpu, self._device_id

    def _create_predictor(self):
        from .predictor import AnalysisPredictor
        return AnalysisPredictor(self)


def _location(model_dir, prog_file, params_file, who):
    """(dirname, model_filename or None, params_filename or None) for ``load_inference_model``."""
    if model_dir:
        return model_dir, None, None
    if not prog_file:
        raise ValueError("%s: give the model: a model directory, or a program file and a params file" % who)
    dirname = os.path.dirname(prog_file) or "."
    if params_file and os.path.dirname(params_file) not in ("", os.path.dirname(prog_file)):
        raise ValueError("%s: the program file %r and the params file %r must be in one directory"
                         % (who, prog_file, params_file))
    return dirname, os.path.basename(prog_file), os.path.basename(params_file) if params_file else None
