"""Pictures of programs: fluidist.debugger, fluidist.net_drawer, fluidist-draw and
BuildStrategy.debug_graphviz_path. The DOT text is checked node by node and edge by edge; rendering goes
through Graphviz's real ``dot`` (installed by .ci/run; skipped, saying so, where it is missing)."""
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import fluidist as fluid
from fluidist import debugger, net_drawer
from fluidist.viz.draw import draw_job, draw_lanes, transpile_job

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot is not installed (Debian package graphviz)")


def _net(width=16):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 64])
        y = fluid.data("y", [None, 1])
        h = fluid.layers.fc(x, width, act="relu")
        pred = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def _edges(dot):
    return re.findall(r'^\s*"([^"]+)" -> "([^"]+)"(?: \[(.*)\])?;$', dot, re.M)


def _nodes(dot):
    return dict(re.findall(r'^\s*"([^"]+)" \[label="((?:[^"\\]|\\.)*)"', dot, re.M))


@needs_dot
def test_draw_block_graphviz_writes_dot_and_renders(tmp_path):
    main, _, loss = _net()
    path = str(tmp_path / "net.dot")
    img = debugger.draw_block_graphviz(main.global_block(), highlights=[loss.name], path=path, format="svg")
    assert img == str(tmp_path / "net.svg")
    ET.parse(img)  # well-formed SVG from dot
    dot = open(path).read()
    nodes = _nodes(dot)
    block = main.global_block()
    assert [nodes["op%d" % i].split("\\n")[0] for i in range(len(block.ops))] == [op.type for op in block.ops]
    edges = set((a, b) for a, b, _ in _edges(dot))
    mul = block.ops[0]
    assert ("var:x", "op0") in edges and ("var:fc_0.w_0", "op0") in edges and ("op0", "var:" + mul.output("Out")[0]) in edges
    assert re.search(r'"var:%s" \[label="[^"]*", shape="ellipse", style="filled", fillcolor="#f4a3a3"'
                     % re.escape(loss.name), dot)  # highlighted
    assert re.search(r'"var:fc_0.w_0" \[label="fc_0.w_0\\n\[64, 16\]", shape="ellipse", style="filled", '
                     r'fillcolor="#e6e6e6"', dot)  # a parameter, with its shape


def test_pprint_codes():
    main, _, _ = _net()
    text = debugger.pprint_block_codes(main.global_block())
    assert text.startswith("// block-0  parent--1\n// variables\n")
    assert "fc_0.tmp_0 = mul(X=x, Y=fc_0.w_0) [x_num_col_dims=1, y_num_col_dims=1]" in text
    assert "_grad(" not in text  # backward ops hidden by default
    full = debugger.pprint_block_codes(main.global_block(), show_backward=True)
    assert "mul_grad(" in full and "sgd(" in full
    assert debugger.pprint_program_codes(main) == full
    with pytest.raises(TypeError, match="expected a Block"):
        debugger.pprint_block_codes(42)


def test_net_drawer_draw_graph(tmp_path):
    main, startup, _ = _net()
    path = str(tmp_path / "g.gv")
    g = net_drawer.draw_graph(startup, main, filename=path, graph_attr={"rankdir": "LR"})
    dot = open(path).read()
    assert dot == g.source and 'rankdir="LR"' in dot
    assert 'subgraph "cluster_startup"' in dot and 'subgraph "cluster_main"' in dot
    nodes = _nodes(dot)
    assert sum(1 for k in nodes if k.startswith("startup:op")) == len(startup.global_block().ops)
    assert sum(1 for k in nodes if k.startswith("main:op")) == len(main.global_block().ops)


def _job(width=16, pservers=2, trainers=2):
    main, startup, _ = _net(width)
    trainers_p, pservers_p = transpile_job(main, startup, pservers, trainers)
    return trainers_p, pservers_p, draw_job(trainers_p, pservers_p, title="test job").source


def test_transpiled_job_has_send_and_recv_edges_between_roles():
    trainers, pservers, dot = _job()
    nodes = _nodes(dot)
    for c in ("trainer_0", "trainer_1", "pserver_0", "pserver_1"):
        assert 'subgraph "cluster_%s"' % c in dot
    edges = _edges(dot)
    las = {ep: "p%d:b0:op%d" % (k, [op.type for op in p.global_block().ops].index("listen_and_serv"))
           for k, (ep, p) in enumerate(pservers.items())}
    for tid, prog in enumerate(trainers):
        for i, op in enumerate(prog.global_block().ops):
            if op.type == "send":
                for name, ep in zip(op.input("X"), op.attr("epmap")):
                    assert ("t%d:op%d" % (tid, i), las[ep]) in [(a, b) for a, b, at in edges if 'label="%s"' % name in at]
                    assert name.endswith(".trainer_%d" % tid)
            if op.type == "recv":
                name = op.output("Out")[0]
                into = [(a, at) for a, b, at in edges if b == "t%d:op%d" % (tid, i)]
                k = list(pservers).index(op.attr("epmap")[0])
                assert any(a.startswith("p%d:" % k) and 'label="%s"' % name in at for a, at in into), (name, into)
    # each pserver block is boxed and named after what it updates; listen_and_serv points into it
    assert re.search(r'label="block 1: fc_\d\.[wb]_0"', dot)
    assert sum(1 for n in nodes.values() if n.startswith("listen_and_serv")) == 2


