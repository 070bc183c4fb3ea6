"""Role makers: PaddleCloudRoleMaker's environment (every variable missing or malformed),
UserDefined role makers' argument checks, the base class."""
import pytest

from fluidist.role_maker import (EnvVarError, MockBarrier, PaddleCloudRoleMaker, Role, RoleMakerBase,
                                 UserDefinedCollectiveRoleMaker, UserDefinedRoleMaker)

SERVERS = "127.0.0.1:6170,127.0.0.1:6171"
PS_TRAINER = {"PADDLE_PSERVERS_IP_PORT_LIST": SERVERS, "PADDLE_TRAINERS_NUM": "2", "TRAINING_ROLE": "TRAINER",
              "PADDLE_TRAINER_ID": "1"}
PS_SERVER = {"PADDLE_PSERVERS_IP_PORT_LIST": SERVERS, "PADDLE_TRAINERS_NUM": "2", "TRAINING_ROLE": "PSERVER",
             "POD_IP": "127.0.0.1", "PADDLE_PORT": "6171"}
COLL = {"PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:6070,127.0.0.1:6071,127.0.0.1:6072", "PADDLE_TRAINER_ID": "2",
        "PADDLE_CURRENT_ENDPOINT": "127.0.0.1:6072", "PADDLE_TRAINERS_NUM": "3"}


def make(env, is_collective=False):
    rm = PaddleCloudRoleMaker(is_collective=is_collective)
    rm.generate_role(environ=dict(env))
    return rm


def check_error(env, name, is_collective=False):
    with pytest.raises(EnvVarError) as ei:
        make(env, is_collective)
    msg = str(ei.value)
    assert name in msg
    assert "python -m fluidist.distributed.launch" in msg
    shown = env.get(name)
    assert ("value: unset" in msg) if shown is None else (repr(shown) in msg)
    # Paddle-era handlers catch KeyError (missing) or ValueError (bad value): both work
    assert isinstance(ei.value, KeyError) and isinstance(ei.value, ValueError)
    assert ei.value.name == name
    return msg


# ---------------------------------------------------------------- parameter-server mode
def test_ps_trainer_and_server_roles():
    t = make(PS_TRAINER)
    assert t.is_worker() and not t.is_server() and not t.is_first_worker()
    assert t.worker_index() == 1 and t.worker_num() == 2
    assert t.get_pserver_endpoints() == SERVERS.split(",") and t.get_trainer_endpoints() == []
    s = make(PS_SERVER)
    assert s.is_server() and not s.is_worker() and s.server_index() == 1 and s.server_num() == 2
    assert s.get_local_endpoint() == "127.0.0.1:6171"
    first = make(dict(PS_TRAINER, PADDLE_TRAINER_ID="0"))
    assert first.is_first_worker()


def test_ps_server_by_pserver_id_and_trainer_endpoints():
    env = dict(PS_SERVER)
    del env["POD_IP"], env["PADDLE_PORT"]
    env["PADDLE_PSERVER_ID"] = "0"
    assert make(env).server_index() == 0
    env = dict(PS_TRAINER, PADDLE_TRAINER_ENDPOINTS="127.0.0.1:7000,127.0.0.1:7001")
    rm = make(env)
    assert rm.get_trainer_endpoints() == ["127.0.0.1:7000", "127.0.0.1:7001"]
    assert rm.get_local_endpoint() == "127.0.0.1:7001"


@pytest.mark.parametrize("name", ["PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINERS_NUM", "TRAINING_ROLE",
                                  "PADDLE_TRAINER_ID"])
def test_ps_trainer_missing(name):
    env = dict(PS_TRAINER)
    del env[name]
    check_error(env, name)


@pytest.mark.parametrize("name", ["POD_IP", "PADDLE_PORT"])
def test_ps_server_missing(name):
    env = dict(PS_SERVER)
    del env[name]
    check_error(env, name)


