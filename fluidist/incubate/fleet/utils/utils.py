"""``incubate.fleet.utils.utils``: Paddle's helpers for checking saved models (loading ProgramDescs in
binary or text form, comparing saved variables with a program). fluidist loads and inspects programs
through ``fluid.io``; these helpers are refused, each saying which call does the job."""
from fluidist.compat import refused

__all__ = ["load_program", "save_program", "program_type_trans", "check_saved_vars_try_dump", "parse_program",
           "check_pruned_program_vars", "graphviz"]

_LOAD = ("load a model with fluid.io.load_inference_model(dirname, exe) (fluidist's or Paddle's __model__) "
         "or a program with fluid.Program.parse_from_string(bytes)")
_SAVE = "save with fluid.io.save_inference_model(...) or fluid.io.save_persistables(exe, dirname, program)"
_VARS = "load with fluid.io.load_persistables / load_vars, which name every missing or mis-shaped variable"

for _name, _instead in [("load_program", _LOAD), ("load_program_binary", _LOAD), ("load_program_text", _LOAD),
                        ("save_program", _SAVE), ("program_type_trans", _LOAD + "; save it back with " + _SAVE),
                        ("check_saved_vars_try_dump", _VARS), ("parse_program", "print(program) or "
                         "fluid.transpiler.details.program_to_code(program)"),
                        ("check_pruned_program_vars", _VARS),
                        ("graphviz", "fluid.debugger.draw_block_graphviz(block, path=...)"),
                        ("append_save_op", _SAVE), ("append_load_op", _VARS), ("save_var", _SAVE),
                        ("load_var", _VARS), ("reader", "read feed data with fluid.io.DataLoader.from_generator"),
                        ("feed_gen", "read feed data with fluid.io.DataLoader.from_generator"),
                        ("try_load_model_vars", _VARS),
                        ("check_not_expected_ops", "list the ops with [op.type for op in program.global_block().ops]")]:
    globals()[_name] = refused("fluid.incubate.fleet.utils.utils." + _name, _instead)
