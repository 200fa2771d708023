"""Studio as a Model Context Protocol client: what it accepts of a server (``checks``),
and connecting to servers and the tools a run gets from them, redacted (``client``)."""