@pytest.mark.parametrize("name,value", [
    ("PADDLE_PSERVERS_IP_PORT_LIST", ""),
    ("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1"),
    ("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:6170,127.0.0.1:x"),
    ("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:6170,127.0.0.1:6170"),
    ("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:70000"),
    ("PADDLE_TRAINERS_NUM", "two"),
    ("PADDLE_TRAINERS_NUM", "0"),
    ("PADDLE_TRAINERS_NUM", ""),
    ("TRAINING_ROLE", "WORKER"),
    ("TRAINING_ROLE", ""),
    ("PADDLE_TRAINER_ID", "x"),
    ("PADDLE_TRAINER_ID", "-1"),
])
def test_ps_trainer_malformed(name, value):
    check_error(dict(PS_TRAINER, **{name: value}), name)


@pytest.mark.parametrize("name,value", [
    ("POD_IP", ""),
    ("PADDLE_PORT", "port"),
    ("PADDLE_PORT", "0"),
])
def test_ps_server_malformed(name, value):
    check_error(dict(PS_SERVER, **{name: value}), name)


@pytest.mark.parametrize("name,value", [("POD_IP", "10.0.0.9"), ("PADDLE_PORT", "6199")])
def test_ps_server_endpoint_not_listed(name, value):
    env = dict(PS_SERVER, **{name: value})
    with pytest.raises(EnvVarError) as ei:
        make(env)
    msg = str(ei.value)
    ep = "%s:%s" % (env["POD_IP"], env["PADDLE_PORT"])
    assert "POD_IP" in msg and "PADDLE_PORT" in msg and repr(ep) in msg and repr(value) in msg
    assert SERVERS.split(",")[0] in msg and "python -m fluidist.distributed.launch" in msg


