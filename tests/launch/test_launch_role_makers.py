"""fluidist's PaddleCloudRoleMaker, in processes the launcher started, knows who it is."""
import pytest

from launch_testlib import base_env, read_json, run_launcher, script

pytestmark = pytest.mark.timeout(120)


def test_ps_roles_from_the_launcher(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--server_num", "2", "--worker_num", "2", script("role_check.py")], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    servers = [read_json(out / ("role_server_%d.json" % i)) for i in range(2)]
    workers = [read_json(out / ("role_worker_%d.json" % i)) for i in range(2)]
    pservers = servers[0]["pservers"]
    assert len(pservers) == 2
    for i, s in enumerate(servers):
        assert s["is_server"] and not s["is_worker"] and s["index"] == i and s["worker_num"] == 2
        assert s["pservers"] == pservers
    for i, w in enumerate(workers):
        assert w["is_worker"] and not w["is_server"] and w["index"] == i and w["worker_num"] == 2
        assert w["is_first_worker"] == (i == 0)


def test_collective_roles_from_the_launcher(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc_per_node", "2", script("role_check.py"), "--collective"], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    got = [read_json(out / ("role_worker_%d.json" % i)) for i in range(2)]
    assert got[0]["trainers"] == got[1]["trainers"] and len(set(got[0]["trainers"])) == 2
    for i, g in enumerate(got):
        assert g["is_worker"] and g["index"] == i and g["worker_num"] == 2 and g["is_first_worker"] == (i == 0)
