"""``agentctl dashboard``: the link to the daemon's web dashboard, with its token.

The daemon says where it serves the dashboard (``ping``: ``agentd serve
--http HOST:PORT``); the token is read from ``run/http-token``, which only
the daemon's user can read.
"""

from __future__ import annotations

import click

from agentd.cli.agentctl.client import call, fail
from agentd.paths import Paths


@click.command()
@click.option("--open", "open_it", is_flag=True, help="Open it in the web browser too.")
def dashboard(open_it: bool) -> None:
    """Print the web dashboard's link (with its token); --open opens it.

    The daemon serves it when started with `agentd serve --http 127.0.0.1:PORT`
    (or AGENTD_HTTP=127.0.0.1:PORT). Opening the link once sets a cookie, so
    the pages after it need no token in their address.
    """
    from agentd.daemon.dashboard.access import TOKEN_FILE

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

        if not webbrowser.open(link):
            fail("no web browser to open it with: open the link above")
