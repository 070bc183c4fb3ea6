"""Inference models: the pruned program in ``__model__`` plus its persistables."""
from __future__ import annotations

import json
import os
import warnings
from typing import TYPE_CHECKING, Sequence

from .. import bounded_json
from ..framework import program_bounds, program_forms
from ..framework.graph import ops_needed_for
from ..framework.program import Program, Variable
from ..framework.serialization import program_json_depth
from ..paddle_format import program_desc as paddle_program

from . import durable, durable_dir
from .common import INDEX_FILE, MODEL_FILE, _as_program, _read_index_file, _save_format, _sha256, is_persistable
from .vars import _ArchiveSource, _is_archive, _save, load_persistables

if TYPE_CHECKING:  # for the annotations only
    from ..core.scope import Scope
    from ..executor.executor import Executor




# ---------------------------------------------------------------- inference models
def _prune_for_inference(program, feeds, targets):
    """Keep, in the (already test-mode) ``program``, only the ops and global variables that compute
    ``targets`` from ``feeds`` and persistables, as Paddle 1.8's ``_prune_with_input`` does. A value
    those ops read that is neither fed nor persistable nor computed (a label, a second input left out
    of ``feeded_var_names``) stays a plain variable of the saved program, as in Paddle, which saves
    such a program too: whoever runs the model feeds it. A warning names it."""
    block = program.global_block()
    keep = ops_needed_for(block, targets, feeds)
    block.ops = [block.ops[i] for i in keep]
    available, unfed = set(feeds), []
    for op in block.ops:
        for n in op.input_arg_names:
            if n in available or n in unfed:
                continue
            v = block._find_var_recursive(n)
            if v is None or not v.persistable:
                unfed.append(n)
        available.update(op.output_arg_names)
    unfed += [t for t in targets if t not in available and t not in unfed
              and not getattr(block._find_var_recursive(t), "persistable", False)]
    if unfed:
        warnings.warn("save_inference_model: the saved program reads %s, which %s neither among the feeds %s nor "
                      "persistable nor computed from them: feed %s when running the model"
                      % (", ".join(repr(n) for n in unfed), "is" if len(unfed) == 1 else "are", list(feeds),
                         "it" if len(unfed) == 1 else "them"), stacklevel=3)
    used = set(feeds) | set(targets)
    for b in program.blocks:
        for op in b.ops:
            used.update(op.input_arg_names)
            used.update(op.output_arg_names)
    for name in list(block.vars):
        if name not in used:
            del block.vars[name]
    program._bump_version()
    return program


def _check_feeds_and_targets(feeded_var_names, target_vars, export_for_deployment):
    """``(feed names, target names)`` as lists, checked as Paddle 1.8 checks them: a name or a
    Variable alone stands for a list of one; when exporting for deployment the feeds must be names and
    the targets a non-empty list of Variables (ValueError otherwise, Paddle's type). Without export
    Paddle reads neither: anything goes (a Variable's name, a str, the rest left out)."""
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    if not export_for_deployment:
        def names(values):
            values = values if isinstance(values, (list, tuple)) else []
            return [v.name if isinstance(v, Variable) else v for v in values if isinstance(v, (Variable, str))]
        return names(feeded_var_names), names(target_vars)
    if not isinstance(feeded_var_names, (list, tuple)) or not all(isinstance(n, str) for n in feeded_var_names):
        raise ValueError("save_inference_model: feeded_var_names must be a list of variable names (str), got %r"
                         % (feeded_var_names,))
    if not isinstance(target_vars, (list, tuple)) or not target_vars \
            or not all(isinstance(v, Variable) for v in target_vars):
        raise ValueError("save_inference_model: target_vars must be a Variable or a non-empty list of Variables, "
                         "got %r" % (target_vars,))
    return list(feeded_var_names), [v.name for v in target_vars]


