"""A raw ZeroMQ peer of a pserver for the tests: sends any frames, well-formed or not, and reads the reply."""
import zmq

from fluidist.distributed import security, wire


class RawPeer:
    """``secret``: the job secret to present (default: this process's; None: a plain socket)."""

    def __init__(self, endpoint, secret=""):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        self.endpoint = endpoint
        if secret is not None:
            security.secure_client(self.sock, secret or None)
        self.sock.connect("tcp://" + endpoint)

    def send(self, frames):
        self.sock.send_multipart(frames)

    def reply(self, timeout_s=5.0):
        """The decoded reply, or None when none came within ``timeout_s``."""
        if not self.sock.poll(int(timeout_s * 1000)):
            return None
        return wire.decode(self.sock.recv_multipart())

    def ask(self, frames, timeout_s=5.0):
        self.send(frames)
        return self.reply(timeout_s)

    def close(self):
        self.sock.close(0)
        self.ctx.term()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
