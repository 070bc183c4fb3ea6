"""Program rewrites: each takes a Program and changes it in place (and says so by bumping its version).

| module | what it does |
|---|---|
| ``backward`` | appends the gradient ops (``append_backward``, ``gradients``; Paddle's ``fluid.backward``) |
| ``backward_paths`` | which ops lie on the paths from the inputs to the loss |
| ``regularizer`` | adds weight decay to the gradients (Paddle's ``fluid.regularizer``) |
| ``clip`` | clips gradients by value or norm (Paddle's ``fluid.clip``) |
| ``gradient_merge`` | updates once every k micro-batches (``BuildStrategy`` / fleet's ``gradient_merge``) |
| ``recompute`` | recomputes the forward segments between checkpoints in the backward pass |
| ``sync_batch_norm`` | turns ``batch_norm`` into ``sync_batch_norm`` for data-parallel runs |
"""