def _scaled_targets(program, target_vars):
    """As Paddle 1.8 does, append ``scale(target, 1.0, name="save_infer_model/scale_<i>")`` to the program
    (the caller's program: it keeps the ops) for each target Variable; the saved model fetches those
    (``save_infer_model/scale_<i>.tmp_<n>``), so that a target is never an op's input pruned away."""
    from ..framework import unique_name
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    if not isinstance(target_vars, (list, tuple)):
        return target_vars
    block = program.global_block()
    scaled = []
    for i, v in enumerate(target_vars):
        if isinstance(v, Variable):
            name = unique_name.generate_with_ignorable_key("save_infer_model/scale_%d.tmp" % i)
            out = block.create_var(name=name, dtype=v.dtype, shape=v.shape, lod_level=v.lod_level)
            block.append_op("scale", inputs={"X": [v]}, outputs={"Out": [out]},
                            attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True})
            v = out
        scaled.append(v)
    return scaled


def save_inference_model(dirname: str, feeded_var_names: Sequence[str], target_vars: Sequence[Variable],
                         executor: Executor, main_program: Program | None = None, model_filename: str | None = None,
                         params_filename: str | None = None, export_for_deployment: bool = True,
                         program_only: bool = False, scope: Scope | None = None,
                         format: str | None = None) -> list[str]:
    """Save the part of ``main_program`` that computes ``target_vars`` from ``feeded_var_names``
    (test mode: no backward/optimize ops, dropout/batch_norm switched to inference) and the
    persistables it reads. Returns the target names.

    With ``export_for_deployment=False`` the whole program is written, unpruned, to
    ``<model_filename>.main_program`` with all its persistables, as Paddle does. With
    ``format="paddle"`` the files are Paddle's (a ProgramDesc with feed and fetch ops, LoDTensor
    files), for Paddle 1.8 and Paddle Inference to load. As in Paddle, the targets may read values
    that are not among the feeds (a warning names them): the saved program reads them, and whoever
    runs it feeds them.

    Raises:
        ValueError: (exporting for deployment) feeds that are not names, targets that are not a
            non-empty list of Variables, or a name the program does not have; an unknown ``format``.
    """
    fmt = _save_format(format)
    feeded_var_names, targets = _check_feeds_and_targets(feeded_var_names, target_vars, export_for_deployment)
    program = _as_program(main_program)
    gb = program.global_block()
    if export_for_deployment:       # Paddle's pruning fails on a name the program lacks
        for what, names in (("feed", feeded_var_names), ("target", targets)):
            for n in names:
                if gb._find_var_recursive(n) is None:
                    raise ValueError("%s variable %r is not a variable of the program" % (what, n))
    _, targets = _check_feeds_and_targets(feeded_var_names, _scaled_targets(program, target_vars),
                                          export_for_deployment)
    model_basename = os.path.basename(model_filename) if model_filename else MODEL_FILE
    params_filename = os.path.basename(params_filename) if params_filename else None
    if export_for_deployment:
        infer = _prune_for_inference(program.clone(for_test=True), list(feeded_var_names), targets)
        if fmt == "paddle":
            blob = paddle_program.write_program(infer, model_basename, list(feeded_var_names), targets)
        else:
            d = infer.to_dict()
            d["feed_target_names"] = list(feeded_var_names)
            d["fetch_target_names"] = targets
            blob = json.dumps(d).encode("utf-8")
    else:
        infer = program
        model_basename += ".main_program"
        blob = (paddle_program.write_program(program, model_basename) if fmt == "paddle"
                else program.to_json().encode("utf-8"))
    with durable_dir.StagedDirectory(dirname) as stage:    # the program and its parameters replaced as one
        stage.write(model_basename, blob)
        if not program_only:
            _save(executor, dirname, infer, None, is_persistable, params_filename, scope, fmt,
                  extra_files={model_basename: _sha256(blob)}, stage=stage)
    return targets


def _model_checksum(dirname, model_basename, params_filename):
    """The SHA-256 a fluidist index records for the model file, if any."""
    try:
        if params_filename is not None:
            path = os.path.join(dirname, params_filename)
            if os.path.isfile(path) and _is_archive(path):
                src = _ArchiveSource(path, path)
                src.close()
                return src.files
            return None
        path = os.path.join(dirname, INDEX_FILE)
        return _read_index_file(path)[1] if os.path.exists(path) else None
    except ValueError:
        return None  # a bad index is reported when the parameters are read


