"""The launcher: starts the processes of a distributed job (``fluidist-launch``, ``python -m fluidist.launch``,
and Paddle's path ``python -m fluidist.distributed.launch``).

It sits above the in-process runtime (:mod:`fluidist.distributed`), which never imports it, and uses
only the runtime's job secret (:mod:`fluidist.distributed.security`) and endpoint helpers
(:mod:`fluidist.distributed.ports`). Its parts:

| module | what it holds |
|---|---|
| ``cli`` | ``main`` / ``run``: the mode decision (collective, parameter server, elastic), logging, Slurm defaults |
| ``args`` | the command line (every option also from ``FLUIDIST_LAUNCH_<OPTION>``) |
| ``collective``, ``master_rendezvous`` | collective jobs; the nodes' meeting of a static multi-node job |
| ``ps`` | parameter-server jobs |
| ``elastic``, ``etcd_client`` | elastic collective jobs over etcd |
| ``slurm`` | defaults inside a Slurm step |
| ``cluster`` | the cluster model (Paddle's ``Cluster`` / ``Pod`` / ``Trainer``), GPUs, node IPs, port checks |
| ``procs``, ``watchdog`` | the local process group (start, watch, stop, logs) and the watchdog that outlives a killed launcher |
| ``secret`` | the job secret handed to the children |
| ``launchers`` | Paddle's launcher classes (``ps_launcher``, ``launcher``, ``openKS_launcher``) |
"""

