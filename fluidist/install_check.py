"""``fluid.install_check``: the module path of Paddle 1.x's installation check (``run_check`` trains
a tiny model locally and on two CPU places)."""