def test_sliced_parameter_blocks_are_named():
    trainers, pservers, dot = _job(width=512)  # fc_0.w_0 is 64 x 512: two blocks of 16384 over two pservers
    for k in range(2):
        assert re.search(r'label="block \d+: fc_0\.w_0\.block%d"' % k, dot), k
    assert re.search(r'label="fc_0\.w_0@GRAD\.block0\.trainer_1"', dot)


def test_default_picture_is_a_lane_per_process_with_traffic_grouped_per_pserver():
    main, startup, _ = _net(width=512)   # fc_0.w_0 is sliced in two blocks over the two pservers
    trainers, pservers = transpile_job(main, startup, 2, 2)
    dot = draw_lanes(trainers, pservers, title="test job").source
    assert [c for c in re.findall(r'subgraph "cluster_(\w+)"', dot)] == ["trainer_0", "pserver_0", "pserver_1",
                                                                         "trainer_1"]
    nodes = _nodes(dot)
    eps = list(pservers)
    for tid, prog in enumerate(trainers):
        block = prog.global_block()
        for k, ep in enumerate(eps):
            sent = [n for op in block.ops if op.type == "send" for n, e in zip(op.input("X"), op.attr("epmap"))
                    if e == ep]
            got = [n for op in block.ops if op.type == "recv" for n, e in zip(op.output("Out"), op.attr("epmap"))
                   if e == ep]
            assert sent and got
            send = [i for i, label in nodes.items() if i.startswith("t%d:" % tid)
                    and label == "send -> pserver %d\\n%d gradients" % (k, len(sent))]
            recv = [i for i, label in nodes.items() if i.startswith("t%d:" % tid)
                    and label == "recv <- pserver %d\\n%d parameters" % (k, len(got))]
            assert len(send) == 1 and len(recv) == 1, (tid, k, nodes)
            edges = _edges(dot)
            assert [(a, b) for a, b, at in edges if a == send[0] and b.startswith("p")] == [(send[0], "p%d:serve" % k)]
            assert [(a, b) for a, b, at in edges if b == recv[0] and a.startswith("p")] == [("p%d:serve" % k, recv[0])]
    cross = [(a, b) for a, b, _ in _edges(dot) if a.split(":")[0][0] != b.split(":")[0][0]]
    assert len(cross) == 2 * 2 * 2   # one per trainer, pserver and direction
    assert any(label.startswith("forward: ") for label in nodes.values())
    assert sum(1 for i in nodes if i.startswith("p0:b")) == len(pservers[eps[0]].blocks) - 1
    assert re.search(r'"p\d:b\d" \[label="block \d: fc_0\.w_0\.block0\\n', dot)


