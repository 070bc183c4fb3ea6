"""``fluidist-draw`` / ``python -m fluidist.viz.draw``: a picture of a parameter-server job.

It runs a user's training script only until the script transpiles its program (or, for a script that never
transpiles, until its first ``Executor.run``), takes the program built so far, transpiles it itself for
N pservers x M trainers, and draws the job. Nothing is trained and no socket is opened::

    fluidist-draw --pservers 2 --trainers 2 -o job.png examples/dist_digits.py --model mlp

By default each process is a lane (:mod:`fluidist.viz.draw_lanes`): a trainer's forward and backward passes as
one node each, then per pserver one ``send`` and one ``recv`` node with what they carry, and the barriers;
a pserver's ``listen_and_serv`` and its optimize blocks, named after the parameter blocks they update; one
edge per trainer, pserver and direction. ``--detail`` draws every op instead, joined by the variables that
flow between them, each ``send`` joined to its pserver and each ``recv`` to the block that updates what
it receives, labelled with the variable (``--vars``: the variables as nodes too). The picture's format
follows the output's extension (svg, png, pdf; .dot writes the DOT text only); the DOT text is written
beside it. The default picture as SVG is laid out by fluidist itself (:mod:`fluidist.viz.svg_lanes`);
``--detail`` pictures and PNG / PDF need Graphviz's ``dot``. On success the picture's path is printed (once) and the exit code is 0.

The script sees the environment a launcher gives trainer 0 (``TRAINING_ROLE=TRAINER``, ``PADDLE_*``), so
scripts that take their role from it go straight to their transpile call.
"""
import argparse
import os
import runpy
import sys

from .debugger import add_block
from .draw_lanes import draw_lanes
from ..framework import registry
from .graphviz import DotNotFound, Graph, render
from .svg_lanes import write_lanes_svg

__all__ = ["capture_programs", "transpile_job", "draw_job", "draw_lanes", "main"]


class _Captured(BaseException):
    """Stops the user's script once its programs are known (a BaseException, so ``except Exception`` in the
    script does not swallow it)."""

    def __init__(self, main, startup, how):
        super().__init__(how)
        self.main, self.startup, self.how = main, startup, how


def _fake_trainer_env(pservers, trainers):
    eps = ["127.0.0.1:%d" % (6170 + i) for i in range(pservers)]
    workers = ["127.0.0.1:%d" % (6270 + i) for i in range(trainers)]
    return {"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": "0", "PADDLE_TRAINERS_NUM": str(trainers),
            "PADDLE_PSERVERS_IP_PORT_LIST": ",".join(eps), "PADDLE_PSERVER_NUMS": str(pservers),
            "PADDLE_TRAINER_ENDPOINTS": ",".join(workers), "PADDLE_CURRENT_ENDPOINT": workers[0],
            "POD_IP": "127.0.0.1", "PADDLE_PORT": "6270"}


def capture_programs(script, argv=(), pservers=2, trainers=2):
    """Run ``script`` (a path) with ``argv`` until it transpiles or first runs an executor; returns
    ``(main, startup, how)``, clones of the programs it had built. Raises RuntimeError when the script ends
    without doing either."""
    import fluidist as fluid    # a tool for users' scripts: it stops the public classes they call
    Executor, DistributeTranspiler = fluid.Executor, fluid.DistributeTranspiler
    default_main_program, default_startup_program = fluid.default_main_program, fluid.default_startup_program

    def on_transpile(self, trainer_id, program=None, pservers="", trainers=1, sync_mode=True, startup_program=None,
                     current_endpoint=""):
        main = program if program is not None else default_main_program()
        startup = startup_program if startup_program is not None else default_startup_program()
        raise _Captured(main.clone(), startup.clone(), "DistributeTranspiler.transpile")

    def on_run(self, program=None, *args, **kwargs):
        main = default_main_program()
        if not main.global_block().ops:
            raise RuntimeError("%s ran an executor before transpiling, with nothing in the default main program: "
                               "fluidist-draw needs a script that calls DistributeTranspiler.transpile (or fleet) "
                               "or builds its net in the default main program" % script)
        raise _Captured(main.clone(), default_startup_program().clone(), "Executor.run")

    saved = (DistributeTranspiler.transpile, Executor.run, sys.argv, dict(os.environ), list(sys.path))
    DistributeTranspiler.transpile = on_transpile
    Executor.run = on_run
    sys.argv = [script] + list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    os.environ.update(_fake_trainer_env(pservers, trainers))
    try:
        runpy.run_path(script, run_name="__main__")
    except _Captured as c:
        return c.main, c.startup, c.how
    except SystemExit as e:
        raise RuntimeError("%s exited (%s) before building and transpiling its program" % (script, e.code)) from None
    finally:
        DistributeTranspiler.transpile, Executor.run, sys.argv = saved[:3]
        os.environ.clear()
        os.environ.update(saved[3])
        sys.path[:] = saved[4]
    raise RuntimeError("%s ended without transpiling or running an executor: nothing to draw" % script)


