"""What every process shares around model calls: each model config's rate limits
(``rate_limits``) and the response cache (``response_cache``), both in the database."""
