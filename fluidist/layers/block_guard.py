"""``SubBlockGuard``: what ``with While(...).block():``, ``with rnn.step():`` and
``with ConditionalBlock(...).block():`` share."""


class SubBlockGuard:
    """Inside the ``with``, layers build into a new sub-block of the current block; when the body
    ends without an error ``complete()`` runs (still inside, to append the op that runs the block to
    the enclosing block); the sub-block is left either way. ``enter()`` runs first, if given."""

    def __init__(self, program, complete, enter=None):
        self.program = program
        self.complete = complete
        self.enter = enter

    def __enter__(self):
        if self.enter is not None:
            self.enter()
        self.program._create_block()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.complete()
        finally:
            self.program._rollback()
        return False


def parent_block(program):
    """The block enclosing ``program``'s current block (where a sub-block's layers put what outlives it)."""
    return program.block(program.current_block().parent_idx)
