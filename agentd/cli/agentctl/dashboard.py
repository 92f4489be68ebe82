"""``agentctl dashboard``: the link to the daemon's web dashboard, with its token.

The daemon says where it serves the dashboard (``ping``: ``agentd serve
--http HOST:PORT``); the token is read from ``run/http-token``, which only
the daemon's user can read. ``--open`` gives the browser a one-time login
link instead (good once, for a minute, for this uid): a browser's command
line is there for every user to read with ``ps``.
"""

from __future__ import annotations

import time

import click

from agentd.cli.agentctl.client import call, fail
from agentd.paths import Paths


@click.command()
@click.option("--open", "open_it", is_flag=True, help="Open it in the web browser too.")
def dashboard(open_it: bool) -> None:
    """Print the web dashboard's link (with its token); --open opens it (with a
    one-time login code, not the token: others can read a browser's command line).

    The daemon serves it when started with `agentd serve --http 127.0.0.1:PORT`
    (or AGENTD_HTTP=127.0.0.1:PORT). Opening the link once sets a cookie, so
    the pages after it need no token in their address.
    """
    from agentd.daemon.dashboard.access import TOKEN_FILE, login_code

    url = call("ping").get("dashboard")
    if not url:
        fail(
            "this agentd serves no dashboard: start it with agentd serve --http "
            "127.0.0.1:8765 (or set AGENTD_HTTP=127.0.0.1:8765 where it starts)"
        )
    path = Paths.resolve().run / TOKEN_FILE
    try:
        token = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read the dashboard's token in {path}: {exc}")
    link = f"{url}?token={token}"
    click.echo(link)
    if open_it:
        import webbrowser

        once = f"{url.rstrip('/')}/login?code={login_code(token, time.time())}"
        if not webbrowser.open(once):
            fail("no web browser to open it with: open the link above")
