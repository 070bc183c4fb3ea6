"""A parameter server of ``examples/fleet_digits_ps.py`` under strategy ARGV[1], endpoint ARGV[2] of
ARGV[3] (comma-separated): builds its programs, runs ``fleet.init_server(ARGV[4])`` (a directory
``fleet.save_persistables`` wrote) and prints, as JSON, the server variables the directory holds a value
for whose value on this server differs from it (``wrong``) and those that got none (``absent``)."""
import json
import os
import sys

import numpy as np

strategy, endpoint, endpoints, model_dir = sys.argv[1:5]
host, port = endpoint.split(":")
os.environ.update({"TRAINING_ROLE": "PSERVER", "PADDLE_PSERVERS_IP_PORT_LIST": endpoints,
                   "PADDLE_TRAINERS_NUM": "2", "POD_IP": host, "PADDLE_PORT": port})
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
import fleet_digits_ps as example  # noqa: E402
import fluidist as fluid  # noqa: E402
from fluidist import io  # noqa: E402
from fluidist.incubate.fleet.base import role_maker  # noqa: E402
from fluidist.incubate.fleet.parameter_server.distribute_transpiler import fleet  # noqa: E402

args = type("Args", (), dict(seed=1, strategy=strategy, model="mlp", optimizer="adam", lr=0.01))()
fleet.init(role_maker.PaddleCloudRoleMaker())
example.build(args)
fleet.init_server(model_dir)
sources = fleet._server_var_sources()
scope = fluid.global_scope()
wrong, absent = [], []
for var in io.get_program_persistable_vars(fleet.main_program):
    saved, rows = sources.get(var.name, (var.name, None))
    path = os.path.join(model_dir, saved + ".npy")
    if not os.path.exists(path):
        absent.append(var.name)
        continue
    want = np.load(path)
    if rows is not None:
        want = want[rows[0]:rows[0] + rows[1]]
    got = scope.find_var(var.name)
    if got is None or not np.array_equal(np.array(got.get_tensor()), want):
        wrong.append(var.name)
print(json.dumps({"wrong": wrong, "absent": absent}))
