"""The Paddle release whose fluid API fluidist provides, as Paddle's ``paddle.version`` module
gives it (``full_version``, ``major``, ``minor``, ``patch``, ``rc``): ``fluid.require_version``
reads these at each call, so a script (or a test) that changes them changes what it checks."""

full_version = "1.8.5"
major, minor, patch = full_version.split(".")
rc = "0"
istaged = True
commit = "fluidist"
with_mkl = "OFF"


def show():
    """Print the version, as ``paddle.version.show()``."""
    print("full_version:", full_version)
    print("major:", major)
    print("minor:", minor)
    print("patch:", patch)
    print("rc:", rc)


def mkl():
    return with_mkl
