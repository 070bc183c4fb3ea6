"""Paddle's path ``python -m fluidist.distributed.launch_ps`` (as ``paddle.distributed.launch_ps``): an alias
of :mod:`fluidist.launch.paddle_ps`, which translates its command line onto the launcher's."""
from fluidist.launch.paddle_ps import launcher_argv, main, parse_args  # noqa: F401

__all__ = ["main", "parse_args", "launcher_argv"]

if __name__ == "__main__":
    main()
