"""``CompiledProgram(program)._with_inference_optimize(config)`` as Paddle 1.8's word2vec book test uses
it: the CompiledProgram comes back with ``_is_inference`` True, and ``Executor.run`` on it feeds the
PaddleTensors (LoD int64 words) to a predictor of the saved model, whose outputs are the program's."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist import core

DICT, EMBED = 20, 8


def _word2vec(tmp_path):
    """Four context words -> the next word's distribution, trained a few steps and saved."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = [fluid.data(name=n, shape=[None, 1], dtype="int64", lod_level=1)
                 for n in ("firstw", "secondw", "thirdw", "forthw")]
        nextw = fluid.data(name="nextw", shape=[None, 1], dtype="int64", lod_level=1)
        embs = [fluid.layers.embedding(w, size=[DICT, EMBED], param_attr="shared_w") for w in words]
        hidden = fluid.layers.fc(fluid.layers.concat(embs, axis=1), size=16, act="sigmoid")
        predict = fluid.layers.fc(hidden, size=DICT, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(predict, nextw))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    rng = np.random.RandomState(0)
    for _ in range(3):
        feed = {n: fluid.create_lod_tensor(rng.randint(0, DICT, (6, 1)).astype("int64"), [[1] * 6],
                                           fluid.CPUPlace()) for n in ("firstw", "secondw", "thirdw", "forthw", "nextw")}
        exe.run(main, feed=feed, fetch_list=[loss])
    dirname = str(tmp_path / "word2vec.inference.model")
    fluid.io.save_inference_model(dirname, ["firstw", "secondw", "thirdw", "forthw"], [predict], exe, main)
    return exe, dirname


def _to_infer_tensor(lod_tensor):
    """The book test's conversion of a LoDTensor into a PaddleTensor."""
    infer_tensor = core.PaddleTensor()
    infer_tensor.lod = lod_tensor.lod()
    infer_tensor.data = core.PaddleBuf(np.array(lod_tensor))
    infer_tensor.shape = lod_tensor.shape()
    infer_tensor.dtype = core.PaddleDType.INT64
    return infer_tensor


def test_compiled_program_with_inference_optimize_runs_the_saved_model(tmp_path):
    exe, dirname = _word2vec(tmp_path)
    inference_program, feed_names, fetch_targets = fluid.io.load_inference_model(dirname, exe)
    ids = [fluid.create_lod_tensor(np.array([[i]], "int64"), [[1]], fluid.CPUPlace()) for i in (3, 7, 11, 2)]
    results = exe.run(inference_program, feed=dict(zip(feed_names, ids)), fetch_list=fetch_targets,
                      return_numpy=False)

    config = core.NativeConfig()
    config.model_dir = dirname
    config.use_gpu = False
    compiled = fluid.compiler.CompiledProgram(inference_program)
    assert compiled._is_inference is False
    assert compiled._with_inference_optimize(config) is compiled
    assert compiled._is_inference is True
    outputs = exe.run(compiled, feed=[_to_infer_tensor(t) for t in ids])
    want = np.array(results[0])
    assert want.shape == (1, DICT)
    np.testing.assert_allclose(outputs[0].data.float_data(), want[0], rtol=1e-6)
    with pytest.raises(ValueError, match="already compiled with inference"):
        compiled._with_inference_optimize(config)
