"""The web dashboard of ``agentd serve --http HOST:PORT``.

Who may use it (``access``: the address it binds, the token, CSRF), the
session timeline drawn as SVG (``timeline``, pure), the pages and their
handlers (``pages``) and the HTTP server on the daemon's own loop
(``server``, aiohttp). Templates and static files ship in the package.

Nothing here is imported unless the daemon is asked to serve HTTP.
"""
