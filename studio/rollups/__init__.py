"""Where the money went: each model call's cost attributed to what led to it
(``attribution``, when its run ends) and added up by run, session, agent, agent
version, tool, model, user or day (``queries``), for the costs API."""
