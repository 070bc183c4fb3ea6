"""Which of Paddle's test files belong to which family (``--families`` picks families).

A family is a set of files under the scratch copy of ``python/paddle/fluid/tests``; each file belongs to
the first family whose rule matches it, so the families split the tree.
"""
import fnmatch
import os
from typing import Dict, List, Tuple

# (family, folder relative to tests/, file patterns); the order decides a file's family
RULES: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    ("book", "book", ("test_*.py",)),
    ("dist", "unittests", ("test_dist_*.py", "test_listen_and_serv*.py", "test_communicator*.py",
                           "test_collective_*.py", "test_allreduce.py", "test_broadcast.py", "test_allgather.py",
                           "test_reducescatter*.py", "test_transpiler_ops.py")),
    ("fleet", "unittests", ("test_fleet_*.py", "test_downpoursgd.py", "test_fetch_handler.py",
                            "test_dataset*.py", "test_pipeline.py", "test_boxps.py", "test_trainer_desc.py")),
    ("dygraph", "unittests", ("test_imperative_*.py", "test_parallel_dygraph_*.py", "test_dygraph_*.py",
                              "test_var_base.py", "test_base_layer.py", "test_detach.py",
                              "test_math_op_patch_var_base.py", "test_op_function_generator.py")),
    ("layers", "unittests", ("test_layers.py", "test_rnn_cell_api.py", "test_rnn_decode_api.py",
                             "test_basic_*_api.py", "test_nets.py", "test_math_op_patch.py", "test_slice_var.py",
                             "test_image_classification_layer.py", "test_multihead_attention.py",
                             "test_normalization_wrapper.py", "test_detection.py", "test_nn_grad.py",
                             "test_*_nn_grad.py", "test_cond.py", "test_case.py", "test_switch_case.py",
                             "test_switch.py", "test_where.py", "test_linspace.py", "test_range.py", "test_diag.py")),
    ("optimizer", "unittests", ("test_optimizer*.py", "test_regularizer.py", "test_gradient_clip.py",
                                "test_grad_clip_minimize.py", "test_learning_rate_scheduler.py",
                                "test_weight_decay.py", "test_dgc_optimizer.py", "test_adam_optimizer_*.py")),
    ("program", "unittests", ("test_program*.py", "test_framework_debug_str.py", "test_operator*.py",
                              "test_variable.py", "test_parameter.py", "test_backward.py", "test_calc_gradient.py",
                              "test_desc_clone.py", "test_protobuf*.py", "test_prune.py", "test_unique_name.py",
                              "test_name_scope.py", "test_infer_shape.py", "test_registry.py", "test_scope.py",
                              "test_tensor.py", "test_selected_rows.py", "test_lod_tensor*.py",
                              "test_default_scope_funcs.py", "test_const_value.py", "test_exception.py",
                              "test_var_info.py", "test_version.py", "test_require_version.py")),
    ("ops", "unittests", ("test_*_op.py", "test_*_op_*.py")),
    ("ops", "unittests/sequence", ("test_*.py",)),
    ("mkldnn", "unittests/mkldnn", ("test_*.py",)),
    ("ngraph", "unittests/ngraph", ("test_*.py",)),
    ("other", "unittests", ("test_*.py",)),
    ("other", "", ("test_*.py",)),
)
FAMILIES = tuple(dict.fromkeys(rule[0] for rule in RULES))


def classify(tests_dir: str) -> Dict[str, List[str]]:
    """``{family: [file path relative to tests_dir, ...]}`` for every test file of the tree."""
    taken, out = set(), {name: [] for name in FAMILIES}
    for family, folder, patterns in RULES:
        where = os.path.join(tests_dir, folder)
        if not os.path.isdir(where):
            continue
        for name in sorted(os.listdir(where)):
            rel = os.path.join(folder, name) if folder else name
            if rel in taken or not name.endswith(".py"):
                continue
            if any(fnmatch.fnmatch(name, p) for p in patterns):
                taken.add(rel)
                out[family].append(rel)
    return out


def needs_op_test(path: str) -> bool:
    """Whether a test file is built on OpTest (it then runs on the runner's op_test)."""
    with open(path, errors="replace") as f:
        return "OpTest" in f.read()

# Files Paddle's own CPU build does not run (python/paddle/fluid/tests/unittests/CMakeLists.txt removes them
# from TEST_OPS when WITH_GPU is OFF, without MKL, or as broken upstream): the runner reports each as
# skipped with this reason instead of running it (--include-excluded runs them).
PADDLE_CPU_BUILD_EXCLUDES = {
    "test_c_comm_init_all_op.py": "GPU build only (NCCL)",
    "test_allgather.py": "GPU build only (NCCL collectives on CUDAPlace)",
    "test_allreduce.py": "GPU build only (NCCL collectives on CUDAPlace)",
    "test_broadcast.py": "GPU build only (NCCL collectives on CUDAPlace)",
    "test_reducescatter.py": "GPU build only (NCCL collectives on CUDAPlace)",
    "test_reducescatter_api.py": "GPU build only (NCCL collectives on CUDAPlace)",
    "test_conv2d_fusion_op.py": "GPU build only (cuDNN fusion)",
    "test_parallel_dygraph_mnist.py": "GPU build only",
    "test_pipeline.py": "GPU build only",
    "test_seq_concat_op.py": "disabled upstream (Paddle issue 8290)",
    "test_lstm_unit_op.py": "disabled upstream (Paddle issue 5185)",
    "test_cond_op.py": "disabled upstream (Paddle issue 5101)",
    "test_fusion_seqexpand_concat_fc_op.py": "MKLML build only",
    "test_match_matrix_tensor_op.py": "MKL + AVX build only",
    "test_var_conv_2d.py": "MKL + AVX build only",
    "test_pyramid_hash_op.py": "AVX build only, not with coverage",
    "test_matmul_op_with_head.py": "MKLML build only (multi-head matmul needs MKL)",
}


def excluded_reason(rel: str) -> str:
    """Why Paddle's CPU build does not run ``rel`` ("" if it does)."""
    return PADDLE_CPU_BUILD_EXCLUDES.get(os.path.basename(rel), "") if rel.startswith("unittests/") else ""
