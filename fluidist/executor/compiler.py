"""CompiledProgram placeholder module; filled in by the data-parallel work."""


class CompiledProgram:
    def __init__(self, program_or_graph, build_strategy=None):
        self._program = program_or_graph
        self._build_strategy = build_strategy

    def _run(self, executor, feed, fetch_list, scope, return_numpy, return_merged):
        return executor.run(self._program, feed=feed, fetch_list=fetch_list, scope=scope,
                            return_numpy=return_numpy)