def load_inference_model(dirname: str | None, executor: Executor, model_filename: str | bytes | None = None,
                         params_filename: str | bytes | None = None, pserver_endpoints: list[str] | None = None,
                         scope: Scope | None = None) -> list:
    """Load a model written by ``save_inference_model`` (fluidist's or Paddle's, detected): its
    parameters go into the scope.

    Returns ``[program, feed_target_names, fetch_targets]`` (fetch_targets are Variables of
    ``program``), ready for ``executor.run(program, feed={...}, fetch_list=fetch_targets)``. As in
    Paddle, ``dirname=None`` reads the model from memory: ``model_filename`` and ``params_filename``
    then hold the bytes of the program and of the combined parameters.
    """
    if dirname is None:
        if params_filename is None or model_filename is None:
            raise ValueError("with dirname=None, model_filename and params_filename must hold the bytes of the "
                             "program and of the parameters")
        if not isinstance(model_filename, (bytes, bytearray)):
            raise TypeError("with dirname=None, model_filename must hold the program's bytes, got %r"
                            % type(model_filename).__name__)
        return _load_model(bytes(model_filename), "<model bytes>", None, executor, params_filename,
                           pserver_endpoints, scope)
    durable.recover(dirname)
    if not os.path.isdir(dirname):
        raise ValueError("there is no directory named %r" % dirname)
    model_basename = os.path.basename(os.fsdecode(model_filename)) if model_filename else MODEL_FILE
    params_filename = os.path.basename(os.fsdecode(params_filename)) if params_filename else None
    where = os.path.join(dirname, model_basename)

    def read():
        if not os.path.exists(where):
            raise FileNotFoundError("no inference model at %s (written by save_inference_model)" % where)
        with open(where, "rb") as f:
            blob = f.read()
        sums = _model_checksum(dirname, model_basename, params_filename)
        if sums is not None and sums.get(model_basename) != _sha256(blob):
            raise ValueError("%s is corrupt: its SHA-256 does not match the index%s" % (
                where, "" if model_basename in sums else ", which does not record it"))
        return _load_model(blob, where, dirname, executor, params_filename, pserver_endpoints, scope)
    return durable_dir.read_consistently(dirname, read)


def _load_model(blob, where, dirname, executor, params_filename, pserver_endpoints, scope):
    """The program in ``blob`` (either form) with its persistables loaded: ``[program, feeds, fetch vars]``."""
    if blob[:1] == b"{":
        program_bounds.check_json_text(blob, where)
        try:
            d = bounded_json.loads(blob, where, len(blob), program_json_depth())
        except bounded_json.JSONBoundsError as e:
            raise ValueError("%s is not an inference model's JSON form: %s" % (where, e))
        if "feed_target_names" not in d or "fetch_target_names" not in d:
            raise ValueError("%s holds a program but no feed/fetch target names: it was not written by "
                             "save_inference_model" % where)
        program = program_forms.from_dict_into(d, Program(), where)
        feeds, fetches = list(d["feed_target_names"]), list(d["fetch_target_names"])
    elif paddle_program.is_program_desc(blob):
        program, feeds, fetches = paddle_program.read_program(blob, where)
    else:
        raise ValueError("%s is neither a fluidist inference model (JSON) nor a Paddle ProgramDesc" % where)
    load_persistables(executor, dirname, program, params_filename, scope=scope)
    if pserver_endpoints:
        for op in program.global_block().ops:
            if op.has_attr("epmap"):
                op._set_attr("epmap", list(pserver_endpoints))
    gb = program.global_block()
    for n in fetches:
        if gb._find_var_recursive(n) is None:
            raise ValueError("%s: fetch target %r is not a variable of the program" % (where, n))
    return [program, feeds, [gb._var_recursive(n) for n in fetches]]
