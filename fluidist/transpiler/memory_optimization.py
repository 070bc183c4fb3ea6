"""``memory_optimize`` / ``release_memory``: deprecated in Paddle 1.6 and no-ops (with a warning) in
Paddle 1.8, the same here: fluidist's executor frees nothing a program still needs and needs no
program rewriting for memory."""
import logging

_log = logging.getLogger("fluidist.transpiler")


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0, skip_grads=True):
    """Deprecated, as in Paddle 1.8: changes nothing and says so."""
    _log.warning("memory_optimize is deprecated (as in Paddle 1.8) and does not change the program")


def release_memory(input_program, skip_opt_set=None):
    """Deprecated, as in Paddle 1.8: changes nothing and says so."""
    _log.warning("release_memory is deprecated (as in Paddle 1.8) and does not change the program")
