"""What a job says on its terminal besides its log lines: a progress line now and then from a long
loop (:mod:`fluidist.console.progress`), and a ctrl-C that the process which started this one reports
instead of each child printing its traceback (:mod:`fluidist.console.interrupts`).

Both are leaves (they import nothing of fluidist but :mod:`fluidist.log_helper`), so the face installs
the interrupt hook without loading the framework. Their loggers keep the names a user configures,
``fluidist.progress`` and ``fluidist.interrupts``.
"""
