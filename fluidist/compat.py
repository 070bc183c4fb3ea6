"""Names of Paddle fluid 1.x that fluidist does not implement.

A fluid 1.x name is never silently missing: it exists, and using it raises ``NotImplementedError``
naming it and what to use instead. Each such object carries ``__fluidist_refused__ = True`` so that
tools (the migration page's compatibility table, the name inventory test) can count refusals.

    layers.warpctc = refused("fluid.layers.warpctc", "use layers.linear_chain_crf or ...")
    DetectionMAP = refused_class("fluid.metrics.DetectionMAP", "compute mAP with numpy on fetched boxes")
"""


def _message(name, instead):
    return "%s is not implemented in fluidist%s" % (name, (": " + instead) if instead else "")


def refused(name, instead=""):
    """A function standing for the fluid 1.x function ``name``: calling it raises NotImplementedError."""
    msg = _message(name, instead)

    def refused_function(*args, **kwargs):
        raise NotImplementedError(msg)

    short = name.rpartition(".")[2]
    refused_function.__name__ = refused_function.__qualname__ = short
    refused_function.__doc__ = "Not implemented in fluidist. " + (instead or "")
    refused_function.__fluidist_refused__ = True
    return refused_function


def refused_class(name, instead=""):
    """A class standing for the fluid 1.x class ``name``: instantiating it raises NotImplementedError."""
    msg = _message(name, instead)

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(msg)

    short = name.rpartition(".")[2]
    return type(short, (), {"__new__": __new__, "__doc__": "Not implemented in fluidist. " + (instead or ""),
                            "__fluidist_refused__": True, "__module__": "fluidist"})


def is_refused(obj):
    return bool(getattr(obj, "__fluidist_refused__", False))
