"""fluidist's one ``host:port`` parser (``fluidist.distributed.ports``) and the places that call it:
every one accepts the same forms and names the bad endpoint and what it was given for."""
import pytest

from fluidist.distributed import ports, rpc
from fluidist.distributed.ports import EndpointError, format_endpoint, is_endpoint, split_endpoint


@pytest.mark.parametrize("text,parsed", [
    ("127.0.0.1:6170", ("127.0.0.1", 6170)),
    (" host-1.example:1 ", ("host-1.example", 1)),
    ("[::1]:65535", ("::1", 65535)),
    ("[fe80::2]:7000", ("fe80::2", 7000)),
])
def test_split_endpoint_accepts_host_port_and_bracketed_ipv6(text, parsed):
    assert split_endpoint(text) == parsed
    assert split_endpoint(format_endpoint(*parsed)) == parsed
    assert is_endpoint(text)


@pytest.mark.parametrize("bad", ["localhost", "a:", ":80", "a:0", "a:65536", "a:x1", "[::1]", "", None, 6170])
def test_split_endpoint_names_the_bad_endpoint_and_its_use(bad):
    with pytest.raises(EndpointError, match=r"--servers: %s is not host:port" % repr(bad).replace("[", r"\[")):
        split_endpoint(bad, "--servers")
    assert not is_endpoint(bad)


def test_ipv6_without_brackets_is_refused_with_the_fix():
    with pytest.raises(EndpointError, match=r"write an IPv6 address in brackets, e.g. \[::1\]:7000"):
        split_endpoint("::1:7000")


def test_port_zero_only_where_a_server_binds_any_port():
    assert split_endpoint("127.0.0.1:0", allow_port_zero=True) == ("127.0.0.1", 0)
    assert rpc.split_endpoint("*:0") == ("*", 0)
    with pytest.raises(ValueError, match="'127.0.0.1:99999' is not host:port"):
        rpc.split_endpoint("127.0.0.1:99999")


def test_the_callers_report_the_endpoint_through_the_one_parser():
    from fluidist.launch.cluster import parse_endpoints
    from fluidist.launch.common import LaunchError
    from fluidist.role_maker.env import is_endpoint as role_maker_is_endpoint
    from fluidist.transpiler.details import parse_endpoints as transpiler_endpoints

    assert transpiler_endpoints("10.0.0.1:1,10.0.0.2:2", "pservers") == ["10.0.0.1:1", "10.0.0.2:2"]
    with pytest.raises(ValueError, match="pservers: '10.0.0.1' is not host:port"):
        transpiler_endpoints("10.0.0.1", "pservers")
    with pytest.raises(LaunchError, match="--workers: 'w:70000' is not host:port"):
        parse_endpoints("w:70000", "--workers")
    assert role_maker_is_endpoint("[::1]:80") and not role_maker_is_endpoint("::1:80")
    assert ports.strip_brackets("[::1]") == "::1"


@pytest.mark.parametrize("listed", ["127.0.0.1:6170;127.0.0.1:6171", "10.0.0.1:6170,10.0.0.2:6170"])
def test_a_list_given_for_one_endpoint_is_named_as_a_list_not_as_ipv6(listed):
    with pytest.raises(EndpointError, match=r"is not one host:port: a list of endpoints is written with commas") as e:
        split_endpoint(listed, "pservers")
    assert "IPv6" not in str(e.value)
