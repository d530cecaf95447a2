"""Fixtures shared by the verifier's own tests."""
import pytest


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a real connection fails the test (the mock transport needs none)."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to touch the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