def transpile_job(main, startup, pservers=2, trainers=2, sync_mode=True, config=None):
    """``(trainer programs, {endpoint: pserver program})`` of ``main`` transpiled for the job (no sockets)."""
    from fluidist import DistributeTranspiler
    eps = ["127.0.0.1:%d" % (6170 + i) for i in range(pservers)]
    trainer_progs, pserver_progs = [], {}
    for tid in range(trainers):
        t = DistributeTranspiler(config=config)
        t.transpile(tid, program=main.clone(), pservers=",".join(eps), trainers=trainers, sync_mode=sync_mode,
                    startup_program=startup.clone())
        trainer_progs.append(t.get_trainer_program(wait_port=False))
        if tid == 0:
            for ep in eps:
                pserver_progs[ep] = t.get_pserver_program(ep)
    return trainer_progs, pserver_progs


def _updated_names(block):
    """The parameters (or parameter blocks) a pserver optimize block writes."""
    out = []
    for op in block.ops:
        for n in op.outputs.get("ParamOut", []):
            if n not in out:
                out.append(n)
    return out


def draw_job(trainer_progs, pserver_progs, title=None, show_vars=False):
    """The detailed picture (``--detail``; a :class:`fluidist.viz.graphviz.Graph`) of trainer and pserver programs side
    by side: every op, an edge per variable sent or received."""
    g = Graph("job", graph_attr={"rankdir": "TB", "fontname": "Helvetica", "compound": "true",
                                 "label": title or "", "labelloc": "t", "fontsize": "20", "newrank": "true"})
    trainer_nodes = []
    for tid, prog in enumerate(trainer_progs):
        sub = g.subgraph("trainer_%d" % tid, label="trainer %d" % tid, style="rounded", color="#3a6ea5")
        trainer_nodes.append((prog.global_block(), add_block(sub, prog.global_block(), "t%d:" % tid,
                                                             show_vars=show_vars)))
    serve, updater = {}, {}
    for k, (ep, prog) in enumerate(pserver_progs.items()):
        sub = g.subgraph("pserver_%d" % k, label="pserver %d (%s)" % (k, ep), style="rounded", color="#b5651d")
        ids = add_block(sub, prog.global_block(), "p%d:b0:" % k, show_vars=show_vars)
        las = [ids[i] for i, op in enumerate(prog.global_block().ops) if registry.fact(op, "serves", False)]
        serve[ep] = las[0] if las else None
        for b in prog.blocks[1:]:
            names = _updated_names(b)
            bsub = sub.subgraph("pserver_%d_block_%d" % (k, b.idx), style="dashed",
                                label="block %d: %s" % (b.idx, ", ".join(names) or "(no parameter)"))
            bids = add_block(bsub, b, "p%d:b%d:" % (k, b.idx), show_vars=show_vars)
            if not bids:
                continue
            if serve[ep] is not None:
                g.edge(serve[ep], bids[0], style="dashed", color="#b5651d", lhead="cluster_" + bsub.name)
            for n in names:
                updater[(ep, n)] = bids[len(bids) - 1]
    for tid, (block, ids) in enumerate(trainer_nodes):
        for i, op in enumerate(block.ops):
            eps = op.attrs.get("epmap") or []
            sent, received = registry.fact(op, "to_peers"), registry.fact(op, "from_peers")
            if sent:
                for name, ep in zip(op.inputs.get(sent, []), eps):
                    if serve.get(ep) is not None:
                        g.edge(ids[i], serve[ep], label=name, color="#1f5fbf", fontcolor="#1f5fbf", fontsize="9",
                               constraint="false")
            if received:
                for name, ep in zip(op.outputs.get(received, []), eps):
                    src = updater.get((ep, name)) or serve.get(ep)
                    if src is not None:
                        g.edge(src, ids[i], label=name, color="#2e8b57", fontcolor="#2e8b57", fontsize="9",
                               constraint="false")
    return g


