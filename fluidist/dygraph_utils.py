"""``fluid.dygraph_utils``: Paddle's helpers for dygraph layers; fluidist has no dygraph mode, and
the module holds nothing a static program uses."""