def test_default_picture_of_many_trainers_is_one_trainer_lane():
    main, startup, _ = _net()
    trainers, pservers = transpile_job(main, startup, 2, 6)
    dot = draw_lanes(trainers, pservers).source
    assert re.findall(r'subgraph "cluster_(\w+)"', dot) == ["trainer_0", "pserver_0", "pserver_1"]
    assert 'label="trainers 0..5 (each runs this program)"' in dot
    assert len([e for e in _edges(dot) if "x 6 trainers" in e[2]]) == 4


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def _draw(tmp_path, *args, path=None):
    """fluidist-draw as its console script runs it (``sys.exit(main())``); ``path``: its PATH."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-c", "import sys; from fluidist.viz.draw import main; sys.exit(main())"]
                          + [str(a) for a in args], capture_output=True, text=True, timeout=120, env=env,
                          cwd=str(tmp_path))


def test_the_default_picture_as_svg_needs_no_graphviz(tmp_path):
    """fluidist-draw with no ``dot`` on its PATH: the default (lanes) picture as SVG is drawn by fluidist, a
    well-formed SVG that names each process's lane and the ops of each stage; PNG and ``--detail`` say
    they need Graphviz (exit 1)."""
    example = os.path.join(ROOT, "examples", "dist_digits.py")
    no_dot = tmp_path / "bin"
    no_dot.mkdir()
    os.symlink(sys.executable, str(no_dot / "python"))
    svg_path = tmp_path / "job.svg"
    r = _draw(tmp_path, "-o", svg_path, example, "--model", "mlp", path=str(no_dot))
    assert r.returncode == 0 and r.stdout == str(svg_path) + "\n", r.stderr
    svg = ET.parse(str(svg_path)).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.tag == ns + "svg" and float(svg.get("width")) <= 1920
    titles = [t.text for t in svg.iter(ns + "title")]
    assert {"cluster_trainer_0", "cluster_trainer_1", "cluster_pserver_0", "cluster_pserver_1"} <= set(titles)
    text = " ".join(t.text or "" for t in svg.iter(ns + "tspan"))
    for words in ("listen_and_serv", "send -> pserver 0", "recv <- pserver 1", "send_barrier", "fetch_barrier",
                  "mul", "softmax_with_cross_entropy", "adam", "dist_digits.py: 2 pserver(s) x 2 trainer(s)"):
        assert words in text, (words, text[:2000])
    assert len(svg.findall(".//%spath" % ns)) >= 8       # per trainer and pserver: a send and a recv edge
    for args in (["-o", tmp_path / "job.png"], ["--detail", "-o", tmp_path / "detail.svg"]):
        r = _draw(tmp_path, *args, example, path=str(no_dot))
        assert r.returncode == 1 and "Graphviz's `dot` is not installed" in r.stderr, r.stderr


@needs_dot
def test_fluidist_draw_cli_on_the_distributed_example(tmp_path):
    example = os.path.join(ROOT, "examples", "dist_digits.py")
    png = tmp_path / "job.png"
    r = _draw(tmp_path, "--pservers", "2", "--trainers", "2", "-o", png, example, "--model", "mlp")
    assert r.returncode == 0, r.stderr
    assert r.stdout == str(png) + "\n" and r.stderr == ""   # the path, once
    width, height = _png_size(png)
    assert width <= 1920 and height <= 1080, (width, height)   # fits a screen
    dot = (tmp_path / "job.dot").read_text()
    assert "dist_digits.py: 2 pserver(s) x 2 trainer(s), sync (program taken at DistributeTranspiler.transpile)" \
        in dot
    svg_path = tmp_path / "job.svg"
    r = _draw(tmp_path, "-o", svg_path, example)
    assert r.returncode == 0 and r.stdout == str(svg_path) + "\n", r.stderr
    svg = ET.parse(str(svg_path)).getroot()
    titles = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert "cluster_trainer_1" in titles and "cluster_pserver_1" in titles
    # --detail: every op, an edge per variable between the processes
    r = _draw(tmp_path, "--detail", "-o", tmp_path / "detail.dot", example)
    assert r.returncode == 0 and r.stdout == str(tmp_path / "detail.dot") + "\n", r.stderr
    cross = [e for e in _edges((tmp_path / "detail.dot").read_text()) if 'constraint="false"' in e[2]]
    assert len([e for e in cross if 'label="fc_0.w_0@GRAD.trainer_1"' in e[2]]) == 1
    r = _draw(tmp_path, "no_such_script.py")
    assert r.returncode == 1 and "script 'no_such_script.py' not found" in r.stderr
    r = _draw(tmp_path, "--vars", example)
    assert r.returncode == 1 and "--vars draws the variables of the detailed picture; add --detail" in r.stderr


def test_debug_graphviz_path_is_honoured(tmp_path):
    main, startup, loss = _net()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    bs = fluid.BuildStrategy()
    bs.debug_graphviz_path = str(tmp_path / "viz")
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs,
                                                              places=fluid.cpu_places(2))
    x = np.ones((4, 64), "float32")
    exe.run(compiled, feed={"x": x, "y": np.ones((4, 1), "float32")}, fetch_list=[loss], scope=scope)
    dot = (tmp_path / "viz_multi_devices_graph").read_text()
    nodes = _nodes(dot)
    assert 'subgraph "cluster_place_0"' in dot and 'subgraph "cluster_place_1"' in dot
    # each place: its program with the all-reduce of its (coalesced) gradients; the places' matching
    # all-reduce ops joined by an edge naming their ring
    grads = ["%s@GRAD" % p.name for p in main.global_block().all_parameters()]
    allreduce = {k: [n for n, label in nodes.items() if n.startswith("place%d:" % k) and "c_allreduce_sum" in label]
                 for k in (0, 1)}
    assert len(allreduce[0]) == len(allreduce[1]) == 1
    assert len([n for n, label in nodes.items() if n.startswith("place0:") and "coalesce_tensor" in label]) == 1
    fused = [op for op in compiled._runner.programs[0].global_block().ops if op.type == "coalesce_tensor"]
    assert sorted(fused[0].input("Input")) == sorted(grads)
    joined = [e for e in _edges(dot) if e[0] == allreduce[0][0] and e[1] == allreduce[1][0]]
    assert len(joined) == 1 and "ring" in joined[0][2]