def build_parser():
    p = argparse.ArgumentParser(
        prog="fluidist-draw", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Transpile a training script's program for N pservers x M trainers and draw the job: a lane per "
                    "process, the sends and recvs grouped per pserver (--detail: every op).",
        epilog="example: fluidist-draw --pservers 2 --trainers 2 -o job.png examples/dist_digits.py --model mlp")
    p.add_argument("--pservers", type=int, default=2, help="number of parameter servers")
    p.add_argument("--trainers", type=int, default=2, help="number of trainers")
    p.add_argument("--async_mode", action="store_true", help="transpile for asynchronous training (no barriers)")
    p.add_argument("--min_block_size", type=int, default=None,
                   help="DistributeTranspilerConfig.min_block_size: smaller slices parameters into more blocks "
                        "(default: the transpiler's, 8192)")
    p.add_argument("--no_slice", action="store_true", help="DistributeTranspilerConfig.slice_var_up = False")
    p.add_argument("--detail", action="store_true",
                   help="draw every op of every program, and an edge per variable sent or received (a big picture)")
    p.add_argument("--vars", action="store_true", help="with --detail: the variables as nodes too")
    p.add_argument("-o", "--output", default="job.svg",
                   help="the picture; its extension picks the format (svg, png, pdf; .dot writes DOT only). "
                        "The DOT text is written beside it. The default picture as svg needs no Graphviz; "
                        "--detail and png / pdf need its dot")
    p.add_argument("script", help="the training script (run only until it transpiles)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def main(argv=None):
    """The console script: draws the job, prints the picture's path; returns 0 (errors exit 1 with a message)."""
    args = build_parser().parse_args(argv)
    if args.pservers < 1 or args.trainers < 1:
        raise SystemExit("fluidist-draw: --pservers and --trainers must be at least 1")
    if not os.path.isfile(args.script):
        raise SystemExit("fluidist-draw: script %r not found" % args.script)
    if args.vars and not args.detail:
        raise SystemExit("fluidist-draw: --vars draws the variables of the detailed picture; add --detail")
    from fluidist import DistributeTranspilerConfig
    config = DistributeTranspilerConfig()
    if args.min_block_size is not None:
        config.min_block_size = args.min_block_size
    if args.no_slice:
        config.slice_var_up = False
    main_prog, startup, how = capture_programs(args.script, args.script_args, args.pservers, args.trainers)
    trainers, pservers = transpile_job(main_prog, startup, args.pservers, args.trainers,
                                       sync_mode=not args.async_mode, config=config)
    title = "%s: %d pserver(s) x %d trainer(s), %s (program taken at %s)" % (
        os.path.basename(args.script), args.pservers, args.trainers, "async" if args.async_mode else "sync", how)
    if args.detail:
        g = draw_job(trainers, pservers, title=title, show_vars=args.vars)
    else:
        g = draw_lanes(trainers, pservers, title=title)
    base, ext = os.path.splitext(args.output)
    dot_path = g.save(base + ".dot")
    out = dot_path
    if ext.lower() == ".svg" and not args.detail:      # the lanes picture: fluidist lays it out, no Graphviz
        out = write_lanes_svg(g, args.output)
    elif ext.lower() not in ("", ".dot", ".gv"):
        try:
            out = render(dot_path, args.output)
        except (DotNotFound, RuntimeError) as e:
            raise SystemExit("fluidist-draw: %s" % e) from None
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
