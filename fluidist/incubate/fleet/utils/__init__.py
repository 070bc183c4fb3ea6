"""``incubate.fleet.utils``: Paddle's Fleet utilities (HDFS client, program inspection helpers)."""
