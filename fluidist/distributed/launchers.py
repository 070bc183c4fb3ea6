"""The old path of Paddle's launcher classes (``python -m fluidist.distributed.launchers`` still runs):
an alias of :mod:`fluidist.launch.launchers`."""
from fluidist.launch.launchers import launcher, main, openKS_launcher, ps_launcher  # noqa: F401

__all__ = ["ps_launcher", "launcher", "openKS_launcher"]

if __name__ == "__main__":
    main()
