"""HTML pages for people: this machine (`/` of `hwinfo serve`) and the lab (`hwinfo board`).

`page.py` builds markup that escapes every text it is given, `assets.py` holds the one
stylesheet and script the pages load and the Content-Security-Policy that allows only them,
`machine.py` renders a snapshot. The board's page is the ledger's (ledger/board_page.py).
"""
