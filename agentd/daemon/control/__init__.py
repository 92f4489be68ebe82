"""The control socket: ``agentctl``'s requests to the daemon.

The wire format both sides import (``protocol``), the client ``agentctl``
uses (``client``); on the daemon's side the server (``server``: its socket,
its connections' caps in ``connections``), the requests' models
(``requests``), what each command does (``commands``) and the streaming ones
(``streams``). The client side imports neither pydantic nor the supervisor.
"""
