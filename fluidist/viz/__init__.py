"""Pictures of programs and jobs (Graphviz DOT text, rendered by ``dot`` when it is installed).

| module | what it draws |
|---|---|
| ``graphviz`` | the DOT writer (``Graph``: nodes, edges, subgraphs; ``save``, ``render``); Paddle's ``fluid.graphviz`` |
| ``debugger`` | a block's ops and variables, a data-parallel run's places; Paddle's ``fluid.debugger`` |
| ``net_drawer`` | a startup and a main program side by side; Paddle's ``fluid.net_drawer`` |
| ``draw``, ``draw_lanes`` | ``fluidist-draw``: a parameter-server job, a lane per process (or every op with ``--detail``) |

``draw`` runs a user's script until it transpiles, so it stops the classes the script uses through the
package's face (``fluid.Executor``, ``fluid.DistributeTranspiler``); the other modules import only the IR.
"""
