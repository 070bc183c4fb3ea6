"""``incubate.fleet.utils.fleet_barrier_util``: Paddle's barrier over HDFS files."""
from fluidist.compat import refused

check_all_trainers_ready = refused("fluid.incubate.fleet.utils.fleet_barrier_util.check_all_trainers_ready",
                                   "use fleet.barrier_worker() (the role maker's barrier)")