# ---------------------------------------------------------------- collective mode
def test_collective_role_every_process_a_worker():
    rm = make(COLL, is_collective=True)
    assert rm.is_worker() and not rm.is_server() and not rm.is_first_worker()
    assert rm.worker_index() == 2 and rm.worker_num() == 3
    assert rm.get_trainer_endpoints() == COLL["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert rm.get_pserver_endpoints() == []
    first = make(dict(COLL, PADDLE_TRAINER_ID="0", PADDLE_CURRENT_ENDPOINT="127.0.0.1:6070"), True)
    assert first.is_first_worker() and first.is_worker()
    # one endpoint: the id may be left out
    single = make({"PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:6070"}, True)
    assert single.worker_index() == 0 and single.is_first_worker()


@pytest.mark.parametrize("name", ["PADDLE_TRAINER_ENDPOINTS"])
def test_collective_missing(name):
    env = dict(COLL)
    del env[name]
    check_error(env, name, True)


@pytest.mark.parametrize("name,value", [
    ("PADDLE_TRAINER_ENDPOINTS", ""),
    ("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6070,,127.0.0.1:6072"),
    ("PADDLE_TRAINER_ENDPOINTS", "localhost"),
    ("PADDLE_TRAINER_ID", "3"),
    ("PADDLE_TRAINER_ID", "two"),
    ("PADDLE_CURRENT_ENDPOINT", ""),
    ("PADDLE_TRAINING_ROLE", "PSERVER"),
])
def test_collective_malformed(name, value):
    check_error(dict(COLL, **{name: value}), name, True)


# ---------------------------------------------------------------- what Paddle 1.8 does not read, or reads alone
def test_ps_variables_paddle_does_not_read_are_passed_over():
    """A parameter-server job: Paddle 1.8 reads neither PADDLE_TRAINER_ENDPOINTS nor PADDLE_PSERVER_ID, and
    bounds no trainer id: a trainer past the count (whose sync gradients the transpiler refuses), a
    trainer list of another length or a malformed one, and a server id that disagrees with
    POD_IP:PADDLE_PORT (which wins) are taken, with a warning where a value is passed over."""
    assert make(dict(PS_TRAINER, PADDLE_TRAINER_ID="2")).worker_index() == 2
    for bad in ("127.0.0.1:1", "nonsense"):
        with pytest.warns(UserWarning, match="PADDLE_TRAINER_ENDPOINTS.*not read"):
            rm = make(dict(PS_TRAINER, PADDLE_TRAINER_ENDPOINTS=bad))
        assert rm.get_trainer_endpoints() == [] and rm.worker_index() == 1
    with pytest.warns(UserWarning, match="PADDLE_PSERVER_ID=0 names 127.0.0.1:6170, but POD_IP:PADDLE_PORT is "
                                         "127.0.0.1:6171"):
        rm = make(dict(PS_SERVER, PADDLE_PSERVER_ID="0"))
    assert rm.server_index() == 1 and rm.get_local_endpoint() == "127.0.0.1:6171"
    for bad in ("2", "one"):
        with pytest.warns(UserWarning, match="PADDLE_PSERVER_ID=%s is not an integer in \\[0, 1\\]" % bad):
            assert make(dict(PS_SERVER, PADDLE_PSERVER_ID=bad)).server_index() == 1
    alone = {k: v for k, v in PS_SERVER.items() if k not in ("POD_IP", "PADDLE_PORT")}
    for bad in ("2", "one"):           # read when it is all there is: then it must index the list
        check_error(dict(alone, PADDLE_PSERVER_ID=bad), "PADDLE_PSERVER_ID")


def test_collective_variables_paddle_does_not_read_are_passed_over():
    """A collective job: Paddle 1.8 takes PADDLE_TRAINER_ID as 0 when unset, reads neither
    PADDLE_TRAINERS_NUM nor TRAINING_ROLE, and gives PADDLE_CURRENT_ENDPOINT back as is."""
    for name, value in (("PADDLE_TRAINERS_NUM", "2"), ("PADDLE_TRAINERS_NUM", "x")):
        with pytest.warns(UserWarning, match="PADDLE_TRAINERS_NUM=%r, but PADDLE_TRAINER_ENDPOINTS lists 3" % value):
            assert make(dict(COLL, **{name: value}), True).worker_num() == 3
    assert make(dict(COLL, TRAINING_ROLE="PSERVER"), True).is_worker()
    with pytest.warns(UserWarning, match="PADDLE_CURRENT_ENDPOINT=127.0.0.1:6071 is not entry PADDLE_TRAINER_ID=2"):
        rm = make(dict(COLL, PADDLE_CURRENT_ENDPOINT="127.0.0.1:6071"), True)
    assert rm.worker_index() == 2 and rm.get_local_endpoint() == "127.0.0.1:6071"
    env = dict(COLL)
    del env["PADDLE_TRAINER_ID"], env["PADDLE_CURRENT_ENDPOINT"]
    with pytest.warns(UserWarning, match="PADDLE_TRAINER_ID is unset: this process is trainer 0 of 3"):
        assert make(env, True).worker_index() == 0


def test_reads_os_environ_lazily(monkeypatch):
    for k, v in PS_TRAINER.items():
        monkeypatch.setenv(k, v)
    rm = PaddleCloudRoleMaker()
    assert rm.worker_index() == 1          # getters generate the role on first use
    monkeypatch.setenv("PADDLE_TRAINER_ID", "0")
    assert rm.worker_index() == 1          # read once
    monkeypatch.delenv("PADDLE_TRAINERS_NUM")
    with pytest.raises(KeyError, match="PADDLE_TRAINERS_NUM"):
        PaddleCloudRoleMaker().is_worker()


# ---------------------------------------------------------------- user-defined role makers
EPS = ["127.0.0.1:1", "127.0.0.1:2"]


def test_user_defined_role_maker():
    w = UserDefinedRoleMaker(current_id=0, role=Role.WORKER, worker_num=3, server_endpoints=EPS)
    assert w.is_worker() and w.is_first_worker() and not w.is_server()
    assert w.worker_num() == 3 and w.get_pserver_endpoints() == EPS and w.get_trainer_endpoints() == []
    s = UserDefinedRoleMaker(current_id=1, role=Role.SERVER, worker_num=3, server_endpoints=EPS)
    assert s.is_server() and s.server_index() == 1 and not s.is_first_worker()
    assert "role: 2, current_id: 1" in s.to_string()


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(server_endpoints=None, worker_num=1), TypeError, "server_endpoints: expected a list of"),
    (dict(server_endpoints="127.0.0.1:1", worker_num=1), TypeError, "server_endpoints: expected a list of"),
    (dict(server_endpoints=[], worker_num=1), ValueError, "server_endpoints: the list is empty"),
    (dict(server_endpoints=[EPS[0], EPS[0]], worker_num=1), ValueError, "listed twice"),
    (dict(server_endpoints=[EPS[0], 3], worker_num=1), TypeError, "server_endpoints: each endpoint is an"),
    (dict(server_endpoints=EPS, worker_num=1, role=3), TypeError, "role: expected Role.WORKER or Role.SERVER"),
    (dict(server_endpoints=EPS, worker_num=1, current_id="0"), TypeError, "current_id: expected an int"),
    (dict(server_endpoints=EPS, worker_num=1, current_id=-1), ValueError, "expected 0 or more"),
    (dict(server_endpoints=EPS, worker_num=1, current_id=2, role=Role.SERVER), ValueError,
     "server 2 does not exist"),
    (dict(server_endpoints=EPS, worker_num=1.0), TypeError, "worker_num: expected an int"),
    (dict(server_endpoints=EPS, worker_num=0), ValueError, "expected at least 1 worker"),
])
def test_user_defined_role_maker_checks(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        UserDefinedRoleMaker(**kwargs)


def test_user_defined_role_maker_takes_what_paddle_takes():
    """Paddle 1.8 bounds no worker index (a sync trainer past the count is refused when its program is
    made) and checks ints with isinstance(x, int), so True is worker 1."""
    w = UserDefinedRoleMaker(current_id=2, role=Role.WORKER, worker_num=2, server_endpoints=EPS)
    assert w.worker_index() == 2 and w.is_worker()
    assert UserDefinedRoleMaker(current_id=True, role=True, worker_num=2, server_endpoints=EPS).worker_index() == 1


def test_user_defined_collective_role_maker():
    rm = UserDefinedCollectiveRoleMaker(current_id=1, worker_endpoints=EPS)
    assert rm.is_worker() and not rm.is_server() and not rm.is_first_worker()
    assert rm.worker_index() == 1 and rm.worker_num() == 2 and rm.get_trainer_endpoints() == EPS
    assert UserDefinedCollectiveRoleMaker(0, EPS).is_first_worker()


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(worker_endpoints=None), TypeError, "worker_endpoints: expected a list of"),
    (dict(worker_endpoints=[]), ValueError, "the list is empty"),
    (dict(worker_endpoints=[EPS[0], EPS[0]]), ValueError, "listed twice"),
    (dict(worker_endpoints=[1]), TypeError, "worker_endpoints: each endpoint is an"),
    (dict(worker_endpoints=EPS, current_id=None), TypeError, "current_id: expected an int"),
    (dict(worker_endpoints=EPS, current_id=-2), ValueError, "expected 0 or more"),
    (dict(worker_endpoints=EPS, current_id=2), ValueError, "worker 2 does not exist"),
])
def test_user_defined_collective_role_maker_checks(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        UserDefinedCollectiveRoleMaker(**kwargs)


def test_base_class_and_mock_barrier():
    base = RoleMakerBase()
    for name in ("is_worker", "is_server", "is_first_worker", "worker_num", "worker_index", "server_index"):
        with pytest.raises(NotImplementedError, match="Please implement this method in child class"):
            getattr(base, name)()
    assert base.get_trainer_endpoints() == [] and base.get_pserver_endpoints() == []
    assert base.to_string() == "role: None, current_id: -1, worker_endpoints: [], server_endpoints: []"
    with pytest.warns(UserWarning, match="all_gather is not supported"):
        assert base.all_gather(1) is None
    with pytest.warns(UserWarning, match="barrier_worker is not supported"):
        base.barrier_worker()
    m = MockBarrier()
    m.barrier()
    m.barrier_all()
    assert m.all_reduce(3) == 3 and m.all_gather(3) == [3]
    assert Role.WORKER == 1 and Role.SERVER == 2
