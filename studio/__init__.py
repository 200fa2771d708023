"""Studio: the Django project and app that stores, runs and streams agents."""
