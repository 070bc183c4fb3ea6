import fluidist as fluid


def test_run_check_trains_on_one_and_two_places(capsys):
    fluid.install_check.run_check()
    out = capsys.readouterr().out
    assert "single CPU place" in out and "2 CPU places, data parallel" in out and "installed and working" in out
